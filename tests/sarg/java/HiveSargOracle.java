// Test oracle: builds SearchArguments with Hive's real storage-api (the jar in the pyspark wheel) and prints them.
//
// Compiled by tests/sarg/conftest.py at test time and run as one long-lived process per test session.
// Protocol: one JSON request per line on stdin, one JSON response per line on stdout (ASCII, non-ASCII escaped).
//
//   {"cmd":"sarg","items":[{"spec":[NODE...],"evals":[[TV...]...]}...]}
//       -> {"results":[{"string":S,"old":S,"compact":S,"leaves":N,"evals":[TV...]} | {"error":S}...]}
//   {"cmd":"truth"}  -> {"values":[TV...],"and":[[TV...]...],"or":[[TV...]...],"not":[TV...],"needed":[B...],
//                        "and_null":[TV...],"or_null":[TV...]}   (row = this, column = argument)
//   {"cmd":"double","bits":[HEX...]}  -> {"results":[Double.toString...]}
//   {"cmd":"quit"}
//
// A spec is the list of builder calls under the implicit root AND. NODE is one of
//   ["and", NODE...]  ["or", NODE...]  ["not", NODE...]  -> startAnd/startOr/startNot, children, end()
//   ["lit", "YES_NO_NULL"]                               -> literal(TruthValue)
//   ["leaf", OPERATOR, TYPE, COLUMN|null, LIT|null ...]  -> equals / nullSafeEquals / lessThan / lessThanEquals
//                                                          (one LIT), in (LITs), between (two LITs), isNull (none)
// LIT is a string typed by TYPE: LONG decimal; FLOAT the 16 hex digits of the IEEE bits; STRING itself;
// DATE "y-m-d" (java.sql.Date from those fields); DECIMAL BigDecimal text (new HiveDecimalWritable(String));
// TIMESTAMP "y-m-d h:m:s.nanos" (java.sql.Timestamp from those fields); BOOLEAN "true"/"false".
// Run it with -Duser.timezone=UTC: Date/Timestamp fields are interpreted in the JVM's zone.

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Timestamp;
import org.apache.hadoop.hive.ql.io.sarg.PredicateLeaf;
import org.apache.hadoop.hive.ql.io.sarg.SearchArgument;
import org.apache.hadoop.hive.ql.io.sarg.SearchArgument.TruthValue;
import org.apache.hadoop.hive.ql.io.sarg.SearchArgumentFactory;
import org.apache.hadoop.hive.serde2.io.HiveDecimalWritable;

