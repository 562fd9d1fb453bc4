package hsh.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.immutable.Map$;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;

/**
 * Replaces a registered table's Python data-source relation with Spark's native Parquet relation over an
 * {@link HshFileIndex}: Spark's own vectorized reader, column pruning and row-group filtering read the files the
 * handler keeps. Runs after resolution, so nothing of the Python data source runs for the query.
 *
 * <p>A table is recognized by the {@code hsh.table} metadata on its first schema field, which registration writes
 * (see {@code storage_handler/spark/table_props.py}). Set {@code spark.hsh.nativeScan=false} to read through the
 * Python data source instead.
 */
final class NativeScanRule extends Rule<LogicalPlan> {
  static final String ENABLED = "spark.hsh.nativeScan";
  private final SparkSession session;

  NativeScanRule(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!"true".equalsIgnoreCase(session.conf().get(ENABLED, "true").trim())) return plan;
    return plan.resolveOperatorsUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
      @Override
      public boolean isDefinedAt(LogicalPlan p) {
        return tableMetadata(p) != null;
      }

      @Override
      public LogicalPlan apply(LogicalPlan p) {
        return isDefinedAt(p) ? replace((DataSourceV2Relation) p) : p;
      }
    });
  }

  private static Metadata tableMetadata(LogicalPlan p) {
    if (!(p instanceof DataSourceV2Relation)) return null;
    StructField[] fields = ((DataSourceV2Relation) p).table().schema().fields();
    if (fields.length == 0 || !fields[0].metadata().contains("hsh.table")) return null;
    return fields[0].metadata();
  }

  private LogicalPlan replace(DataSourceV2Relation relation) {
    Metadata md = tableMetadata(relation);
    StructType schema = relation.table().schema();
    List<StructField> data = new ArrayList<>();
    List<StructField> partitions = new ArrayList<>();
    for (StructField f : schema.fields()) {
      boolean partition = f.metadata().contains("hsh.partition") && f.metadata().getBoolean("hsh.partition");
      (partition ? partitions : data).add(f);
    }
    List<AttributeReference> output = new ArrayList<>();
    for (StructField f : concat(data, partitions)) output.add(attribute(relation, f.name()));
    StructType dataSchema = new StructType(data.toArray(new StructField[0]));
    StructType partitionSchema = new StructType(partitions.toArray(new StructField[0]));
    HshFileIndex index = new HshFileIndex(session, md.getString("hsh.table"), md.getString("hsh.location"), schema,
        partitionSchema, List.of());
    scala.collection.immutable.Map<String, String> options = Map$.MODULE$.empty();
    HadoopFsRelation fs = new HadoopFsRelation(index, partitionSchema, dataSchema, Option.empty(),
        new ParquetFileFormat(), options, session);
    return new LogicalRelation(fs, CollectionConverters.asScala(output).toSeq(), Option.empty(), false,
        Option.empty());
  }

  private static List<StructField> concat(List<StructField> a, List<StructField> b) {
    List<StructField> out = new ArrayList<>(a);
    out.addAll(b);
    return out;
  }

  private static AttributeReference attribute(DataSourceV2Relation relation, String name) {
    for (AttributeReference a : CollectionConverters.asJava(relation.output())) {
      if (a.name().equalsIgnoreCase(name)) return a;
    }
    throw new IllegalStateException("hsh: column " + name + " of " + relation.name() + " is not in its output");
  }
}
