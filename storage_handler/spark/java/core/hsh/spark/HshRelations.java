package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.HiveTableRelation;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.immutable.Map$;

/** Spark's native Parquet relation over a registered table's {@link HshFileIndex}: one place to build it. */
public final class HshRelations {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private HshRelations() {}

  static HadoopFsRelation relation(SparkSession session, HshTable table, HshFileIndex index) {
    scala.collection.immutable.Map<String, String> options = Map$.MODULE$.empty();
    return new HadoopFsRelation(index, table.partitionSchema, table.dataSchema, Option.empty(),
        new ParquetFileFormat(), options, session);
  }

  /**
   * The pruning filters (the prune service's JSON list) for {@code table} filtered by {@code where}, read the way
   * {@code spark.table(table).where(where)} reads it: Spark's parser, analyzer and optimizer in this session (its
   * quoting rules, time zone, implicit casts), then {@link Prunable} and {@link FilterJson} as for a query. Used by
   * {@code read_table}, which applies the same text with {@code DataFrame.where}.
   */
  public static String filtersFor(SparkSession session, String table, String where) {
    Dataset<Row> df = session.table(table);
    StructType partitions = partitionSchema(df.queryExecution().analyzed(), table);
    return FilterJson.encodeAll(session, Prunable.of(session, partitions, conjuncts(df, where))).toString();
  }

  /** The conjuncts of {@code where} over {@code df}'s table, after Spark's optimizer. */
  private static List<Expression> conjuncts(Dataset<Row> df, String where) {
    List<Expression> out = new ArrayList<>();
    // optimized only to read the conditions: no scan follows, so the file index must not prefetch one
    LogicalPlan optimized = HshFileIndex.withoutPrefetch(() -> df.where(where).queryExecution().optimizedPlan());
    collectConditions(optimized, df.queryExecution().analyzed().outputSet(), out);
    return out;
  }

  /** The partition columns of the table {@code plan} reads, from the relation Spark resolved it to. */
  private static StructType partitionSchema(LogicalPlan plan, String table) {
    for (LogicalPlan leaf : Scala.list(plan.collectLeaves())) {
      if (leaf instanceof LogicalRelation && ((LogicalRelation) leaf).relation() instanceof HadoopFsRelation) {
        return ((HadoopFsRelation) ((LogicalRelation) leaf).relation()).partitionSchema();
      }
      if (leaf instanceof HiveTableRelation) return ((HiveTableRelation) leaf).tableMeta().partitionSchema();
    }
    throw new IllegalStateException("hsh: " + table + " is not a Hive Parquet table this session can read");
  }

  /**
   * The conjuncts of every filter in {@code plan} that refer to {@code table}'s own columns only. A subquery in
   * {@code where} becomes a join whose other side has filters of its own, on other tables or on another instance of
   * this one (other expression ids): those say nothing about which of this table's files to read.
   */
  private static void collectConditions(LogicalPlan plan, AttributeSet table, List<Expression> out) {
    if (plan instanceof Filter) {
      Filter filter = (Filter) plan;
      for (Expression e : Scala.list(filter.splitConjunctivePredicates(filter.condition()))) {
        if (e.references().subsetOf(table)) out.add(e);
      }
    }
    for (LogicalPlan child : Scala.list(plan.children())) collectConditions(child, table, out);
  }

  /**
   * A relation over files the handler already chose (for {@code read_table}): {@code tableJson} is the contract's
   * {@code table} message, {@code filesJson} the {@code files} list of a prune-service answer. Spark neither lists
   * nor stats them again.
   */
  public static HadoopFsRelation keptFiles(SparkSession session, String tableJson, String filesJson)
      throws IOException {
    HshTable table = HshTable.fromJson(tableJson);
    return relation(session, table, HshFileIndex.fixed(session, table, MAPPER.readTree(filesJson)));
  }

  /** The contract's scan request for {@code table} filtered by {@code where} (for the contract test). */
  public static String scanRequest(SparkSession session, String tableJson, String table, String where)
      throws IOException {
    return ScanRequest.of(session, HshTable.fromJson(tableJson), conjuncts(session.table(table), where), false)
        .toString();
  }

  /** The {@link Path} the file index makes of a kept file's URI, as text (for the contract test). */
  public static String pathOf(String uri) {
    Path path = FileSystems.path(uri);
    return path.toString() + " " + path.toUri().toString();
  }

  /** Read an answer's kept files as the file index does (for the contract test): {@code [uri, bytes, mtime]}s. */
  public static String readAnswer(String tableJson, String answerJson) throws IOException {
    HshTable table = HshTable.fromJson(tableJson);
    JsonNode answer = MAPPER.readTree(answerJson);
    JsonNode metrics = Contract.answer(answer, "metrics", table.name);
    com.fasterxml.jackson.databind.node.ArrayNode out = MAPPER.createArrayNode();
    for (JsonNode f : Contract.answer(answer, "files", table.name)) {
      out.addArray().add(Contract.fileField(f, "uri", table.name).asText())
          .add(Contract.fileField(f, "bytes", table.name).asLong())
          .add(Contract.fileField(f, "mtime_ms", table.name).asLong());
    }
    Contract.metric(metrics, "bytes_kept", table.name);
    return out.toString();
  }
}
