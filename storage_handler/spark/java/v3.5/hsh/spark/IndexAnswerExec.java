package hsh.spark;

import java.util.List;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.IndexedSeq;
import scala.collection.Seq;
import scala.reflect.ClassTag$;

/**
 * The physical form of an aggregation {@link IndexAnswer} answers in the driver: collecting it (what
 * {@code spark.sql(...).collect()}, {@code df.count()} and a HiveServer2 fetch do with an aggregation at the top
 * of a plan) runs no Spark job; an operator above it gets the rows as one partition. {@code EXPLAIN} names it
 * with what was answered and what is read. Spark 3.5 form (Scala 2.12 sequences); the 4.x form differs only in those types.
 */
public final class IndexAnswerExec extends SparkPlan {
  private final Aggregate aggregate;
  private final IndexAnswer.Marker marker;

  /** The arguments are the node's product elements, as Spark's copies of a plan ({@code makeCopy}) require; the
   *  session is the one Spark's planning ran in ({@code SparkPlan.session}). */
  public IndexAnswerExec(Aggregate aggregate, IndexAnswer.Marker marker) {
    this.aggregate = aggregate;
    this.marker = marker;
  }

  private List<InternalRow> rows() {
    return IndexAnswer.answer(session(), aggregate, marker);
  }

  @Override
  public InternalRow[] executeCollect() {
    return rows().toArray(new InternalRow[0]);
  }

  @Override
  public InternalRow[] executeTake(int n) {
    List<InternalRow> rows = rows();
    return rows.subList(0, Math.min(Math.max(n, 0), rows.size())).toArray(new InternalRow[0]);
  }

  @Override
  public RDD<InternalRow> doExecute() {
    return sparkContext().parallelize(Scala.seq(rows()), 1, ClassTag$.MODULE$.apply(InternalRow.class));
  }

  @Override
  public Seq<Attribute> output() {
    return aggregate.output();
  }

  @Override
  public Seq<SparkPlan> children() {
    return Scala.seq(List.of());
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> newChildren) {
    return this;
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
    return other instanceof IndexAnswerExec;
  }
}