public final class HiveSargOracle {
  private static final JsonMapper MAPPER =
      JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(System.out, false, "US-ASCII");
    String line;
    while ((line = in.readLine()) != null) {
      JsonNode request = MAPPER.readTree(line);
      String cmd = request.get("cmd").asText();
      if (cmd.equals("quit")) {
        break;
      }
      ObjectNode response;
      switch (cmd) {
        case "sarg": response = sargs(request.get("items")); break;
        case "truth": response = truth(); break;
        case "double": response = doubles(request.get("bits")); break;
        default: response = MAPPER.createObjectNode().put("error", "unknown command " + cmd);
      }
      out.println(MAPPER.writeValueAsString(response));
      out.flush();
    }
  }

  private static ObjectNode sargs(JsonNode items) {
    ObjectNode response = MAPPER.createObjectNode();
    ArrayNode results = response.putArray("results");
    for (JsonNode item : items) {
      ObjectNode result = results.addObject();
      try {
        SearchArgument.Builder builder = SearchArgumentFactory.newBuilder();
        for (JsonNode node : item.get("spec")) {
          add(builder, node);
        }
        SearchArgument sarg = builder.build();
        result.put("string", sarg.toString());
        result.put("old", oldString(sarg));
        result.put("compact", sarg.getCompactExpression().toString());
        result.put("leaves", sarg.getLeaves().size());
        ArrayNode evals = result.putArray("evals");
        JsonNode wanted = item.get("evals");
        if (wanted != null) {
          for (JsonNode values : wanted) {
            TruthValue[] leafValues = new TruthValue[values.size()];
            for (int i = 0; i < leafValues.length; i++) {
              leafValues[i] = TruthValue.valueOf(values.get(i).asText());
            }
            evals.add(sarg.evaluate(leafValues).name());
          }
        }
      } catch (RuntimeException e) {
        result.removeAll();
        result.put("error", e.getClass().getName() + ": " + e.getMessage());
      }
    }
    return response;
  }

  // toOldString is on SearchArgumentImpl (not the interface) in storage-api 2.8.1.
  private static String oldString(SearchArgument sarg) {
    try {
      return (String) sarg.getClass().getMethod("toOldString").invoke(sarg);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void add(SearchArgument.Builder b, JsonNode node) {
    String kind = node.get(0).asText();
    switch (kind) {
      case "and": b.startAnd(); children(b, node); b.end(); return;
      case "or": b.startOr(); children(b, node); b.end(); return;
      case "not": b.startNot(); children(b, node); b.end(); return;
      case "lit": b.literal(TruthValue.valueOf(node.get(1).asText())); return;
      case "leaf": leaf(b, node); return;
      default: throw new IllegalArgumentException("bad spec node " + node);
    }
  }

  private static void children(SearchArgument.Builder b, JsonNode node) {
    for (int i = 1; i < node.size(); i++) {
      add(b, node.get(i));
    }
  }

  private static void leaf(SearchArgument.Builder b, JsonNode node) {
    String op = node.get(1).asText();
    PredicateLeaf.Type type = PredicateLeaf.Type.valueOf(node.get(2).asText());
    String column = node.get(3).isNull() ? null : node.get(3).asText();
    Object[] lits = new Object[node.size() - 4];
    for (int i = 0; i < lits.length; i++) {
      lits[i] = literal(type, node.get(4 + i));
    }
    switch (op) {
      case "EQUALS": b.equals(column, type, lits[0]); break;
      case "NULL_SAFE_EQUALS": b.nullSafeEquals(column, type, lits[0]); break;
      case "LESS_THAN": b.lessThan(column, type, lits[0]); break;
      case "LESS_THAN_EQUALS": b.lessThanEquals(column, type, lits[0]); break;
      case "IN": b.in(column, type, lits); break;
      case "BETWEEN": b.between(column, type, lits[0], lits[1]); break;
      case "IS_NULL": b.isNull(column, type); break;
      default: throw new IllegalArgumentException("bad operator " + op);
    }
  }

  @SuppressWarnings("deprecation")
  private static Object literal(PredicateLeaf.Type type, JsonNode value) {
    if (value.isNull()) {
      return null;
    }
    String text = value.asText();
    switch (type) {
      case LONG: return Long.valueOf(text);
      case FLOAT: return Double.longBitsToDouble(Long.parseUnsignedLong(text, 16));
      case STRING: return text;
      case DATE: {
        String[] f = text.split("-");
        return new java.sql.Date(Integer.parseInt(f[0]) - 1900, Integer.parseInt(f[1]) - 1, Integer.parseInt(f[2]));
      }
      case DECIMAL: return new HiveDecimalWritable(text);
      case TIMESTAMP: {
        String[] f = text.split("[- :.]");
        return new Timestamp(Integer.parseInt(f[0]) - 1900, Integer.parseInt(f[1]) - 1, Integer.parseInt(f[2]),
            Integer.parseInt(f[3]), Integer.parseInt(f[4]), Integer.parseInt(f[5]), Integer.parseInt(f[6]));
      }
      case BOOLEAN: return Boolean.valueOf(text);
      default: throw new IllegalArgumentException("bad type " + type);
    }
  }

  private static ObjectNode truth() {
    ObjectNode response = MAPPER.createObjectNode();
    TruthValue[] all = TruthValue.values();
    ArrayNode values = response.putArray("values");
    ArrayNode and = response.putArray("and");
    ArrayNode or = response.putArray("or");
    ArrayNode not = response.putArray("not");
    ArrayNode needed = response.putArray("needed");
    for (TruthValue a : all) {
      values.add(a.name());
      ArrayNode andRow = and.addArray();
      ArrayNode orRow = or.addArray();
      for (TruthValue b : all) {
        andRow.add(a.and(b).name());
        orRow.add(a.or(b).name());
      }
      not.add(a.not().name());
      needed.add(a.isNeeded());
    }
    ArrayNode andNull = response.putArray("and_null");
    ArrayNode orNull = response.putArray("or_null");
    for (TruthValue a : all) {
      andNull.add(a.and(null).name());
      orNull.add(a.or(null).name());
    }
    return response;
  }

  private static ObjectNode doubles(JsonNode bits) {
    ObjectNode response = MAPPER.createObjectNode();
    ArrayNode results = response.putArray("results");
    for (JsonNode hex : bits) {
      results.add(Double.toString(Double.longBitsToDouble(Long.parseUnsignedLong(hex.asText(), 16))));
    }
    return response;
  }
}
