package hsh.spark;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.MutableProjection;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.DeclarativeAggregate;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.internal.SessionState;
import scala.Option;
import scala.runtime.AbstractPartialFunction;

/**
 * Answers an aggregation that {@link AggregateRule} rewrote in the driver, without a Spark job, when what is left
 * to read is small: the index's numbers for the fully matched files, plus the few partly matched files read in
 * the driver with Spark's own reader ({@code FileFormat.buildReaderWithPartitionValues}, as a scan task reads
 * them), filtered and aggregated with Spark's own expressions (each aggregate's {@code DeclarativeAggregate}
 * initial, update and evaluate expressions, the query's filter and projections). So the answer is the one
 * Spark's plan of the same rewrite gives; what it saves is the job: two stages and a shuffle, 100-150 ms on a
 * 2-core machine, which is most of such a query's time once the index answers the rest.
 *
 * <p>Why only below {@code spark.hsh.aggregates.driverReadBytes} (default 4 MiB of files to read) and
 * {@code spark.hsh.aggregates.driverReadRows} (default {@value #DRIVER_ROWS} rows, as the index counts them): the
 * driver reads and aggregates on one thread; past a few MiB a job's parallel read wins, and the driver must not
 * read a table's worth of rows. Bytes alone do not bound rows: 440 KB of repetitive values held 16 million rows,
 * which took the driver 2.8 s and a job 0.28 s. A file left to read whose row count the index does not know
 * (unindexed, changed since indexing) is therefore left to a job too. Above either limit the rewrite plans as
 * Spark's aggregation of the union, as before.
 *
 * <p>The rule marks the index's {@code LocalRelation} (a plan tag, kept when later optimizer rules copy the
 * node); {@link #marked} finds it under an aggregation whose every other node this class can run (a union,
 * projections and filters without non-deterministic parts, the handler's fixed file list). Any other shape, for
 * example after a rule of Spark's reshaped the plan, is planned by Spark: correct, only not job-free.
 */
final class IndexAnswer {
  private IndexAnswer() {}

  private static final TreeNodeTag<Marker> TAG = new TreeNodeTag<>("hsh.aggregateFromIndex");

  /** What the rewrite answered and what it leaves to read: for {@code EXPLAIN} and the record of each run. */
  static final class Marker implements java.io.Serializable {
    final String table;
    final int answered;
    final int read;
    final long readBytes;
    final long readRows; // as the index counts them; negative when it does not know them all
    final boolean interpreted; // whether the driver evaluates the expressions interpreted (DriverProjections)
    final long writes; // TableWrites' count when the answer was asked
    final long askedNanos; // when (System.nanoTime(), driver only)
    /** The aggregation as it was before the rewrite (driver only): planned anew once the answer is stale. */
    final transient Aggregate original;

    Marker(String table, int answered, int read, long readBytes, long readRows, boolean interpreted, long writes,
        Aggregate original) {
      this.table = table;
      this.answered = answered;
      this.read = read;
      this.readBytes = readBytes;
      this.readRows = readRows;
      this.interpreted = interpreted;
      this.writes = writes;
      this.original = original;
      this.askedNanos = System.nanoTime();
    }

    /**
     * Whether the answer may no longer be the table's: written from this driver since it was asked
     * ({@link TableWrites}), or asked longer ago than a prune answer is reused ({@link HshFileIndex#REUSE_NANOS}).
     * The second is for changes no driver of ours sees (a file another process copies in, a partition another
     * client drops) between planning and running ({@code df.explain()}, then {@code df.collect()} later): Spark
     * lists a partitioned table when the query runs, so an answer asked at planning must not outlive that bound.
     */
    boolean stale() {
      return TableWrites.since(table, writes) || System.nanoTime() - askedNanos > HshFileIndex.REUSE_NANOS;
    }

    @Override
    public String toString() {
      return files(answered) + " answered from the index, " + files(read) + " (" + readBytes + " bytes, "
          + (readRows < 0 ? "rows unknown" : readRows + (readRows == 1 ? " row" : " rows")) + ") read in the driver";
    }

    private static String files(int n) {
      return n + (n == 1 ? " file" : " files");
    }
  }

  /** {@code spark.hsh.aggregates.driverReadBytes}: the most bytes of files left to read in the driver. */
  static long driverReadBytes(SparkSession session) {
    return Contract.bytesSetting(session, Contract.SETTING_AGGREGATES_DRIVER_BYTES, 4L << 20);
  }

  /** The default of {@code spark.hsh.aggregates.driverReadRows} (measured: {@code benchmarks/results/aggregates.md}). */
  static final long DRIVER_ROWS = 250_000;

  /** {@code spark.hsh.aggregates.driverInterpretedRows}: up to how many rows the driver interprets its expressions. */
  static long driverInterpretedRows(SparkSession session) {
    return Contract.wholeNumberSetting(session, Contract.SETTING_AGGREGATES_DRIVER_INTERPRETED_ROWS,
        DriverProjections.INTERPRETED_ROWS, "rows");
  }

