package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.immutable.Map$;
import scala.jdk.javaapi.CollectionConverters;

/** Spark's native Parquet relation over a registered table's {@link HshFileIndex}: one place to build it. */
public final class HshRelations {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private HshRelations() {}

  static boolean isPartition(StructField f) {
    return f.metadata().contains("hsh.partition") && f.metadata().getBoolean("hsh.partition");
  }

  /** Data columns then partition columns, in the order {@link HadoopFsRelation#schema()} has them. */
  static List<StructField> ordered(StructType schema) {
    List<StructField> out = new ArrayList<>(List.of(dataSchema(schema).fields()));
    out.addAll(List.of(partitionSchema(schema).fields()));
    return out;
  }

  static HadoopFsRelation relation(SparkSession session, StructType schema, HshFileIndex index) {
    scala.collection.immutable.Map<String, String> options = Map$.MODULE$.empty();
    return new HadoopFsRelation(index, index.partitionSchema(), dataSchema(schema), Option.empty(),
        new ParquetFileFormat(), options, session);
  }

  static StructType partitionSchema(StructType schema) {
    return fields(schema, true);
  }

  private static StructType dataSchema(StructType schema) {
    return fields(schema, false);
  }

  private static StructType fields(StructType schema, boolean partitions) {
    List<StructField> out = new ArrayList<>();
    for (StructField f : schema.fields()) if (isPartition(f) == partitions) out.add(f);
    return new StructType(out.toArray(new StructField[0]));
  }

  /**
   * The pruning filters (the prune service's JSON list) for {@code table} filtered by {@code where}, read the way
   * {@code spark.table(table).where(where)} reads it: Spark's parser, analyzer and optimizer in this session (its
   * quoting rules, time zone, implicit casts), then {@link Prunable} and {@link FilterJson} as for a query. Used by
   * {@code read_table}, which applies the same text with {@code DataFrame.where}.
   */
  public static String filtersFor(SparkSession session, String table, String where) {
    Dataset<Row> df = session.table(table);
    StructType partitions = partitionSchema(df.schema());
    List<Expression> conjuncts = new ArrayList<>();
    collectConditions(df.where(where).queryExecution().optimizedPlan(), df.queryExecution().analyzed().outputSet(),
        conjuncts);
    return FilterJson.encodeAll(Prunable.of(session, partitions, conjuncts)).toString();
  }

  /**
   * The conjuncts of every filter in {@code plan} that refer to {@code table}'s own columns only. A subquery in
   * {@code where} becomes a join whose other side has filters of its own, on other tables or on another instance of
   * this one (other expression ids): those say nothing about which of this table's files to read.
   */
  private static void collectConditions(LogicalPlan plan, AttributeSet table, List<Expression> out) {
    if (plan instanceof Filter) {
      Filter filter = (Filter) plan;
      for (Expression e : CollectionConverters.asJava(filter.splitConjunctivePredicates(filter.condition()))) {
        if (e.references().subsetOf(table)) out.add(e);
      }
    }
    for (LogicalPlan child : CollectionConverters.asJava(plan.children())) collectConditions(child, table, out);
  }

  /**
   * A relation over files the handler already chose (for {@code read_table}): {@code filesJson} is the
   * {@code files} list of a prune-service answer. Spark neither lists nor stats them again.
   */
  public static HadoopFsRelation keptFiles(SparkSession session, String schemaJson, String filesJson)
      throws IOException {
    StructType schema = (StructType) DataType.fromJson(schemaJson);
    JsonNode files = MAPPER.readTree(filesJson);
    String table = schema.fields()[0].metadata().getString("hsh.table");
    String location = schema.fields()[0].metadata().getString("hsh.location");
    HshFileIndex index = HshFileIndex.fixed(session, table, location, schema, partitionSchema(schema), files);
    return relation(session, schema, index);
  }
}
