package hsh.spark;

import java.util.List;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import scala.collection.immutable.Seq;

/**
 * {@link SparkStrategy} for Spark 4.0 through 4.3 (Scala 2.13: {@code scala.collection.immutable.Seq}; the classic session): the strategy's one method returns a Scala sequence whose type differs by
 * line, so the shared strategies ({@link IndexOnWriteStrategy}, {@link IndexAnswerStrategy}) return a Java list
 * and this per-line base adapts it.
 */
abstract class StrategyBase extends SparkStrategy {
  /** The physical plans for {@code plan}; empty: Spark's own strategies plan it. */
  abstract List<SparkPlan> plans(LogicalPlan plan);

  @Override
  public final Seq<SparkPlan> apply(LogicalPlan plan) {
    return Scala.seq(plans(plan));
  }
}