  /** {@code spark.hsh.aggregates.driverReadRows}: the most rows (as the index counts them) read in the driver. */
  static long driverReadRows(SparkSession session) {
    return Contract.wholeNumberSetting(session, Contract.SETTING_AGGREGATES_DRIVER_ROWS, DRIVER_ROWS, "rows");
  }

  /** Marks {@code answers}, the index's rows of a rewrite, as answerable in the driver. */
  static void mark(LocalRelation answers, Marker marker) {
    answers.setTagValue(TAG, marker);
  }

  /** Set while Spark plans an aggregation the driver could not answer ({@link #sparkPlan}). */
  private static final ThreadLocal<Boolean> SPARK_PLANS = ThreadLocal.withInitial(() -> false);

  /** Spark's own physical plan of {@code aggregate} (the rewrite's union read by a job), not this class's. */
  static SparkPlan sparkPlan(SparkSession session, Aggregate aggregate) {
    SPARK_PLANS.set(true);
    try {
      SessionState state = session.sessionState();
      return state.executePlan(aggregate, state.executePlan$default$2()).executedPlan();
    } finally {
      SPARK_PLANS.set(false);
    }
  }

  /** The marker when {@code plan} is a rewritten aggregation this class can answer, else null. */
  static Marker marked(LogicalPlan plan) {
    if (!(plan instanceof Aggregate) || SPARK_PLANS.get()) return null;
    Aggregate aggregate = (Aggregate) plan;
    LogicalPlan child = aggregate.child();
    LogicalPlan first = child instanceof Union ? Scala.list(child.children()).get(0) : child;
    if (!(first instanceof LocalRelation)) return null;
    Option<Marker> marker = first.getTagValue(TAG);
    if (marker.isEmpty() || !runnable(child)) return null;
    for (AggregateExpression ae : aggregates(aggregate)) {
      if (!(ae.aggregateFunction() instanceof DeclarativeAggregate) || ae.isDistinct() || ae.filter().isDefined()) {
        return null;
      }
    }
    return marker.get();
  }

  private static boolean runnable(LogicalPlan p) {
    if (p instanceof LocalRelation) return true;
    if (p instanceof Union) {
      for (LogicalPlan c : Scala.list(p.children())) if (!runnable(c)) return false;
      return true;
    }
    if (p instanceof Project || p instanceof Filter) {
      for (Expression e : Scala.list(p.expressions())) if (!e.deterministic()) return false;
      return runnable(Scala.list(p.children()).get(0));
    }
    if (p instanceof LogicalRelation && ((LogicalRelation) p).relation() instanceof HadoopFsRelation) {
      HadoopFsRelation fs = (HadoopFsRelation) ((LogicalRelation) p).relation();
      return fs.location() instanceof HshFileIndex && ((HshFileIndex) fs.location()).isFixed();
    }
    return false;
  }

  /** The aggregation's result rows, computed here: Spark's own expressions over the rows of its child. */
  static List<InternalRow> answer(SparkSession session, Aggregate aggregate, Marker marker) {
    long start = System.nanoTime();
    List<Attribute> input = Scala.list(aggregate.child().output());
    List<AggregateExpression> aggregates = aggregates(aggregate);
    List<AttributeReference> buffer = new ArrayList<>();
    List<Expression> initial = new ArrayList<>();
    List<Expression> update = new ArrayList<>();
    List<Expression> evaluate = new ArrayList<>();
    List<Attribute> results = new ArrayList<>();
    for (AggregateExpression ae : aggregates) {
      DeclarativeAggregate f = (DeclarativeAggregate) ae.aggregateFunction();
      buffer.addAll(Scala.list(f.aggBufferAttributes()));
      initial.addAll(Scala.list(f.initialValues()));
      update.addAll(Scala.list(f.updateExpressions()));
      evaluate.add(f.evaluateExpression());
      results.add(ae.resultAttribute());
    }
    List<Attribute> updateInput = new ArrayList<>(buffer);
    updateInput.addAll(input);
    DriverProjections make = new DriverProjections(marker.interpreted);
    MutableProjection init = make.mutable(initial, List.of());
    MutableProjection step = make.mutable(update, updateInput);
    MutableProjection eval = make.mutable(evaluate, new ArrayList<Attribute>(buffer));
    UnsafeProjection key = make.unsafe(Scala.list(aggregate.groupingExpressions()), input);

    // per group: its buffer, and its first row (what the result's grouping values are computed from)
    Map<UnsafeRow, InternalRow[]> groups = new LinkedHashMap<>();
    if (aggregate.groupingExpressions().isEmpty()) { // one row even over no rows, as Spark's global aggregation
      groups.put(key.apply(new GenericInternalRow(0)).copy(),
          new InternalRow[] {init.apply(new GenericInternalRow(0)).copy(), new GenericInternalRow(input.size())});
    }
    JoinedRow joined = new JoinedRow();
    long[] read = {0, 0}; // rows read from files, readers built (DriverReader)
    List<scala.collection.Iterator<InternalRow>> opened = new ArrayList<>();
    try {
      for (Iterator<InternalRow> it = rows(session, aggregate.child(), references(aggregate), read, make, opened);
          it.hasNext(); ) {
        InternalRow row = it.next(); // readers and projections reuse their row: copied only where it is kept
        UnsafeRow k = key.apply(row);
        InternalRow[] group = groups.get(k);
        if (group == null) {
          group = new InternalRow[] {init.apply(new GenericInternalRow(0)).copy(), row.copy()};
          groups.put(k.copy(), group);
        }
        // the group's buffer updated in place, as Spark's hash aggregation does (every value is computed first)
        step.target(group[0]).apply(joined.apply(group[0], row));
      }
    } finally {
      DriverReader.close(opened);
    }
    List<Expression> outputs = new ArrayList<>();
    IdentityHashMap<AggregateExpression, Attribute> resultOf = new IdentityHashMap<>();
    for (int i = 0; i < aggregates.size(); i++) resultOf.put(aggregates.get(i), results.get(i));
    for (NamedExpression e : Scala.list(aggregate.aggregateExpressions())) {
      outputs.add(((Expression) e).transformDown(new AbstractPartialFunction<Expression, Expression>() {
        @Override
        public boolean isDefinedAt(Expression x) {
          return resultOf.containsKey(x);
        }

        @Override
        public Expression apply(Expression x) {
          return resultOf.containsKey(x) ? resultOf.get(x) : x;
        }
      }));
    }
    List<Attribute> outputInput = new ArrayList<>(results);
    outputInput.addAll(input);
    UnsafeProjection out = make.unsafe(outputs, outputInput);
    List<InternalRow> answer = new ArrayList<>();
    for (InternalRow[] group : groups.values()) {
      InternalRow values = eval.apply(group[0]).copy();
      answer.add(out.apply(joined.apply(values, group[1])).copy());
    }
    Timings.record("aggregate_in_driver", marker.table, start, "answered", marker.answered, "read", marker.read,
        "rows_read", read[0], "readers_built", read[1], "groups", answer.size(), "interpreted",
        marker.interpreted ? 1 : 0);
    return answer;
  }

