package hsh.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.HiveTableRelation;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.runtime.AbstractPartialFunction;

/**
 * Replaces a registered table's Hive relation with Spark's native Parquet relation over an {@link HshFileIndex}:
 * Spark's own vectorized reader, column pruning and row-group filtering read the files the handler keeps.
 *
 * <p>A table is recognized by the handler's parameter on the catalog entry Spark resolved
 * ({@link HshTable#isHandled}); registration writes nothing else of ours, so every session without this extension
 * reads the table as the plain Hive Parquet table it is. Runs as a resolution rule, so it meets the
 * {@link HiveTableRelation} before Spark's own {@code RelationConversions} turns it into a Parquet relation (which
 * would list every partition, and infer and save the table's case-sensitive schema, before the handler prunes).
 *
 * <p>Only reads are replaced: the table an {@code INSERT} writes into is not a child of the insert, so Spark's
 * own Hive write path handles writes as for any Hive table. Set {@code spark.hsh.nativeScan=false} to read the
 * table as plain Spark does (no pruning).
 */
final class NativeScanRule extends Rule<LogicalPlan> {
  private final SparkSession session;

  NativeScanRule(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!Contract.switchSetting(session, Contract.SETTING_NATIVE_SCAN, true)) return plan;
    return plan.resolveOperatorsUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
      @Override
      public boolean isDefinedAt(LogicalPlan p) {
        return p instanceof HiveTableRelation && HshTable.isHandled(((HiveTableRelation) p).tableMeta());
      }

      @Override
      public LogicalPlan apply(LogicalPlan p) {
        return isDefinedAt(p) ? replace((HiveTableRelation) p) : p;
      }
    });
  }

  private LogicalPlan replace(HiveTableRelation relation) {
    long start = System.nanoTime();
    try {
      return replaced(relation);
    } finally {
      Timings.record("resolve_relation", relation.tableMeta().identifier().unquotedString(), start);
    }
  }

  private LogicalPlan replaced(HiveTableRelation relation) {
    HshTable table = HshTable.of(relation.tableMeta(), session);
    FileSystems.check(session, table.name, table.location);
    HshFileIndex index = HshFileIndex.pruning(session, table);
    // the Hive relation's output is its data columns then its partition columns: the file relation's order
    List<AttributeReference> output = new ArrayList<>(Scala.list(relation.output()));
    return Plans.relation(HshRelations.relation(session, table, index), output,
        HshTable.withoutStatistics(relation.tableMeta()));
  }
}
