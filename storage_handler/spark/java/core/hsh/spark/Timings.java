package hsh.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Where the driver's time goes when it plans a scan of a registered table: each step the extension takes
 * (resolving the table, each file-index call, each prune-service round trip with its bytes, turning an answer into
 * Spark's partitions) is recorded with its duration, so a benchmark can account for every millisecond a query
 * spends beyond reading its files ({@code benchmarks/bench_overhead.py}, through {@link #drain}).
 *
 * <p>A bounded ring (the newest {@value #CAPACITY} steps): recording costs a synchronized append, and a driver
 * nobody drains keeps no more than that. A JVM that nothing can drain (a Thrift server) also appends each step
 * as a JSON line to the file {@code $HSH_TIMINGS_LOG} names, when it is set.
 */
public final class Timings {
  private static final int CAPACITY = 4096;
  private static final Deque<ObjectNode> STEPS = new ArrayDeque<>();
  private static final String LOG = System.getenv("HSH_TIMINGS_LOG");

  private Timings() {}

  /**
   * A step named {@code step} for {@code table} that started at {@code startNanos} ({@link System#nanoTime}), with
   * {@code details} as name, number pairs.
   */
  static void record(String step, String table, long startNanos, Object... details) {
    ObjectNode event = JsonNodeFactory.instance.objectNode().put("step", step).put("table", table)
        .put("ms", (System.nanoTime() - startNanos) / 1e6).put("thread", Thread.currentThread().getName());
    for (int i = 0; i + 1 < details.length; i += 2) {
      event.put((String) details[i], ((Number) details[i + 1]).doubleValue());
    }
    synchronized (STEPS) {
      if (STEPS.size() == CAPACITY) STEPS.removeFirst();
      STEPS.addLast(event);
    }
    if (LOG != null && !LOG.isEmpty()) append(event);
  }

  /** The step as one line of {@code $HSH_TIMINGS_LOG}; a benchmark aid, so a failure to write is ignored. */
  private static void append(ObjectNode event) {
    try {
      java.nio.file.Files.writeString(java.nio.file.Path.of(LOG), event.toString() + "\n",
          java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
    } catch (java.io.IOException | RuntimeException ignored) {
      // measurement only: never fail a query over it
    }
  }

  /** Every step recorded since the last call, oldest first, as a JSON array; the record is emptied. */
  public static String drain() {
    ArrayNode out = JsonNodeFactory.instance.arrayNode();
    synchronized (STEPS) {
      out.addAll(STEPS);
      STEPS.clear();
    }
    return out.toString();
  }
}
