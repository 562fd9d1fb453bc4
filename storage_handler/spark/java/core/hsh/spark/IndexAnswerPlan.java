package hsh.spark;

import java.util.List;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.execution.SparkPlan;
import org.slf4j.LoggerFactory;
import scala.reflect.ClassTag$;

/**
 * The physical form of an aggregation {@link IndexAnswer} answers in the driver: collecting it (what
 * {@code spark.sql(...).collect()}, {@code df.count()} and a HiveServer2 fetch do with an aggregation at the top
 * of a plan) runs no Spark job; an operator above it gets the rows as one partition. {@code EXPLAIN} names it
 * with what was answered and what is read. Each line's {@code IndexAnswerExec} adds only the members whose
 * Scala sequence types differ.
 *
 * <p>The answer is computed on every execution, not kept: a plan collected twice reads its files twice, as
 * Spark's scan would.
 *
 * <p>If the driver cannot answer -- a file it reads is corrupt, missing, unreadable, or anything else fails --
 * Spark runs its own plan of the same aggregation instead ({@link IndexAnswer#sparkPlan}), so what the query
 * then does is exactly what Spark does: the same error from a failed task (and its log), or the rows when
 * {@code spark.sql.files.ignoreCorruptFiles} / {@code ignoreMissingFiles} say to skip the file.
 */
abstract class IndexAnswerPlan extends SparkPlan {
  /**
   * Transient, as Spark's own nodes keep their relations: an operator above this one (a sort, say) ships itself,
   * and so this node, to the executors inside its generated code's references, and the logical plan holds the
   * file index, which is not serializable. Executors need only the output ({@code IndexAnswerExec} keeps it).
   */
  final transient Aggregate aggregate;
  final IndexAnswer.Marker marker;

  IndexAnswerPlan(Aggregate aggregate, IndexAnswer.Marker marker) {
    this.aggregate = aggregate;
    this.marker = marker;
  }

  /**
   * The driver's answer, or null when it could not answer (then Spark's plan must run: {@link #sparkOwn}). A
   * stale answer ({@link IndexAnswer.Marker#stale}: a write into the table from this driver since it was asked, or
   * asked more than 5 s ago) makes it null too: Spark plans the aggregation anew then, as its own read would list
   * the files now.
   */
  private List<InternalRow> rows() {
    if (marker.stale() && marker.original != null) {
      Timings.record("aggregate_replanned_stale", marker.table, System.nanoTime());
      return null;
    }
    try {
      return IndexAnswer.answer(session(), aggregate, marker);
    } catch (Exception e) { // Scala code throws checked exceptions (IOException) undeclared
      Timings.record("aggregate_in_driver_failed", marker.table, System.nanoTime());
      LoggerFactory.getLogger(IndexAnswerPlan.class).warn("hsh: the driver could not answer an aggregation of {} "
          + "from the index ({}); Spark's own plan of it runs instead", marker.table, e.toString());
      return null;
    }
  }

  @Override
  public InternalRow[] executeCollect() {
    List<InternalRow> rows = rows();
    return rows == null ? IndexAnswer.sparkPlan(session(), sparkOwn()).executeCollect()
        : rows.toArray(new InternalRow[0]);
  }

  @Override
  public InternalRow[] executeTake(int n) {
    List<InternalRow> rows = rows();
    return rows == null ? IndexAnswer.sparkPlan(session(), sparkOwn()).executeTake(n)
        : rows.subList(0, Math.min(Math.max(n, 0), rows.size())).toArray(new InternalRow[0]);
  }

  @Override
  public RDD<InternalRow> doExecute() {
    List<InternalRow> rows = rows();
    return rows == null ? IndexAnswer.sparkPlan(session(), sparkOwn()).execute()
        : sparkContext().parallelize(Scala.seq(rows), 1, ClassTag$.MODULE$.apply(InternalRow.class));
  }

  /** What Spark's plan runs when the driver does not answer: the aggregation as planned, or, once its answer is
   *  stale, the aggregation as it was before the rewrite, optimized anew. */
  private Aggregate sparkOwn() {
    return marker.stale() && marker.original != null ? marker.original : aggregate;
  }

  @Override
  public String nodeName() {
    return "HshAggregateFromIndex";
  }

  @Override
  public String simpleString(int maxFields) {
    return nodeName() + " " + output().mkString("[", ", ", "]") + " " + marker;
  }

  @Override
  public int productArity() {
    return 2;
  }

  @Override
  public Object productElement(int n) {
    if (n == 0) return aggregate;
    if (n == 1) return marker;
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof IndexAnswerPlan;
  }
}
