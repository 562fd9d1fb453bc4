package hsh.spark;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The queries {@link AggregateRule} recently found not worth rewriting, so that running one again plans exactly as
 * with the feature off: its prune request sent by {@link QueryFilterRule}'s prefetch, overlapped with the rest of
 * planning, instead of awaited inside the optimizer (about 15 ms on a one-month TPC-H count;
 * {@code benchmarks/results/aggregates.md}).
 *
 * <p>Only a choice of plan is remembered, never an answer: reading files instead of taking their numbers from the
 * index is always correct, so an entry that has gone stale (data added since) can only cost the rewrite's gain for
 * a while, never change a result. The key is the table's name, the limits in force and the whole scan request
 * (table, location, schema, filters, the aggregates asked for; kept as a digest). A table's decisions are forgotten when Spark
 * refreshes its file index ({@code REFRESH TABLE}, a write through Spark) and when a handler session's write has
 * been indexed; the rest expire after {@link #TTL_NANOS}. At most {@link #CAPACITY} are kept, least recently used
 * dropped first.
 */
public final class AggregateDecisions {
  /** How long a decision not to rewrite stands: dashboards repeat queries within seconds to minutes. */
  static final long TTL_NANOS = 60_000_000_000L;

  private static final int CAPACITY = 1024;

  private static final Map<String, Long> DECLINED = new LinkedHashMap<>(64, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
      return size() > CAPACITY;
    }
  };

  private AggregateDecisions() {}

  /**
   * The key of a query over {@code table}: the limits in force (the threshold, the driver's bytes and rows) and the
   * scan request decide the choice. The request (a wide table's columns make it tens of KB) is kept as its SHA-256
   * digest.
   */
  static String key(String table, String limits, Object request) {
    try {
      MessageDigest digest = MessageDigest.getInstance("SHA-256");
      byte[] hash = digest.digest((limits + " " + request).getBytes(StandardCharsets.UTF_8));
      return table + " " + Base64.getEncoder().encodeToString(hash);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("hsh: this JVM has no SHA-256", e); // every Java platform must have it
    }
  }

  /** True when the query keyed {@code key} was declined less than {@link #TTL_NANOS} ago. */
  static boolean recentlyDeclined(String key) {
    synchronized (DECLINED) {
      Long when = DECLINED.get(key);
      if (when == null) return false;
      if (System.nanoTime() - when < TTL_NANOS) return true;
      DECLINED.remove(key);
      return false;
    }
  }

  /** Remember that the query keyed {@code key} was not worth rewriting. */
  static void declined(String key) {
    synchronized (DECLINED) {
      DECLINED.put(key, System.nanoTime());
    }
  }

  /** Forget the decisions about {@code table} (its files changed, or may have). */
  static void forget(String table) {
    String prefix = table + " ";
    synchronized (DECLINED) {
      DECLINED.keySet().removeIf(k -> k.startsWith(prefix));
    }
  }

  /** Forget every decision (a test's clean slate). */
  public static void clear() {
    synchronized (DECLINED) {
      DECLINED.clear();
    }
  }
}
