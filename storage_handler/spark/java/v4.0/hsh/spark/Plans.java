package hsh.spark;

import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.sources.BaseRelation;
import scala.Option;

/**
 * Logical plan nodes whose shape differs by Spark line: from Spark 4.0 {@link LogicalRelation} has a fifth field,
 * the streaming source.
 */
final class Plans {
  private Plans() {}

  /** A batch (not streaming) relation over {@code relation}, as the catalog entry {@code table}. */
  static LogicalRelation relation(BaseRelation relation, List<AttributeReference> output, CatalogTable table) {
    return new LogicalRelation(relation, Scala.seq(output), Option.apply(table), false, Option.empty());
  }

  /** {@code scan} reading {@code relation} instead, everything else kept. */
  static LogicalRelation withRelation(LogicalRelation scan, BaseRelation relation) {
    return scan.copy(relation, scan.output(), scan.catalogTable(), scan.isStreaming(), scan.stream());
  }

  /** An aggregation of {@code child} (no hint). */
  static Aggregate aggregate(List<Expression> groupings, List<NamedExpression> aggregates, LogicalPlan child) {
    return new Aggregate(Scala.seq(groupings), Scala.seq(aggregates), child, Option.empty());
  }

  /** A batch relation of {@code rows} (internal values of {@code output}'s types). */
  static LocalRelation localRelation(List<Attribute> output, List<InternalRow> rows) {
    return new LocalRelation(Scala.seq(output), Scala.seq(rows), false, Option.empty());
  }
}
