package hsh.spark;

import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.command.DataWritingCommandExec;
import org.apache.spark.sql.execution.datasources.V1WriteCommand;

/**
 * Plans a write into a registered table as {@link IndexedWrite} around the real command (Spark's own strategy
 * plans every other write, and this one when {@code spark.hsh.indexOnWrite=false}). Why a planner strategy and
 * not a query-execution listener: listeners run on Spark's listener thread after the statement returned, so the
 * next query would not see the new files indexed; the strategy's command runs on the statement's own thread.
 * Adaptive execution may plan a command twice; only the instance that runs indexes.
 */
final class IndexOnWriteStrategy extends StrategyBase {
  private final SparkSession session;

  IndexOnWriteStrategy(SparkSession session) {
    this.session = session;
  }

  @Override
  List<SparkPlan> plans(LogicalPlan plan) {
    if (!(plan instanceof V1WriteCommand) || plan instanceof IndexedWrite || !IndexOnWrite.enabled(session)) {
      return List.of();
    }
    V1WriteCommand cmd = (V1WriteCommand) plan;
    WriteTarget target = WriteTarget.of(cmd);
    if (target == null) return List.of();
    Observe observe = target.dynamicColumns.isEmpty() || !IndexOnWrite.observe(session) ? null
        : Observe.of(cmd, target.dynamicColumns);
    V1WriteCommand write = observe == null ? cmd : observe.command;
    return List.of(new DataWritingCommandExec(new IndexedWrite(write, target, observe), planLater(write.query())));
  }
}
