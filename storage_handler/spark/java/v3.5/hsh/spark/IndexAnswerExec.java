package hsh.spark;

import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.execution.SparkPlan;
import scala.collection.IndexedSeq;
import scala.collection.Seq;

/** {@link IndexAnswerPlan} for Spark 3.5 (Scala 2.12 sequences); the 4.x form differs only in those types. */
public final class IndexAnswerExec extends IndexAnswerPlan {
  private final Seq<Attribute> output; // serializable, unlike the aggregation (see IndexAnswerPlan#aggregate)

  /** The arguments are the node's product elements, as Spark's copies of a plan ({@code makeCopy}) require; the
   *  session is the one Spark's planning ran in ({@code SparkPlan.session}). */
  public IndexAnswerExec(Aggregate aggregate, IndexAnswer.Marker marker) {
    super(aggregate, marker);
    this.output = aggregate.output();
  }

  @Override
  public Seq<Attribute> output() {
    return output;
  }

  @Override
  public Seq<SparkPlan> children() {
    return Scala.seq(List.of());
  }

  @Override
  public SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> newChildren) {
    return this;
  }
}
