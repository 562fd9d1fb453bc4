package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression$;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Max;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import scala.Option;
import scala.runtime.AbstractPartialFunction;

/**
 * Answers {@code count(*)}, {@code count(col)}, {@code min(col)} and {@code max(col)} (any mix, with or without a
 * filter, grouped by partition columns or not) from the index for the files whose every row matches, and reads
 * only the rest.
 *
 * <pre>
 *   Aggregate(g, aggs)                       Aggregate(g, merge(aggs))          -- sum of counts, min of mins ...
 *     [Project]                  ==>           Union
 *       [Filter(cond)]                           LocalRelation(g, partial aggs)   -- the index's numbers, per partition
 *         LogicalRelation(HshFileIndex)          Project(g, each row's share)     -- 1 or 0 to count, the value
 *                                                  [Project] [Filter(cond)]          for min / max
 *                                                    LogicalRelation(HshFileIndex over the other kept files)
 * </pre>
 *
 * <p>One aggregation over both, not an aggregation of the files read merged in a second one: Spark plans it as
 * the query without the handler is planned (a partial aggregation per partition, one exchange, the final one),
 * the index's rows being one more small partition.
 *
 * <p>One prune request decides it: the handler's strict evaluation says which kept files certainly match whole,
 * and which of those the index holds the numbers for ({@code storage_handler/spark/aggregates.py}: exact bounds
 * only for integers, decimals, dates and booleans; a file changed since it was indexed is read). The answer's
 * file list also serves the listing, so the query asks once. Anything else -- another aggregate function,
 * {@code DISTINCT}, a {@code FILTER} clause, an expression over a column, grouping by a data column, a filter
 * the handler cannot take whole -- plans exactly as before, as does {@code spark.hsh.aggregates=false}.
 * {@code EXPLAIN} shows the rewrite: a {@code LocalTableScan} of columns named like {@code
 * count_all_of_150_files_from_index} under a union with the aggregation of the files read ({@code
 * count_all_of_2_files_read}).
 */
final class AggregateRule extends Rule<LogicalPlan> {
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
  private final SparkSession session;

  AggregateRule(SparkSession session) {
    this.session = session;
  }

  /** {@code spark.hsh.aggregates.minAnsweredBytes} (default 8 MiB): see where it is used. */
  static long minAnsweredBytes(SparkSession session) {
    return Contract.bytesSetting(session, Contract.SETTING_AGGREGATES_MIN_BYTES, 8L << 20);
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!Contract.switchSetting(session, Contract.SETTING_AGGREGATES, true)) return plan;
    return plan.transformUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
      @Override
      public boolean isDefinedAt(LogicalPlan p) {
        return p instanceof Aggregate;
      }