  /** Every aggregate expression of {@code aggregate}'s outputs, in order, each once (by identity). */
  private static List<AggregateExpression> aggregates(Aggregate aggregate) {
    List<AggregateExpression> out = new ArrayList<>();
    for (NamedExpression e : Scala.list(aggregate.aggregateExpressions())) collect((Expression) e, out);
    return out;
  }

  private static void collect(Expression e, List<AggregateExpression> out) {
    if (e instanceof AggregateExpression) {
      for (AggregateExpression seen : out) if (seen == e) return;
      out.add((AggregateExpression) e);
      return;
    }
    for (Expression c : Scala.list(e.children())) collect(c, out);
  }

  /** The expression ids {@code plan}'s expressions read. */
  private static Set<Long> references(LogicalPlan plan) {
    Set<Long> ids = new HashSet<>();
    for (Expression e : Scala.list(plan.expressions())) {
      for (Attribute a : Scala.list(e.references().toSeq())) ids.add(a.exprId().id());
    }
    return ids;
  }

  /** The rows of {@code plan} (a node {@link #runnable} accepts), in its output's order; {@code needed}: the
   *  expression ids its parent reads (a file read reads only those columns); {@code read}: the counts
   *  {@link DriverReader#rows} keeps. */
  private static Iterator<InternalRow> rows(SparkSession session, LogicalPlan plan, Set<Long> needed,
      long[] read, DriverProjections make, List<scala.collection.Iterator<InternalRow>> opened) {
    if (plan instanceof LocalRelation) return Scala.list(((LocalRelation) plan).data()).iterator();
    if (plan instanceof Union) {
      List<Iterator<InternalRow>> parts = new ArrayList<>();
      for (LogicalPlan c : Scala.list(plan.children())) parts.add(rows(session, c, ids(c.output()), read, make, opened));
      return Iterators.concat(parts.iterator());
    }
    if (plan instanceof LogicalRelation) {
      return DriverReader.rows(session, (LogicalRelation) plan, needed, read, make, opened);
    }
    LogicalPlan child = Scala.list(plan.children()).get(0); // a projection or a filter
    if (plan instanceof Project) {
      List<Expression> projectList = new ArrayList<>();
      for (NamedExpression e : Scala.list(((Project) plan).projectList())) projectList.add((Expression) e);
      UnsafeProjection project = make.unsafe(projectList, Scala.list(child.output()));
      return Iterators.map(rows(session, child, references(plan), read, make, opened), project::apply);
    }
    BasePredicate predicate = make.predicate(((Filter) plan).condition(), Scala.list(child.output()));
    Set<Long> below = new HashSet<>(needed);
    below.addAll(references(plan));
    return Iterators.filter(rows(session, child, below, read, make, opened), predicate::eval);
  }

  private static Set<Long> ids(scala.collection.Seq<Attribute> attributes) {
    Set<Long> ids = new HashSet<>();
    for (Attribute a : Scala.list(attributes)) ids.add(a.exprId().id());
    return ids;
  }
}
