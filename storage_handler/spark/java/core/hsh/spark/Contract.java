package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * The hand-off with the handler's Python side, loaded from {@code contract.json} (the same file the Python side
 * loads; {@code storage_handler/contract.py} documents the messages). No name of it is spelled here by hand, and a
 * field this side reads that an answer lacks fails the query naming the field (it never reads as 0).
 */
final class Contract {
  private static final JsonNode DATA = load();
  static final int VERSION = DATA.get("version").asInt();
  static final String PARAM_HANDLER = text("table_parameters", "handler");
  static final String SETTING_NATIVE_SCAN = text("settings", "native_scan");
  static final String SETTING_PYTHON = text("settings", "python");
  static final String SETTING_PROCESSES = text("settings", "processes");
  static final String SETTING_AGGREGATES = text("settings", "aggregates");
  static final String SETTING_AGGREGATES_MIN_BYTES = text("settings", "aggregates_min_bytes");
  static final String SETTING_AGGREGATES_DRIVER_BYTES = text("settings", "aggregates_driver_bytes");
  static final String SETTING_AGGREGATES_DRIVER_ROWS = text("settings", "aggregates_driver_rows");
  static final String SETTING_AGGREGATES_DRIVER_INTERPRETED_ROWS =
      text("settings", "aggregates_driver_interpreted_rows");
  static final String SETTING_INDEX_ON_WRITE = text("settings", "index_on_write");
  static final String SETTING_INDEX_ON_WRITE_TIMEOUT = text("settings", "index_on_write_timeout");
  static final String SETTING_INDEX_ON_WRITE_ASYNC = text("settings", "index_on_write_async");
  static final String SETTING_OBSERVE_PARTITIONS = text("settings", "observe_partitions");
  static final String SETTING_DEFINITION_RECHECK = text("settings", "definition_recheck");
  private static final String STORAGE_PREFIX = DATA.get("storage_settings_prefix").asText();
  private static final List<String> STORAGE_SECRETS = names("storage_secret_suffixes");
  private static final List<String> SCAN_REQUEST = names("scan_request");
  private static final List<String> TABLE = names("table");
  private static final List<String> ANSWER = names("answer");
  private static final List<String> FILE_ROW = names("file_row");
  private static final List<String> METRICS = names("metrics");
  private static final List<String> MATCHED = names("matched");
  private static final List<String> AGGREGATE_REQUEST = names("aggregate_request");
  private static final List<String> INDEX_REQUEST = names("index_request");
  private static final List<String> INDEX_ANSWER = names("index_answer");
  private static final JsonNode FILTERS = DATA.get("filters");
  static final String FILTER_OP = FILTERS.get("op_field").asText();
  static final String VALUE_TAG = FILTERS.get("tag_field").asText();

  private Contract() {}

  /** A setting that is a whole number of bytes, {@code fallback} when unset; anything else is refused, naming
   *  the setting. */
  static long bytesSetting(org.apache.spark.sql.SparkSession session, String key, long fallback) {
    return wholeNumberSetting(session, key, fallback, "bytes");
  }

