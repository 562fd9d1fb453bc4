package hsh.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.InterpretedMutableProjection$;
import org.apache.spark.sql.catalyst.expressions.InterpretedPredicate;
import org.apache.spark.sql.catalyst.expressions.InterpretedUnsafeProjection$;
import org.apache.spark.sql.catalyst.expressions.MutableProjection;
import org.apache.spark.sql.catalyst.expressions.MutableProjection$;
import org.apache.spark.sql.catalyst.expressions.Predicate$;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection$;
import scala.runtime.AbstractPartialFunction;

/**
 * The projections and the predicate {@link IndexAnswer} evaluates in the driver: Spark's generated code when many
 * rows are read, Spark's interpreted evaluation of the very same expressions when few.
 *
 * <p>Why: making a generated projection costs about a millisecond even when Spark's compile cache already holds
 * its class (the code is written out and canonicalized to be looked up), and one answer makes six to eight of
 * them; interpreted, each row costs more instead. Up to {@code spark.hsh.aggregates.driverInterpretedRows} rows
 * (as the index counts them; default {@value #INTERPRETED_ROWS}) the answer is interpreted, above it generated,
 * as Spark's own plan would be: {@code benchmarks/results/driver_rows.md} measures both. Both evaluate Spark's
 * expressions, so the answer is the same either way.
 */
final class DriverProjections {
  /** The default of {@code spark.hsh.aggregates.driverInterpretedRows}. */
  static final long INTERPRETED_ROWS = 10_000;

  private final boolean interpreted;

  /** {@code interpreted}: decided while planning ({@code AggregateRule}), where a bad setting fails the query. */
  DriverProjections(boolean interpreted) {
    this.interpreted = interpreted;
  }

  /** {@code expressions} over rows laid out as {@code input} (empty: already bound or constant). */
  MutableProjection mutable(List<Expression> expressions, List<Attribute> input) {
    return interpreted ? InterpretedMutableProjection$.MODULE$.createProjection(Scala.seq(bound(expressions, input)))
        : MutableProjection$.MODULE$.create(Scala.seq(expressions), Scala.seq(input));
  }

  UnsafeProjection unsafe(List<Expression> expressions, List<Attribute> input) {
    return interpreted ? InterpretedUnsafeProjection$.MODULE$.createProjection(Scala.seq(bound(expressions, input)))
        : UnsafeProjection$.MODULE$.create(Scala.seq(expressions), Scala.seq(input));
  }

  /** {@code condition} over rows laid out as {@code input}, initialized for its one partition. */
  BasePredicate predicate(Expression condition, List<Attribute> input) {
    BasePredicate predicate = interpreted ? new InterpretedPredicate(bound(List.of(condition), input).get(0))
        : Predicate$.MODULE$.create(condition, Scala.seq(input));
    predicate.initialize(0);
    return predicate;
  }

  /**
   * {@code expressions} with each column replaced by its position in {@code input}, as Spark's
   * {@code BindReferences} binds them for its own projections (which Java cannot name: its class lives in Scala's
   * {@code package} object).
   */
  private static List<Expression> bound(List<Expression> expressions, List<Attribute> input) {
    Map<Long, Integer> ordinals = new HashMap<>();
    for (int i = input.size() - 1; i >= 0; i--) ordinals.put(input.get(i).exprId().id(), i); // the first wins
    AbstractPartialFunction<Expression, Expression> bind = new AbstractPartialFunction<Expression, Expression>() {
      @Override
      public boolean isDefinedAt(Expression e) {
        return e instanceof AttributeReference;
      }

      @Override
      public Expression apply(Expression e) {
        AttributeReference a = (AttributeReference) e;
        Integer at = ordinals.get(a.exprId().id());
        if (at == null) throw new IllegalStateException("hsh: cannot bind " + a + " to the driver's rows " + input);
        return new BoundReference(at, a.dataType(), input.get(at).nullable());
      }
    };
    List<Expression> out = new ArrayList<>(expressions.size());
    for (Expression e : expressions) out.add(e.transformDown(bind));
    return out;
  }
}
