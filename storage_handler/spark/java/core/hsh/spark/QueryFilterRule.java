package hsh.spark;

import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import scala.runtime.AbstractPartialFunction;

/**
 * Hands the whole condition of the filter directly above an {@link HshFileIndex} scan to the index.
 *
 * <p>Spark's file-source planning passes a file index only predicates on partition columns alone or on data
 * columns alone, so {@code p = 1 OR x > 5} would never prune. The filter stays in the plan and is applied to
 * every row read, so pruning by it is safe. Runs with the pre-CBO rules, after Spark has pushed filters down.
 */
final class QueryFilterRule extends Rule<LogicalPlan> {
  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.transformUp(new AbstractPartialFunction<LogicalPlan, LogicalPlan>() {
      @Override
      public boolean isDefinedAt(LogicalPlan p) {
        if (!(p instanceof Filter) || !(((Filter) p).child() instanceof LogicalRelation)) return false;
        LogicalRelation scan = (LogicalRelation) ((Filter) p).child();
        return scan.relation() instanceof HadoopFsRelation
            && ((HadoopFsRelation) scan.relation()).location() instanceof HshFileIndex;
      }

      @Override
      public LogicalPlan apply(LogicalPlan p) {
        if (!isDefinedAt(p)) return p;
        Filter filter = (Filter) p;
        LogicalRelation scan = (LogicalRelation) filter.child();
        HadoopFsRelation fs = (HadoopFsRelation) scan.relation();
        HshFileIndex index = (HshFileIndex) fs.location();
        java.util.List<Expression> conjuncts = Scala.list(
            filter.splitConjunctivePredicates(filter.condition()));
        if (index.queryFilters().equals(conjuncts)) return p;
        HadoopFsRelation pruned = fs.copy(index.withQueryFilters(conjuncts), fs.partitionSchema(), fs.dataSchema(),
            fs.bucketSpec(), fs.fileFormat(), fs.options(), fs.sparkSession());
        return filter.withNewChildren(Scala.seq(java.util.List.<LogicalPlan>of(Plans.withRelation(scan, pruned))));
      }
    });
  }
}
