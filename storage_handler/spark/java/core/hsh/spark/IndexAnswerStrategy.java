package hsh.spark;

import java.util.List;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.SparkPlan;

/** Plans an aggregation {@link IndexAnswer} can answer in the driver as {@link IndexAnswerExec}; Spark plans
 *  every other node. */
final class IndexAnswerStrategy extends StrategyBase {
  @Override
  List<SparkPlan> plans(LogicalPlan plan) {
    IndexAnswer.Marker marker = IndexAnswer.marked(plan);
    return marker == null ? List.of() : List.of(new IndexAnswerExec((Aggregate) plan, marker));
  }
}
