package hsh.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.SparkStrategy;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions=hsh.spark.HshExtensions}: registered tables are named for the session catalog
 * ({@link QualifiedNames}, saving Spark a catalog search per query), read by Spark's native Parquet
 * scan over the files the handler keeps ({@link NativeScanRule}, {@link QueryFilterRule}), and aggregates the index
 * can answer are taken from it ({@link AggregateRule}), in the driver without a Spark job when little is left to
 * read ({@link IndexAnswer}, planned by {@code IndexAnswerStrategy}); writes into them are indexed at commit
 * ({@link IndexOnWrite}, planned by {@code IndexOnWriteStrategy}).
 */
public final class HshExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
      @Override
      public ParserInterface apply(SparkSession session, ParserInterface delegate) {
        return QualifiedNames.parser(session, delegate);
      }
    });
    extensions.injectResolutionRule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
      @Override
      public Rule<LogicalPlan> apply(SparkSession session) {
        return new NativeScanRule(session);
      }
    });
    // aggregates first: it asks for the files with the query's filters itself, and QueryFilterRule then finds
    // them set (and the answer held) instead of asking again
    extensions.injectPreCBORule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
      @Override
      public Rule<LogicalPlan> apply(SparkSession session) {
        return new AggregateRule(session);
      }
    });
    extensions.injectPreCBORule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
      @Override
      public Rule<LogicalPlan> apply(SparkSession session) {
        return new QueryFilterRule();
      }
    });
    extensions.injectPlannerStrategy(new AbstractFunction1<SparkSession, SparkStrategy>() {
      @Override
      public SparkStrategy apply(SparkSession session) {
        return new IndexOnWriteStrategy(session);
      }
    });
    extensions.injectPlannerStrategy(new AbstractFunction1<SparkSession, SparkStrategy>() {
      @Override
      public SparkStrategy apply(SparkSession session) {
        return new IndexAnswerStrategy();
      }
    });
    return BoxedUnit.UNIT;
  }
}
