package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Deque;
import java.util.List;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.util.DateTimeUtils;
import org.apache.spark.sql.execution.datasources.DataSourceStrategy$;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.internal.SQLConf$;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.sources.StringContains;
import org.apache.spark.sql.sources.StringEndsWith;
import org.apache.spark.sql.sources.StringStartsWith;
import scala.Option;

/**
 * Catalyst predicates to the JSON form of Spark's data-source filters that the Python side decodes
 * ({@code contract.json}'s {@code filters} section; {@code storage_handler/spark/filter_json.py} reads it).
 *
 * <p>Spark translates each predicate to a {@link Filter} (its own, well-tested mapping of attribute-vs-literal
 * comparisons); this class only serializes the result. A predicate that does not translate, or holds a value this
 * format has no encoding for, is left out. That is always safe because the list is AND-ed and Spark re-applies
 * every predicate to the rows it reads: a dropped conjunct only prunes less. The same holds inside a top-level
 * AND. Under OR and NOT a part cannot be dropped (that would prune files holding matching rows), so there the
 * whole predicate goes.
 */
final class FilterJson {
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
  /**
   * The deepest JSON nesting written: the Python side's JSON reader and decoders recurse per level (Python stops
   * near 1,000); a filter nested deeper is left out, which only prunes less.
   */
  static final int MAX_DEPTH = 200;

  private FilterJson() {}

  /**
   * The filters for AND-ed {@code predicates}, as a JSON array (possibly empty).
   *
   * <p>Translated with {@code spark.sql.datetime.java8API.enabled} on, whatever the session says: otherwise Spark
   * hands dates and timestamps over as {@code java.sql.Date}/{@code Timestamp} in the hybrid Julian calendar,
   * which cannot hold the ten days 1582-10-05..14 (they come out as 1582-10-15, and a file holding them would be
   * skipped) and shifts every older day. {@code LocalDate} and {@code Instant} carry the proleptic values the data
   * and the index use.
   */
  static ArrayNode encodeAll(SparkSession session, Iterable<Expression> predicates) {
    return encode(session, predicates).filters;
  }

  /** The filters of {@code predicates} and whether every one of them was encoded whole. */
  static Encoded encode(SparkSession session, Iterable<Expression> predicates) {
    SQLConf conf = session.sessionState().conf().clone(); // the session's, whichever thread encodes
    conf.setConfString("spark.sql.datetime.java8API.enabled", "true");
    return SQLConf$.MODULE$.withExistingConf(conf, () -> encodeEach(predicates));
  }

  /**
   * Encoded filters; {@code complete} when no predicate or part of one was left out -- only then does the
   * handler's SearchArgument stand for the whole condition (what proving a file fully matched needs).
   */
  static final class Encoded {
    final ArrayNode filters;
    final boolean complete;

    Encoded(ArrayNode filters, boolean complete) {
      this.filters = filters;
      this.complete = complete;
    }
  }

  private static Encoded encodeEach(Iterable<Expression> predicates) {
    ArrayNode out = JSON.arrayNode();
    boolean[] complete = {true};
    for (Expression e : predicates) {
      if (!e.deterministic()) {
        complete[0] = false;
        continue;
      }
      Option<Filter> f = DataSourceStrategy$.MODULE$.translateFilter(e, false);
      if (f.isEmpty()) {
        complete[0] = false;
        continue;
      }
      encodeConjunct(f.get(), out, complete);
    }
    return new Encoded(out, complete[0]);
  }

  /**
   * The parts of a top-level AND, each its own element of {@code out} (the list is AND-ed): an unencodable part
   * is dropped and {@code complete[0]} cleared.
   */
  private static void encodeConjunct(Filter f, ArrayNode out, boolean[] complete) {
    for (Filter part : operands(f, true)) {
      ObjectNode exact = encodeExact(part, 1);
      if (exact == null) {
        complete[0] = false;
      } else {
        out.add(exact);
      }
    }
  }

