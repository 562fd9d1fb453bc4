package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.Base64;
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
      ObjectNode node = encodeConjunct(f.get(), complete);
      if (node != null) out.add(node);
    }
    return new Encoded(out, complete[0]);
  }

  /**
   * A conjunct: under a top-level AND an unencodable side may be dropped (then {@code complete[0]} is cleared);
   * null when nothing is left.
   */
  private static ObjectNode encodeConjunct(Filter f, boolean[] complete) {
    if (f instanceof And) {
      And and = (And) f;
      ObjectNode left = encodeConjunct(and.left(), complete);
      ObjectNode right = encodeConjunct(and.right(), complete);
      if (left == null || right == null) return left == null ? right : left;
      return pair("And", left, right);
    }
    ObjectNode exact = encodeExact(f);
    if (exact == null) complete[0] = false;
    return exact;
  }

  /** The exact encoding of {@code f}, or null when any part of it has none. */
  private static ObjectNode encodeExact(Filter f) {
    if (f instanceof And || f instanceof Or) {
      Filter l = f instanceof And ? ((And) f).left() : ((Or) f).left();
      Filter r = f instanceof And ? ((And) f).right() : ((Or) f).right();
      ObjectNode left = encodeExact(l);
      ObjectNode right = encodeExact(r);
      if (left == null || right == null) return null;
      return pair(f instanceof And ? "And" : "Or", left, right);
    }
    if (f instanceof Not) {
      ObjectNode child = encodeExact(((Not) f).child());
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
