package hsh.spark;

import java.util.List;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.Max;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

/**
 * One aggregate of a query that the index can answer ({@link AggregateRule}): what it computes, over which stored
 * data column, under which output name and id -- and the one place that decides which aggregates those are.
 *
 * <p>Answerable: {@code count(*)} (a count of a non-null literal), {@code count(col)}, {@code min(col)},
 * {@code max(col)} of a data column the scan reads, without {@code DISTINCT} or a {@code FILTER} clause. A partition
 * column's min or max comes from its partitions, not from the index, so it plans as before.
 */
final class AggregateSpec {
  enum Kind { COUNT_ALL, COUNT, MIN, MAX }

  final Kind kind;
  final AttributeReference column; // null for count(*)
  final Alias alias;

  private AggregateSpec(Kind kind, AttributeReference column, Alias alias) {
    this.kind = kind;
    this.column = column;
    this.alias = alias;
  }

  /** The type of this aggregate's partial value per file or partition: a count's long, a bound's column type. */
  DataType partialType() {
    return kind == Kind.MIN || kind == Kind.MAX ? column.dataType() : DataTypes.LongType;
  }

  /**
   * The spec of {@code alias} when it is an answerable aggregate of a stored data column of the scan (its output's
   * expression ids {@code scanColumns}; the table's partition columns {@code partitions}, lower case), else null.
   */
  static AggregateSpec of(Alias alias, Set<String> partitions, Set<Long> scanColumns) {
    if (!(alias.child() instanceof AggregateExpression)) return null;
    AggregateExpression agg = (AggregateExpression) alias.child();
    if (agg.isDistinct() || agg.filter().isDefined() || agg.mode() != Complete$.MODULE$) return null;
    AggregateFunction f = agg.aggregateFunction();
    Expression arg;
    Kind kind;
    if (f instanceof Count) {
      List<Expression> args = Scala.list(((Count) f).children());
      if (args.size() != 1) return null;
      if (args.get(0) instanceof Literal && ((Literal) args.get(0)).value() != null) {
        return new AggregateSpec(Kind.COUNT_ALL, null, alias);
      }
      kind = Kind.COUNT;
      arg = args.get(0);
    } else if (f instanceof Min) {
      kind = Kind.MIN;
      arg = ((Min) f).child();
    } else if (f instanceof Max) {
      kind = Kind.MAX;
      arg = ((Max) f).child();
    } else {
      return null;
    }
    if (!(arg instanceof AttributeReference)) return null;
    AttributeReference column = (AttributeReference) arg;
    if (!scanColumns.contains(column.exprId().id()) || partitions.contains(column.name().toLowerCase())) {
      return null; // a partition column's min/max comes from the partitions, not the index: plan as before
    }
    return new AggregateSpec(kind, column, alias);
  }

  /** What one row read adds to this aggregate's merge: 1 to a count of rows, 1 or 0 to a count of a column's
   *  values, its value to a min or max (the merge skips nulls, as the aggregate itself does). */
  Expression share() {
    switch (kind) {
      case COUNT_ALL:
        return Literal$.MODULE$.apply(1L);
      case COUNT:
        return new If(new IsNull(column), Literal$.MODULE$.apply(0L), Literal$.MODULE$.apply(1L));
      default:
        return column;
    }
  }
}
