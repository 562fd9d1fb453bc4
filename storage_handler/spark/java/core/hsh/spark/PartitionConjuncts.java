package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.expressions.Unevaluable;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * An aggregation's filter split for {@link AggregateRule}: the conjuncts that name only partition columns and
 * that the handler's filter vocabulary cannot carry, evaluated here, and the rest, sent to the handler.
 *
 * <p>Why: {@code WHERE dt = DATE '2024-01-02'} over a {@code string} partition column reaches the optimizer as
 * {@code cast(dt AS date) = ...}, which no data-source filter expresses, nor {@code upper(region) = 'EU'}. Sent
 * with the rest, such a conjunct prunes nothing and makes the handler's filter incomplete, so no file could be
 * proven fully matched and the aggregation would read every kept file. A partition-only conjunct is constant
 * within a partition, so it is evaluated exactly on each partition's values, as Spark's own listing evaluates
 * it ({@link PartitionPredicate}): a partition where it does not hold holds no matching row (its files are
 * neither answered nor read), and where it holds, the handler's proof over the rest decides.
 */
final class PartitionConjuncts {
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

  /** The conjuncts sent to the handler (all of them when none is evaluated here). */
  final List<Expression> sent;
  private final List<Expression> here; // the conjuncts evaluated here
  private final BasePredicate predicate; // those AND-ed; null when there are none
  private final StructType partitionSchema;
  private final String zone;
  private final String table;
  private final Map<JsonNode, Boolean> decided = new HashMap<>(); // by partition values (JSON equality)

  private PartitionConjuncts(List<Expression> sent, List<Expression> here, HshTable table, String zone) {
    this.sent = sent;
    this.here = here;
    this.partitionSchema = table.partitionSchema;
    this.predicate = here.isEmpty() ? null : PartitionPredicate.of(here, partitionSchema);
    this.zone = zone;
    this.table = table.name;
  }

  static PartitionConjuncts split(SparkSession session, HshTable table, List<Expression> conjuncts) {
    Set<String> partitions = new HashSet<>();
    for (StructField f : table.partitionSchema.fields()) partitions.add(f.name().toLowerCase(Locale.ROOT));
    List<Expression> sent = new ArrayList<>();
    List<Expression> here = new ArrayList<>();
    for (Expression c : conjuncts) {
      boolean local = c.deterministic() && !SubqueryExpression.hasSubquery(c) && !c.references().isEmpty()
          && !unevaluable(c) && namesOnly(c, partitions)
          // nothing of it reaches the handler: leaving it out of the request prunes no less
          && FilterJson.encode(session, Prunable.of(session, table.partitionSchema, List.of(c))).filters.isEmpty();
      (local ? here : sent).add(c);
    }
    return new PartitionConjuncts(sent, here, table, session.sessionState().conf().sessionLocalTimeZone());
  }

  /** The conjuncts evaluated here, canonical (no expression ids): what tells two such queries apart. */
  String evaluatedHere() {
    StringBuilder out = new StringBuilder();
    for (Expression e : here) out.append(e.canonicalized().sql()).append(';');
    return here.isEmpty() ? "" : out.append(zone).toString(); // a cast's zone is not in its SQL
  }

  /**
   * Whether {@code e} holds a part only Spark's later planning can run -- a Python UDF ({@code PythonUDF}), which
   * Spark extracts into its own operator after this rule: evaluated here, it throws.
   */
  private static boolean unevaluable(Expression e) {
    return e.exists(new scala.runtime.AbstractFunction1<Expression, Object>() {
      @Override
      public Object apply(Expression part) {
        return part instanceof Unevaluable && !(part instanceof Attribute); // columns are bound before evaluating
      }
    });
  }

  private static boolean namesOnly(Expression e, Set<String> partitions) {
    for (Attribute a : Scala.list(e.references().toSeq())) {
      if (!partitions.contains(a.name().toLowerCase(Locale.ROOT))) return false;
    }
    return true;
  }

  /** Whether the conjuncts evaluated here hold for a partition's values ({@code {key: text or null}}). */
  private boolean holds(JsonNode values) {
    if (predicate == null) return true;
    return decided.computeIfAbsent(values, this::evaluate); // once per partition, not per file
  }

  private boolean evaluate(JsonNode values) {
    StructField[] fields = partitionSchema.fields();
    Object[] row = new Object[fields.length];
    for (int i = 0; i < fields.length; i++) {
      row[i] = AnswerFiles.partitionValue(AnswerFiles.partitionText(values, fields[i].name()),
          fields[i].dataType(), zone);
    }
    return predicate.eval(new GenericInternalRow(row));
  }

  /** Whether they hold for the partition of each file of {@code files}, a prune answer's list. */
  boolean[] holdsForEach(JsonNode files) {
    boolean[] out = new boolean[files.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = predicate == null || holds(Contract.fileField(files.get(i), "partition_values", table));
    }
    return out;
  }

  /**
   * The handler's {@code matched} part with only the partitions, and the answered files ({@code holds}: from
   * {@link #holdsForEach} of the answer's list), these conjuncts hold for: every array in it is aligned with
   * either the positions or the partitions.
   */
  JsonNode keep(JsonNode matched, boolean[] holds) {
    if (predicate == null) return matched;
    ObjectNode out = ((ObjectNode) matched).deepCopy();
    ArrayNode positions = JSON.arrayNode();
    for (JsonNode p : Contract.matched(matched, "positions", table)) {
      if (holds[p.asInt()]) positions.add(p);
    }
    out.set(Contract.matchedField("positions"), positions);
    JsonNode partitions = Contract.matched(matched, "partitions", table);
    List<Integer> kept = new ArrayList<>();
    for (int r = 0; r < partitions.size(); r++) if (holds(partitions.get(r))) kept.add(r);
    out.set(Contract.matchedField("partitions"), pick(partitions, kept));
    out.set(Contract.matchedField("rows"), pick(Contract.matched(matched, "rows", table), kept));
    ObjectNode columns = (ObjectNode) out.get(Contract.matchedField("columns"));
    for (Iterator<Map.Entry<String, JsonNode>> it = columns.fields(); it.hasNext(); ) {
      ObjectNode column = (ObjectNode) it.next().getValue();
      List<String> names = new ArrayList<>();
      column.fieldNames().forEachRemaining(names::add);
      for (String name : names) column.set(name, pick(column.get(name), kept)); // nulls, min, max per partition
    }
    return out;
  }

  private static ArrayNode pick(JsonNode array, List<Integer> indexes) {
    ArrayNode out = JSON.arrayNode();
    for (int i : indexes) out.add(array.get(i));
    return out;
  }
}