  /** A setting that is a whole number of {@code unit}s, {@code fallback} when unset; anything else is refused,
   *  naming the setting and the unit. */
  static long wholeNumberSetting(org.apache.spark.sql.SparkSession session, String key, long fallback,
      String unit) {
    String value = session.conf().get(key, String.valueOf(fallback)).trim();
    try {
      return Long.parseLong(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("hsh: " + key + " is '" + value + "'; set it to a whole number of " + unit,
          e);
    }
  }

  /**
   * A {@code spark.hsh.*} switch: {@code true} or {@code false} (any case), as Spark's own boolean settings take;
   * anything else ({@code 1}, {@code yes}, {@code off}) is refused naming the setting, instead of silently reading
   * as on for some switches and off for others.
   */
  static boolean switchSetting(org.apache.spark.sql.SparkSession session, String key, boolean fallback) {
    String value = session.conf().get(key, String.valueOf(fallback)).trim();
    if ("true".equalsIgnoreCase(value)) return true;
    if ("false".equalsIgnoreCase(value)) return false;
    throw new IllegalArgumentException("hsh: " + key + " is '" + value + "'; set it to true or false");
  }

  /** A table parameter that configures its storage ({@code fs.s3a.*}) and is no credential. */
  static boolean isStorageSetting(String key) {
    String low = key.toLowerCase(java.util.Locale.ROOT);
    if (!low.startsWith(STORAGE_PREFIX)) return false;
    for (String suffix : STORAGE_SECRETS) if (low.endsWith(suffix)) return false;
    return true;
  }

  private static JsonNode load() {
    try (InputStream in = Contract.class.getResourceAsStream("contract.json")) {
      if (in == null) throw new IllegalStateException("hsh: contract.json is not on the class path next to "
          + Contract.class.getName() + "; recompile the extension (storage_handler.spark.jvm)");
      return new ObjectMapper().readTree(in);
    } catch (IOException e) {
      throw new IllegalStateException("hsh: cannot read contract.json", e);
    }
  }

  private static String text(String group, String key) {
    return DATA.get(group).get(key).asText();
  }

  private static List<String> names(String group) {
    List<String> out = new ArrayList<>();
    for (JsonNode n : DATA.get(group)) out.add(n.asText());
    return List.copyOf(out);
  }

  private static String field(List<String> fields, String name) {
    if (!fields.contains(name)) throw new IllegalArgumentException("hsh: contract.json has no field " + name);
    return name;
  }

  /** A scan request's field name (checked against the contract). */
  static String request(String name) {
    return field(SCAN_REQUEST, name);
  }

  /** A table's field name (checked against the contract). */
  static String table(String name) {
    return field(TABLE, name);
  }

  /** The answer's {@code name} field; throws naming it when the answer lacks it. */
  static JsonNode answer(JsonNode answer, String name, String table) {
    return present(answer, field(ANSWER, name), "answer", table);
  }

  /** Field {@code name} of a kept-file row (rows are positional: the contract gives the position). */
  static JsonNode fileField(JsonNode row, String name, String table) {
    int i = FILE_ROW.indexOf(field(FILE_ROW, name));
    JsonNode value = row.get(i);
    if (value == null) throw missing("kept-file row " + row, name, table);
    return value;
  }

  /** Field {@code name} of an answer's {@code matched} part (the files the index answers aggregates for). */
  static JsonNode matched(JsonNode matched, String name, String table) {
    return present(matched, field(MATCHED, name), "matched files", table);
  }

  /** A field name of an answer's {@code matched} part (checked against the contract). */
  static String matchedField(String name) {
    return field(MATCHED, name);
  }

  /** A field name of the aggregate part of a scan request (checked against the contract). */
  static String aggregateRequest(String name) {
    return field(AGGREGATE_REQUEST, name);
  }

  /** A field name of an index request (checked against the contract). */
  static String indexRequest(String name) {
    return field(INDEX_REQUEST, name);
  }

  /** Field {@code name} of an index answer; throws naming it when the answer lacks it. */
  static JsonNode indexAnswer(JsonNode answer, String name, String table) {
    return present(answer, field(INDEX_ANSWER, name), "index answer", table);
  }

  /** A metric of the answer; a missing one throws rather than reading as 0. */
  static JsonNode metric(JsonNode metrics, String name, String table) {
    return present(metrics, field(METRICS, name), "scan metrics", table);
  }

  /** Filter operation {@code op} (checked against the contract's filter vocabulary). */
  static String filterOp(String op) {
    if (!FILTERS.get("ops").has(op)) throw new IllegalArgumentException("hsh: contract.json has no filter " + op);
    return op;
  }

  /** Field {@code name} of filter operation {@code op} (checked against the shape the contract gives it). */
  static String filterField(String op, String name) {
    String shape = FILTERS.get("ops").get(filterOp(op)).asText();
    for (JsonNode f : FILTERS.get("shapes").get(shape)) if (f.asText().equals(name)) return name;
    throw new IllegalArgumentException("hsh: contract.json gives filter " + op + " no field " + name);
  }

  /** Value tag {@code tag} (checked against the contract). */
  static String valueTag(String tag) {
    if (!FILTERS.get("values").has(tag)) throw new IllegalArgumentException("hsh: contract.json has no value " + tag);
    return tag;
  }

  /** Field {@code name} of a value tagged {@code tag} (checked against the contract). */
  static String valueField(String tag, String name) {
    for (JsonNode f : FILTERS.get("values").get(valueTag(tag))) if (f.asText().equals(name)) return name;
    throw new IllegalArgumentException("hsh: contract.json gives value " + tag + " no field " + name);
  }

  private static JsonNode present(JsonNode node, String name, String what, String table) {
    JsonNode value = node == null ? null : node.get(name);
    if (value == null) throw missing(what, name, table);
    return value;
  }

  private static IllegalStateException missing(String what, String name, String table) {
    return new IllegalStateException("hsh: cannot plan the scan of " + table + ": the prune service's " + what
        + " has no '" + name + "' (contract version " + VERSION + "): the Python package " + SETTING_PYTHON
        + " names is another version than this extension; restart the driver so both match");
  }
}
