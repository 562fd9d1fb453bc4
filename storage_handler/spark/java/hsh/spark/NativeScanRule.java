package hsh.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
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
  private static final long CATALOG_TTL_NANOS = 10_000_000_000L;
  private final SparkSession session;
  private final Map<String, Map.Entry<Long, CatalogTable>> catalog = new ConcurrentHashMap<>(); // this session's

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
    StructField[] fields = ((DataSourceV2Relation) p).schema().fields();
    if (fields.length == 0 || !fields[0].metadata().contains("hsh.table")) return null;
    return fields[0].metadata();
  }

  private LogicalPlan replace(DataSourceV2Relation relation) {
    Metadata md = tableMetadata(relation);
    StructType schema = relation.schema(); // from its output attributes, field metadata included
    List<AttributeReference> output = new ArrayList<>();
    for (StructField f : HshRelations.ordered(schema)) output.add(attribute(relation, f.name()));
    HshFileIndex index = HshFileIndex.pruning(session, md.getString("hsh.table"), md.getString("hsh.location"),
        schema, HshRelations.partitionSchema(schema));
    return new LogicalRelation(HshRelations.relation(session, schema, index),
        CollectionConverters.asScala(output).toSeq(), catalogTable(md.getString("hsh.table")), false, Option.empty());
  }

  /**
   * The catalog entry, as Spark's own relations carry it ({@code spark.catalog.refreshTable} needs it). Kept for
   * {@link #CATALOG_TTL_NANOS}: Spark has just read the table to resolve the query, and a second metastore call
   * per query costs about 10 ms; the entry only names the table here (its statistics, if any, only size joins).
   */
  private Option<CatalogTable> catalogTable(String name) {
    long now = System.nanoTime();
    Map.Entry<Long, CatalogTable> cached = catalog.get(name);
    if (cached != null && now - cached.getKey() < CATALOG_TTL_NANOS) return Option.apply(cached.getValue());
    int dot = name.indexOf('.');
    TableIdentifier id = new TableIdentifier(name.substring(dot + 1), Option.apply(name.substring(0, dot)));
    try {
      CatalogTable table = session.sessionState().catalog().getTableMetadata(id);
      catalog.put(name, Map.entry(now, table));
      return Option.apply(table);
    } catch (Exception e) { // the relation was just resolved from it; without the entry only refreshTable fails
      return Option.empty();
    }
  }

  private static AttributeReference attribute(DataSourceV2Relation relation, String name) {
    for (AttributeReference a : CollectionConverters.asJava(relation.output())) {
      if (a.name().equalsIgnoreCase(name)) return a;
    }
    throw new IllegalStateException("hsh: column " + name + " of " + relation.name() + " is not in its output");
  }
}