  /**
   * The exact encoding of {@code f} at JSON nesting {@code depth}, or null when any part of it has none -- or when
   * it would nest deeper than {@link #MAX_DEPTH}. Chains of one connective ({@code a OR b OR c ...}, which a
   * DataFrame's {@code reduce} makes a thousand levels deep) are written as balanced trees of the same meaning.
   */
  private static ObjectNode encodeExact(Filter f, int depth) {
    if (depth > MAX_DEPTH) return null;
    if (f instanceof And || f instanceof Or) {
      boolean and = f instanceof And;
      List<Filter> operands = operands(f, and);
      int height = 32 - Integer.numberOfLeadingZeros(operands.size() - 1); // of the balanced tree over them
      List<ObjectNode> parts = new ArrayList<>(operands.size());
      for (Filter operand : operands) {
        ObjectNode part = encodeExact(operand, depth + height);
        if (part == null) return null;
        parts.add(part);
      }
      return balanced(and ? "And" : "Or", parts, 0, parts.size());
    }
    if (f instanceof Not) {
      ObjectNode child = encodeExact(((Not) f).child(), depth + 1);
      return child == null ? null : node("Not").set(Contract.filterField("Not", "child"), child);
    }
    if (f instanceof IsNull) return attribute("IsNull", ((IsNull) f).attribute());
    if (f instanceof IsNotNull) return attribute("IsNotNull", ((IsNotNull) f).attribute());
    if (f instanceof EqualTo) return compare("EqualTo", ((EqualTo) f).attribute(), ((EqualTo) f).value());
    if (f instanceof EqualNullSafe) {
      return compare("EqualNullSafe", ((EqualNullSafe) f).attribute(), ((EqualNullSafe) f).value());
    }
    if (f instanceof GreaterThan) {
      return compare("GreaterThan", ((GreaterThan) f).attribute(), ((GreaterThan) f).value());
    }
    if (f instanceof GreaterThanOrEqual) {
      GreaterThanOrEqual g = (GreaterThanOrEqual) f;
      return compare("GreaterThanOrEqual", g.attribute(), g.value());
    }
    if (f instanceof LessThan) return compare("LessThan", ((LessThan) f).attribute(), ((LessThan) f).value());
    if (f instanceof LessThanOrEqual) {
      return compare("LessThanOrEqual", ((LessThanOrEqual) f).attribute(), ((LessThanOrEqual) f).value());
    }
    if (f instanceof StringStartsWith) {
      return compare("StringStartsWith", ((StringStartsWith) f).attribute(), ((StringStartsWith) f).value());
    }
    if (f instanceof StringEndsWith) {
      return compare("StringEndsWith", ((StringEndsWith) f).attribute(), ((StringEndsWith) f).value());
    }
    if (f instanceof StringContains) {
      return compare("StringContains", ((StringContains) f).attribute(), ((StringContains) f).value());
    }
    if (f instanceof In) {
      In in = (In) f;
      ArrayNode values = JSON.arrayNode();
      for (Object v : in.values()) {
        JsonNode value = value(v);
        if (value == null) return null;
        values.add(value);
      }
      ObjectNode out = attribute("In", in.attribute());
      out.set(Contract.filterField("In", "values"), values);
      return out;
    }
    return null; // AlwaysTrue/AlwaysFalse and anything newer: prune less, never wrongly
  }

  /** The operands of a chain of {@code And} (or {@code Or}) in order, without recursion however long it is. */
  private static List<Filter> operands(Filter f, boolean and) {
    List<Filter> out = new ArrayList<>();
    Deque<Filter> stack = new ArrayDeque<>();
    stack.push(f);
    while (!stack.isEmpty()) {
      Filter g = stack.pop();
      if (and && g instanceof And) {
        stack.push(((And) g).right());
        stack.push(((And) g).left());
      } else if (!and && g instanceof Or) {
        stack.push(((Or) g).right());
        stack.push(((Or) g).left());
      } else {
        out.add(g);
      }
    }
    return out;
  }

  private static ObjectNode balanced(String op, List<ObjectNode> parts, int from, int to) {
    if (to - from == 1) return parts.get(from);
    int mid = (from + to) >>> 1;
    return pair(op, balanced(op, parts, from, mid), balanced(op, parts, mid, to));
  }

  private static ObjectNode node(String op) {
    return JSON.objectNode().put(Contract.FILTER_OP, Contract.filterOp(op));
  }

  private static ObjectNode pair(String op, ObjectNode left, ObjectNode right) {
    return node(op).<ObjectNode>set(Contract.filterField(op, "left"), left)
        .set(Contract.filterField(op, "right"), right);
  }

  private static ObjectNode attribute(String op, String attribute) {
    return node(op).put(Contract.filterField(op, "attribute"), attribute);
  }

  private static ObjectNode compare(String op, String attribute, Object value) {
    JsonNode encoded = value(value);
    return encoded == null ? null : attribute(op, attribute).set(Contract.filterField(op, "value"), encoded);
  }

  /** A typed value; null when the format has no encoding for it. */
  static JsonNode value(Object v) {
    if (v == null) return typed("null");
    if (v instanceof Boolean) return typed("bool").put(Contract.valueField("bool", "v"), (Boolean) v);
    if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) {
      return typed("int").put(Contract.valueField("int", "v"), ((Number) v).longValue());
    }
    if (v instanceof Float || v instanceof Double) {
      // the exact bits: a decimal rendering of a float could round differently on the other side
      return typed("double").put(Contract.valueField("double", "bits"),
          Long.toString(Double.doubleToRawLongBits(((Number) v).doubleValue())));
    }
    if (v instanceof scala.math.BigDecimal) v = ((scala.math.BigDecimal) v).bigDecimal();
    if (v instanceof java.math.BigDecimal) {
      return typed("decimal").put(Contract.valueField("decimal", "v"), ((java.math.BigDecimal) v).toPlainString());
    }
    if (v instanceof String) return typed("string").put(Contract.valueField("string", "v"), (String) v);
    // java.sql.Date/Timestamp (hybrid calendar) do not come: encodeAll asks for java.time values
    if (v instanceof LocalDate) return typed("date").put(Contract.valueField("date", "v"), v.toString());
    if (v instanceof Instant) {
      return typed("timestamp").put(Contract.valueField("timestamp", "micros"),
          DateTimeUtils.instantToMicros((Instant) v));
    }
    if (v instanceof LocalDateTime) {
      return typed("timestamp_ntz").put(Contract.valueField("timestamp_ntz", "v"), v.toString());
    }
    if (v instanceof byte[]) {
      return typed("binary").put(Contract.valueField("binary", "v"), Base64.getEncoder().encodeToString((byte[]) v));
    }
    return null;
  }

  private static ObjectNode typed(String tag) {
    return JSON.objectNode().put(Contract.VALUE_TAG, Contract.valueTag(tag));
  }
}
