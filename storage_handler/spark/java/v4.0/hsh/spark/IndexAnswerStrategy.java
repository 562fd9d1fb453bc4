package hsh.spark;

import java.util.List;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import scala.collection.immutable.Seq;

/** Plans an aggregation {@link IndexAnswer} can answer in the driver as {@link IndexAnswerExec}; Spark plans
 *  every other node (Spark 4.x form). */
final class IndexAnswerStrategy extends SparkStrategy {
  @Override
  public Seq<SparkPlan> apply(LogicalPlan plan) {
    IndexAnswer.Marker marker = IndexAnswer.marked(plan);
    return Scala.seq(marker == null ? List.<SparkPlan>of()
        : List.<SparkPlan>of(new IndexAnswerExec((Aggregate) plan, marker)));
  }
}
