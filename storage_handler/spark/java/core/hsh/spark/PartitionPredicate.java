package hsh.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Predicate$;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.runtime.AbstractPartialFunction;

/**
 * Spark's partition-only predicates, evaluated exactly on each kept partition's values.
 *
 * <p>Why this is needed: Spark trusts a file index to prune partitions exactly. Its file-source planning drops
 * partition-only predicates from the filter it applies to the rows read (they are constant per partition), so a
 * partition the index returns is taken as matching. The handler only keeps what it cannot rule out (a predicate
 * it cannot translate, {@code upper(region) = 'EU'}, keeps every partition), so without this step such a
 * query would return rows of partitions that do not match. Spark's own file indexes do the same: bind the
 * predicate to the partition columns by name and evaluate it per partition.
 */
final class PartitionPredicate {
  private PartitionPredicate() {
  }

  /** The partitions of {@code dirs} whose values satisfy every predicate of {@code filters}. */
  static List<PartitionDirectory> matching(List<PartitionDirectory> dirs, List<Expression> filters,
      StructType partitionSchema) {
    if (filters.isEmpty() || dirs.isEmpty()) return dirs;
    BasePredicate predicate = of(filters, partitionSchema);
    List<PartitionDirectory> out = new ArrayList<>();
    for (PartitionDirectory dir : dirs) {
      if (predicate.eval(dir.values())) out.add(dir);
    }
    return out;
  }

  /** Every predicate of (non-empty) {@code filters} AND-ed, to evaluate on a row of {@code partitionSchema}. */
  static BasePredicate of(List<Expression> filters, StructType partitionSchema) {
    Expression all = filters.get(0);
    for (int i = 1; i < filters.size(); i++) all = new And(all, filters.get(i));
    BasePredicate predicate = Predicate$.MODULE$.createInterpreted(bind(all, partitionSchema));
    predicate.initialize(0);
    return predicate;
  }

  private static Expression bind(Expression predicate, StructType partitionSchema) {
    return predicate.transform(new AbstractPartialFunction<Expression, Expression>() {
      @Override
      public boolean isDefinedAt(Expression e) {
        return e instanceof AttributeReference;
      }

      @Override
      public Expression apply(Expression e) {
        if (!(e instanceof AttributeReference)) return e;
        String name = ((AttributeReference) e).name();
        StructField[] fields = partitionSchema.fields();
        for (int i = 0; i < fields.length; i++) {
          if (fields[i].name().equalsIgnoreCase(name)) return new BoundReference(i, fields[i].dataType(), true);
        }
        throw new IllegalStateException("hsh: partition filter " + predicate.sql() + " names " + name
            + ", which is not a partition column of " + partitionSchema.simpleString());
      }
    });
  }
}
