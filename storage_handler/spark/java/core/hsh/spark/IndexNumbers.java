package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;

/** The index's numbers for the files it answers (the prune service's {@code matched} answer) as Spark's rows,
 *  one per answered partition: the rows of the rewrite's {@code LocalRelation} ({@link AggregateRule}). */
final class IndexNumbers {
  private IndexNumbers() {}

  /** One row per answered partition of {@code table}: its grouping values (partition values read in the session's
   *  time {@code zone}), then each aggregate's partial value. */
  static List<InternalRow> rows(String table, List<AttributeReference> groups, List<AggregateSpec> specs,
      JsonNode matched, String zone) {
    JsonNode partitions = Contract.matched(matched, "partitions", table);
    JsonNode counts = Contract.matched(matched, "rows", table);
    JsonNode columns = Contract.matched(matched, "columns", table);
    List<InternalRow> out = new ArrayList<>();
    for (int r = 0; r < partitions.size(); r++) {
      long rows = counts.get(r).asLong();
      if (rows == 0) continue; // files without rows: no group to create, nothing to add
      Object[] row = new Object[groups.size() + specs.size()];
      for (int g = 0; g < groups.size(); g++) {
        row[g] = AnswerFiles.partitionValue(AnswerFiles.partitionText(partitions.get(r), groups.get(g).name()),
            groups.get(g).dataType(), zone);
      }
      for (int i = 0; i < specs.size(); i++) {
        AggregateSpec s = specs.get(i);
        JsonNode column = s.column == null ? null : findIgnoreCase(columns, s.column.name());
        switch (s.kind) {
          case COUNT_ALL:
            row[groups.size() + i] = rows;
            break;
          case COUNT:
            row[groups.size() + i] = rows - column.get("nulls").get(r).asLong();
            break;
          default:
            row[groups.size() + i] = value(column.get(s.kind == AggregateSpec.Kind.MIN ? "min" : "max").get(r), s.partialType());
        }
      }
      out.add(new GenericInternalRow(row));
    }
    return out;
  }

  static JsonNode findIgnoreCase(JsonNode object, String name) {
    JsonNode exact = object.get(name);
    if (exact != null) return exact;
    for (java.util.Iterator<String> it = object.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (key.equalsIgnoreCase(name)) return object.get(key);
    }
    return null;
  }

  /** A bound from the index as Spark's internal value of {@code type} (the types the handler answers for). */
  private static Object value(JsonNode v, DataType type) {
    if (v == null || v.isNull()) return null;
    if (type instanceof ByteType) return (byte) v.asLong();
    if (type instanceof ShortType) return (short) v.asLong();
    if (type instanceof IntegerType || type instanceof DateType) return (int) v.asLong(); // dates: days
    if (type instanceof LongType) return v.asLong();
    if (type instanceof BooleanType) return v.asBoolean();
    if (type instanceof DecimalType) {
      DecimalType d = (DecimalType) type;
      return Decimal.apply(new BigDecimal(v.asText()), d.precision(), d.scale());
    }
    throw new IllegalStateException("hsh: the index answered a bound of type " + type + ", which it must not");
  }

}