      @Override
      public LogicalPlan apply(LogicalPlan p) {
        return p instanceof Aggregate ? rewrite((Aggregate) p) : p;
      }
    });
  }

  private LogicalPlan rewrite(Aggregate aggregate) {
    AggregateQuery p = AggregateQuery.of(session, aggregate);
    if (p == null) return aggregate;
    Project project = p.project;
    Filter filter = p.filter;
    LogicalRelation scan = p.scan;
    HadoopFsRelation fs = p.fs;
    HshFileIndex index = p.index;
    List<AttributeReference> groups = p.groups;
    List<AggregateSpec> specs = p.specs;
    List<Expression> conjuncts = p.conjuncts;
    PartitionConjuncts split = p.split;
    String decision = p.decision;
    long threshold = p.minAnsweredBytes;
    long driverBytes = p.driverReadBytes;
    long driverRows = p.driverReadRows;
    if (AggregateDecisions.recentlyDeclined(decision)) {
      Timings.record("aggregate_declined_recently", index.table().name, System.nanoTime());
      return aggregate; // as with the feature off: the scan's prune request is prefetched (QueryFilterRule)
    }
    HshFileIndex asked = index.withAggregateAnswer(conjuncts, p.scanRequest);
    JsonNode answer = asked.heldAnswer();
    LogicalRelation askedScan = Plans.withRelation(scan, copy(fs, asked));
    JsonNode files = Contract.answer(answer, "files", index.table().name);
    JsonNode matched;
    boolean[] holds; // whether the conjuncts evaluated here hold for each file
    try {
      holds = split.holdsForEach(files);
      matched = split.keep(Contract.answer(answer, "matched", index.table().name), holds);
    } catch (Exception e) { // a value the query's own cast rejects, an internal error: Spark's plan decides
      Timings.record("aggregate_partition_conjuncts_failed", index.table().name, System.nanoTime());
      return rebuilt(aggregate, project, filter, askedScan);
    }
    JsonNode positions = Contract.matched(matched, "positions", index.table().name);
    if (positions.size() == 0) { // nothing to answer
      AggregateDecisions.declined(decision);
      return rebuilt(aggregate, project, filter, askedScan);
    }
    ArrayNode rest = JSON.arrayNode();
    Set<Integer> answered = new HashSet<>();
    for (JsonNode pos : positions) answered.add(pos.asInt());
    JsonNode fileRows = Contract.matched(matched, "file_rows", index.table().name);
    long answeredBytes = 0;
    long restBytes = 0;
    long restRows = 0; // -1 once a file left to read has a row count the index does not know (or a bad one)
    for (int i = 0; i < files.size(); i++) {
      long bytes = Contract.fileField(files.get(i), "bytes", index.table().name).asLong();
      if (!answered.contains(i)) {
        if (!holds[i]) continue; // its partition holds no matching row: nothing to read
        rest.add(files.get(i));
        restBytes += bytes;
        restRows = plus(restRows, fileRows.get(i));
      } else {
        answeredBytes += bytes;
      }
    }
    // With files left to read, the rewrite asks the index first and reads the rest beside the index's rows. The
    // threshold was measured when that took a second aggregation job (30-40 ms here, what reading ~5 MB of
    // Parquet costs); it stays until measured again for the single aggregation (benchmarks/results/aggregates.md).
    // When the rest is small enough to read in the driver (IndexAnswer), the rewrite runs no job at all: always
    // worth it.
    boolean inDriver = driverBytes > 0 && restBytes <= driverBytes && restRows >= 0 && restRows <= driverRows;
    boolean interpreted = restRows >= 0 && restRows <= IndexAnswer.driverInterpretedRows(session);
    if (rest.size() > 0 && answeredBytes < threshold && !inDriver) {
      AggregateDecisions.declined(decision); // the next run of this query need not ask first (AggregateDecisions)
      return rebuilt(aggregate, project, filter, askedScan);
    }
    String note = rest.size() + " of " + files.size() + " kept files read, " + answered.size()
        + " answered from the index";
    long writes = asked.heldAnswerWrites();
    LogicalRelation restScan = Plans.withRelation(scan, copy(fs,
        HshFileIndex.answeredRest(session, index.table(), rest, note, writes, p.scanRequest, files)));
    Timings.record("aggregate_from_index", index.table().name, System.nanoTime(), "answered", answered.size(),
        "read", rest.size());
    return merged(aggregate, groups, specs, matched, below(project, filter, restScan),
        new IndexAnswer.Marker(index.table().name, answered.size(), rest.size(), restBytes, restRows, interpreted,
            writes, aggregate),
        inDriver);
  }

  /** {@code total} plus a file's row count from the answer; -1 (unknown) once either is unknown, negative or the
   *  sum overflows. */
  private static long plus(long total, JsonNode rows) {
    if (total < 0 || rows == null || !rows.canConvertToLong() || rows.asLong() < 0) return -1;
    try {
      return Math.addExact(total, rows.asLong());
    } catch (ArithmeticException e) {
      return -1;
    }
  }

  private static HadoopFsRelation copy(HadoopFsRelation fs, HshFileIndex index) {
    return fs.copy(index, fs.partitionSchema(), fs.dataSchema(), fs.bucketSpec(), fs.fileFormat(), fs.options(),
        fs.sparkSession());
  }

  /** {@code aggregate} with its child chain rebuilt over {@code scan}. */
  private static LogicalPlan rebuilt(Aggregate aggregate, Project project, Filter filter, LogicalPlan scan) {
    return aggregate.withNewChildren(Scala.seq(List.of(below(project, filter, scan))));
  }

  /** The aggregate's child chain ({@code [Project] [Filter]}) rebuilt over {@code scan}: the rows it reads. */
  private static LogicalPlan below(Project project, Filter filter, LogicalPlan scan) {
    LogicalPlan child = scan;
    if (filter != null) child = filter.withNewChildren(Scala.seq(List.<LogicalPlan>of(child)));
    if (project != null) child = project.withNewChildren(Scala.seq(List.<LogicalPlan>of(child)));
    return child;
  }

  /** One aggregation over the index's rows and each of {@code readRows}' share. */
  private LogicalPlan merged(Aggregate original, List<AttributeReference> groups, List<AggregateSpec> specs,
      JsonNode matched, LogicalPlan readRows, IndexAnswer.Marker marker, boolean inDriver) {
    int answered = marker.answered;
    int read = marker.read;
    // the column names say in EXPLAIN what came from where: "count_all_of_150_files_from_index" under the
    // LocalTableScan, "count_all_of_2_files_read" in the projection of the rows read
    List<Attribute> local = new ArrayList<>();
    for (AttributeReference g : groups) local.add(fresh(g.name(), g.dataType(), g.nullable()));
    for (AggregateSpec s : specs) {
      local.add(fresh(s.kind.name().toLowerCase() + "_of_" + answered + "_files_from_index", s.partialType(), true));
    }
    List<NamedExpression> perRow = new ArrayList<>(groups);
    for (AggregateSpec s : specs) {
      perRow.add(alias(s.share(), s.kind.name().toLowerCase() + "_of_" + read + "_files_read", null));
    }
    LocalRelation answers = Plans.localRelation(local, IndexNumbers.rows(marker.table, groups, specs, matched,
        session.sessionState().conf().sessionLocalTimeZone()));
    if (inDriver) IndexAnswer.mark(answers, marker);
    // nothing left to read: no scan of zero files, only the index's rows
    LogicalPlan union = read == 0 ? answers : new Union(Scala.seq(List.of(answers,
        new Project(Scala.seq(perRow), readRows))), false, false);

    List<Expression> finalGroups = new ArrayList<>(local.subList(0, groups.size()));
    List<NamedExpression> finalAggs = new ArrayList<>();
    for (NamedExpression e : Scala.list(original.aggregateExpressions())) {
      int g = groups.indexOf(e);
      if (g >= 0) {
        finalAggs.add(alias(local.get(g), e.name(), e.exprId()));
        continue;
      }
      int i = indexOf(specs, (Alias) e);
      Attribute part = local.get(groups.size() + i);
      Expression merge;
      switch (specs.get(i).kind) {
        case MIN:
          merge = complete(new Min(part));
          break;
        case MAX:
          merge = complete(new Max(part));
          break;
        default: // counts add up; no rows at all (an ungrouped query) is a count of 0, as Spark's count says
          merge = new Coalesce(Scala.seq(List.of(complete(new Sum(part)), Literal$.MODULE$.apply(0L))));
      }
      finalAggs.add(alias(merge, e.name(), e.exprId()));
    }
    return Plans.aggregate(finalGroups, finalAggs, union);
  }

  private static int indexOf(List<AggregateSpec> specs, Alias alias) {
    for (int i = 0; i < specs.size(); i++) if (specs.get(i).alias == alias) return i;
    throw new IllegalStateException("hsh: aggregate " + alias + " has no spec");
  }

  private static AggregateExpression complete(AggregateFunction f) {
    return AggregateExpression$.MODULE$.apply(f, Complete$.MODULE$, false, Option.empty());
  }

  private static AttributeReference fresh(String name, DataType type, boolean nullable) {
    return new AttributeReference(name, type, nullable, Metadata.empty(), NamedExpression.newExprId(),
        Scala.seq(List.<String>of()));
  }

  private static Alias alias(Expression child, String name, org.apache.spark.sql.catalyst.expressions.ExprId id) {
    return new Alias(child, name, id == null ? NamedExpression.newExprId() : id, Scala.seq(List.<String>of()),
        Option.empty(), Scala.seq(List.<String>of()));
  }
}
