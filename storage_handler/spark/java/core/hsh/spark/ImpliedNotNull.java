package hsh.spark;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;

/**
 * Conjuncts without the {@code IsNotNull(col)} that another conjunct implies: a comparison of {@code col} itself
 * with a constant ({@code col >= DATE '1994-01-01'}; not {@code <=>}) is true only where {@code col} is not null.
 *
 * <p>Why: Spark's optimizer adds exactly such {@code isnotnull(col)} to a filter (it infers them from the
 * comparisons). Left out, a query's conjuncts read the same from the analyzed plan as from the optimized one, so a
 * prune request sent as soon as the query is analyzed ({@link EarlyAggregateRequest}) is the very request the
 * optimizer's rule makes. Nothing is lost: the conjunction is true on exactly the same rows with or without them,
 * so the files kept and the files proven to match on every row are the same.
 */
final class ImpliedNotNull {
  private ImpliedNotNull() {}

  static List<Expression> without(List<Expression> conjuncts) {
    Set<Long> compared = new HashSet<>(); // expression ids of columns compared with a constant
    for (Expression e : conjuncts) {
      if (!(e instanceof BinaryComparison) || e instanceof EqualNullSafe) continue;
      BinaryComparison c = (BinaryComparison) e;
      if (c.left() instanceof AttributeReference && c.right().foldable()) {
        compared.add(((AttributeReference) c.left()).exprId().id());
      } else if (c.right() instanceof AttributeReference && c.left().foldable()) {
        compared.add(((AttributeReference) c.right()).exprId().id());
      }
    }
    if (compared.isEmpty()) return conjuncts;
    List<Expression> out = new ArrayList<>();
    for (Expression e : conjuncts) {
      boolean implied = e instanceof IsNotNull && ((IsNotNull) e).child() instanceof AttributeReference
          && compared.contains(((AttributeReference) ((IsNotNull) e).child()).exprId().id());
      if (!implied) out.add(e);
    }
    return out;
  }
}
