package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A handler session's write to a registered table, indexed at commit: after the write command returned (so
 * Spark committed the files, and a failed or aborted write never gets here), the written partitions go to the
 * Python side as an {@code index} request, which lists exactly those partitions and reads only their new footers
 * ({@code storage_handler/freshness/written.py}). The statement returns after that, so the next query prunes the
 * new files.
 *
 * <p>Which partitions: static values from the statement, merged with each dynamic combination {@link Observe}
 * saw; unpartitioned tables are one scope. With observation off, only the leading static values are sent and the
 * Python side takes every registered partition under them.
 *
 * <p>Nothing here fails the user's write: the files are committed, and a file the index lacks is read by every
 * query anyway. A failure or a wait beyond {@code spark.hsh.indexOnWrite.timeoutMs} (default 60 s) is one warning
 * naming the table and the fix ({@code hsh index refresh}, or a running {@code hsh follow}).
 * {@code spark.hsh.indexOnWrite=false} turns the hand-off off.
 */
final class IndexOnWrite {
  private static final Logger LOG = LoggerFactory.getLogger(IndexOnWrite.class);
  private static final long DEFAULT_TIMEOUT_MS = 60_000;

  private IndexOnWrite() {}

  /** Whether writes in {@code session} are indexed at commit. */
  static boolean enabled(SparkSession session) {
    return !"false".equalsIgnoreCase(session.conf().get(Contract.SETTING_INDEX_ON_WRITE, "true").trim());
  }

  /** Whether dynamic partitions are observed while writing (see {@link Observe}). */
  static boolean observe(SparkSession session) {
    return !"false".equalsIgnoreCase(session.conf().get(Contract.SETTING_OBSERVE_PARTITIONS, "true").trim());
  }

  /**
   * Runs {@code write}; once it returned, indexes what it wrote into {@code target}. {@code observed} gives the
   * dynamic partitions written (null: not observed). A throwing write propagates untouched and indexes nothing.
   */
  static <T> T around(SparkSession session, WriteTarget target, Supplier<T> write,
      Supplier<List<Map<String, String>>> observed) {
    T result = write.get();
    long start = System.nanoTime();
    try {
      index(session, target, observed);
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) { // Scala throws checked exceptions undeclared: everything else is only logged
      LOG.warn("hsh: the write into {} succeeded, but its files are not indexed yet ({}); queries read them until "
          + "`hsh index refresh {}` (or a running `hsh follow`) indexes them", target.name(), oneLine(e),
          target.name());
    } finally {
      Timings.record("index_on_write", target.name(), start);
    }
    return result;
  }

  private static void index(SparkSession session, WriteTarget target, Supplier<List<Map<String, String>>> observed) {
    ObjectNode request = JsonNodeFactory.instance.objectNode();
    request.put(Contract.indexRequest("op"), "index").put(Contract.indexRequest("contract"), Contract.VERSION);
    HshTable table = HshTable.of(target.table, session);
    request.set(Contract.indexRequest("table"), table.toJson());
    ObjectNode parameters = request.putObject(Contract.indexRequest("parameters"));
    for (Map.Entry<String, String> e : Scala.map(target.table.properties()).entrySet()) {
      if (e.getKey().startsWith("hsh.")) parameters.put(e.getKey(), e.getValue());
    }
    List<Map<String, String>> partitions = written(target, observed);
    if (partitions != null && partitions.isEmpty()) return; // no row written to any partition: nothing changed
    if (partitions == null) {
      request.set(Contract.indexRequest("partitions"), null);
      request.set(Contract.indexRequest("prefix"), object(target.prefix()));
    } else {
      ArrayNode list = request.putArray(Contract.indexRequest("partitions"));
      for (Map<String, String> p : partitions) list.add(object(p));
      request.set(Contract.indexRequest("prefix"), null);
    }
    request.put(Contract.indexRequest("command"), target.command);
    long timeout = timeoutMs(session, target.name());
    long start = System.nanoTime();
    JsonNode answer = PruneService.index(session, request, target.name(), timeout);
    AggregateDecisions.forget(table.name); // new files: a query declined before may now be worth answering
    LOG.info("hsh: indexed the write into {} in {} ms: {} files listed, {} added, {} changed, {} removed "
        + "(index version {})", target.name(), (System.nanoTime() - start) / 1_000_000,
        Contract.indexAnswer(answer, "files", target.name()).asLong(),
        Contract.indexAnswer(answer, "added", target.name()).asLong(),
        Contract.indexAnswer(answer, "changed", target.name()).asLong(),
        Contract.indexAnswer(answer, "removed", target.name()).asLong(),
        Contract.indexAnswer(answer, "version", target.name()).asText());
  }

  /** The written partitions (an unpartitioned table: one empty spec); null when only the prefix is known. */
  private static List<Map<String, String>> written(WriteTarget target,
      Supplier<List<Map<String, String>>> observed) {
    if (target.dynamicColumns.isEmpty()) return List.of(target.staticSpec);
    List<Map<String, String>> seen = observed == null ? null : observed.get();
    if (seen == null) return null;
    List<Map<String, String>> out = new java.util.ArrayList<>();
    for (Map<String, String> dynamic : seen) {
      Map<String, String> spec = new LinkedHashMap<>(target.staticSpec);
      spec.putAll(dynamic);
      out.add(spec);
    }
    return out;
  }

  private static ObjectNode object(Map<String, String> values) {
    ObjectNode node = JsonNodeFactory.instance.objectNode();
    values.forEach(node::put);
    return node;
  }

  private static long timeoutMs(SparkSession session, String table) {
    String value = session.conf().get(Contract.SETTING_INDEX_ON_WRITE_TIMEOUT, String.valueOf(DEFAULT_TIMEOUT_MS));
    try {
      long ms = Long.parseLong(value.trim());
      if (ms > 0) return ms;
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new IllegalArgumentException(Contract.SETTING_INDEX_ON_WRITE_TIMEOUT + " is '" + value
        + "'; set it to a whole number of milliseconds above 0");
  }

  private static String oneLine(Throwable e) {
    String message = e.getMessage() == null ? e.toString() : e.getMessage();
    return message.split("\n", 2)[0];
  }
}
