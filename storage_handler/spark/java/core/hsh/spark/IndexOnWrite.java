package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A handler session's write to a registered table, indexed at commit: after the write command returned (so
 * Spark committed the files, and a failed or aborted write never gets here), the written partitions go to the
 * Python side as an {@code index} request, which lists exactly those partitions and reads only their new footers
 * ({@code storage_handler/freshness/written.py}).
 *
 * <p>When: by default the statement hands the request off and returns (the hand-off costs the statement about a
 * millisecond; indexing a small write takes ~0.1 s, measured in {@code benchmarks/results/freshness.md}), and every
 * prune request this driver sends for that table first waits for the hand-offs under way
 * ({@link #awaitPending}), so the next query of any of this driver's sessions prunes the new files all the same.
 * Other processes see the files indexed once the hand-off commits; until then they read them, as they read any
 * file the index lacks. A table's hand-offs run one after another, in the order of the writes; a driver that
 * stops waits for those under way (at most the timeout). {@code spark.hsh.indexOnWrite.async=false} makes the
 * statement itself wait, as a job that must see the index current on return may want.
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

  /** A table's latest hand-off (each runs after the one before it) and how long a query may wait for it. */
  private static final class Pending {
    final CompletableFuture<Void> done;
    final long timeoutMs;

    Pending(CompletableFuture<Void> done, long timeoutMs) {
      this.done = done;
      this.timeoutMs = timeoutMs;
    }
  }

  private static final Map<String, Pending> PENDING = new ConcurrentHashMap<>();

  private IndexOnWrite() {}

  /**
   * Waits (at most the write's timeout) for the hand-offs under way for {@code table} ({@link HshTable#name}), so a
   * prune request sent after a write of this driver sees its files indexed. Never throws: the wait is only for
   * pruning, a file the index lacks is read anyway.
   */
  static void awaitPending(String table) {
    Pending pending = PENDING.get(table);
    if (pending == null || pending.done.isDone()) return;
    long start = System.nanoTime();
    try {
      pending.done.get(pending.timeoutMs, TimeUnit.MILLISECONDS);
    } catch (TimeoutException | ExecutionException e) {
      LOG.info("hsh: not waiting longer for the write into {} to be indexed: this query reads its files", table);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      Timings.record("awaited_index_on_write", table, start);
    }
  }

  /**
   * At the driver's exit (the prune service's shutdown hook, before it stops its processes): the hand-offs under
   * way get their time to commit. Were they cut short nothing would be lost, only indexed later.
   */
  static void awaitAll() {
    for (String table : List.copyOf(PENDING.keySet())) awaitPending(table);
  }

  private static boolean async(SparkSession session) {
    return Contract.switchSetting(session, Contract.SETTING_INDEX_ON_WRITE_ASYNC, true);
  }

  /** Whether writes in {@code session} are indexed at commit. */
  static boolean enabled(SparkSession session) {
    return Contract.switchSetting(session, Contract.SETTING_INDEX_ON_WRITE, true);
  }

  /** Whether dynamic partitions are observed while writing (see {@link Observe}). */
  static boolean observe(SparkSession session) {
    return Contract.switchSetting(session, Contract.SETTING_OBSERVE_PARTITIONS, true);
  }

  /**
   * Runs {@code write}; once it returned, indexes what it wrote into {@code target}. {@code observed} gives the
   * dynamic partitions written (null: not observed). A throwing write propagates untouched and indexes nothing.
   */
  static <T> T around(SparkSession session, WriteTarget target, Supplier<T> write,
      Supplier<List<Map<String, String>>> observed) {
    T result = write.get();
    TableWrites.wrote(target.table); // queries planned before it must not use answers made before it
    long start = System.nanoTime();
    try {
      // built here, on the statement's thread: its session settings and the partitions it observed
      ObjectNode request = request(session, target, observed);
      if (request == null) return result; // no row written to any partition: nothing changed
      String table = request.get(Contract.indexRequest("table")).get(Contract.table("name")).asText();
      long timeout = timeoutMs(session, target.name());
      if (async(session)) {
        handOff(session, table, request, timeout);
      } else {
        index(session, table, request, timeout);
      }
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) { // Scala throws checked exceptions undeclared: everything else is only logged
      warn(target.name(), e);
    } finally {
      Timings.record("index_on_write", target.name(), start);
    }
    return result;
  }

  private static void warn(String table, Throwable e) {
    LOG.warn("hsh: the write into {} succeeded, but its files are not indexed yet ({}); queries read them until "
        + "`hsh index refresh {}` (or a running `hsh follow`) indexes them", table, oneLine(e), table);
  }

  /** Queues the request after the table's earlier hand-offs; a failure is the same one warning as a sync one. */
  private static void handOff(SparkSession session, String table, ObjectNode request, long timeoutMs) {
    Pending next = PENDING.compute(table, (t, before) -> {
      CompletableFuture<Void> after = before == null ? CompletableFuture.completedFuture(null)
          : before.done.handle((v, e) -> null);
      return new Pending(after.thenRunAsync(() -> {
        long start = System.nanoTime();
        try {
          index(session, table, request, timeoutMs);
        } catch (RuntimeException e) {
          warn(table, e);
        } finally {
          Timings.record("index_on_write_background", table, start);
        }
      }, HANDOFF), timeoutMs);
    });
    next.done.whenComplete((v, e) -> PENDING.remove(table, next));
  }

  /** The threads hand-offs run on: daemons (the shutdown hook, not the threads, keeps the driver for them). */
  private static final java.util.concurrent.Executor HANDOFF = java.util.concurrent.Executors.newCachedThreadPool(
      r -> {
        Thread thread = new Thread(r, "hsh-index-on-write");
        thread.setDaemon(true);
        return thread;
      });

  /** The index request for what {@code target} wrote; null when nothing was written. */
  private static ObjectNode request(SparkSession session, WriteTarget target,
      Supplier<List<Map<String, String>>> observed) {
    ObjectNode request = JsonNodeFactory.instance.objectNode();
    request.put(Contract.indexRequest("op"), "index").put(Contract.indexRequest("contract"), Contract.VERSION);
    HshTable table = HshTable.of(target.table, session);
    request.set(Contract.indexRequest("table"), table.toJson());
    ObjectNode parameters = request.putObject(Contract.indexRequest("parameters"));
    for (Map.Entry<String, String> e : Scala.map(target.table.properties()).entrySet()) {
      if (e.getKey().startsWith("hsh.")) parameters.put(e.getKey(), e.getValue());
    }
    List<Map<String, String>> partitions = written(target, observed);
    if (partitions != null && partitions.isEmpty()) return null;
    if (partitions == null) {
      request.set(Contract.indexRequest("partitions"), null);
      request.set(Contract.indexRequest("prefix"), object(target.prefix()));
    } else {
      ArrayNode list = request.putArray(Contract.indexRequest("partitions"));
      for (Map<String, String> p : partitions) list.add(object(p));
      request.set(Contract.indexRequest("prefix"), null);
    }
    request.put(Contract.indexRequest("command"), target.command);
    return request;
  }

  private static void index(SparkSession session, String table, ObjectNode request, long timeoutMs) {
    long start = System.nanoTime();
    JsonNode answer = PruneService.index(session, request, table, timeoutMs);
    AggregateDecisions.forget(table); // new files: a query declined before may now be worth answering
    LOG.info("hsh: indexed the write into {} in {} ms: {} files listed, {} added, {} changed, {} removed "
        + "(index version {})", table, (System.nanoTime() - start) / 1_000_000,
        Contract.indexAnswer(answer, "files", table).asLong(),
        Contract.indexAnswer(answer, "added", table).asLong(),
        Contract.indexAnswer(answer, "changed", table).asLong(),
        Contract.indexAnswer(answer, "removed", table).asLong(),
        Contract.indexAnswer(answer, "version", table).asText());
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
