package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;

/**
 * Sends the prune request of an aggregate the index may answer as soon as the query is analyzed, for
 * {@link AggregateRule} to take when the optimizer reaches it.
 *
 * <p>Why: the rule needs the handler's answer to choose the plan, so it waits for it inside the optimizer -- about
 * 8-12 ms of a year's count answered in ~40 ms ({@code benchmarks/results/aggregates.md}). Sent at the end of
 * analysis, the request runs while Spark returns the DataFrame, the action starts and the optimizer's first
 * batches run (5-7 ms), and the rule waits only for the rest.
 *
 * <p>Exact by construction: the request is the one the rule would send ({@link AggregateQuery#of} on the
 * analyzed plan, the conjuncts without the {@code IsNotNull} the optimizer infers, {@link ImpliedNotNull}), and
 * the rule takes an answer only under its own decision key (table, limits, the whole request, the conjuncts
 * evaluated on this side). When the optimizer changed the query otherwise, the keys differ and the rule asks
 * itself, as before; the early answer expires unused. An answer is taken once, and only within
 * {@link #FRESH_NANOS} of being asked: the time between a query's analysis and its optimization, as for
 * {@link HshFileIndex}'s own prefetch; a refresh of the table or a write of this driver into it drops it
 * ({@link #forget}). Nothing is sent for a query the rule recently declined
 * ({@link AggregateDecisions}), while a plan is only read for its filters ({@code read_table}), or with
 * {@code spark.hsh.aggregates=false}.
 */
final class EarlyAggregateRequest extends Rule<LogicalPlan> {
  static final long FRESH_NANOS = 5_000_000_000L;
  private static final int CAPACITY = 16; // an answer lists every kept file: few are held, none for long

  /** Requests sent, by decision key: the answer under way and when it was asked. */
  private static final Map<String, Sent> SENT = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Sent> eldest) {
      return size() > CAPACITY;
    }
  };

  private static final class Sent {
    final CompletableFuture<JsonNode> answer;
    final long nanos = System.nanoTime();

    Sent(CompletableFuture<JsonNode> answer) {
      this.answer = answer;
    }
  }

  private final SparkSession session;

  EarlyAggregateRequest(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!"true".equalsIgnoreCase(session.conf().get(Contract.SETTING_AGGREGATES, "true").trim())
        || !HshFileIndex.prefetching()) {
      return plan;
    }
    try {
      for (LogicalPlan node : Scala.list(plan.collect(new scala.runtime.AbstractPartialFunction<LogicalPlan,
          LogicalPlan>() {
            @Override
            public boolean isDefinedAt(LogicalPlan p) {
              return p instanceof Aggregate;
            }

            @Override
            public LogicalPlan apply(LogicalPlan p) {
              return p;
            }
          }))) {
        AggregateQuery p = AggregateQuery.of(session, (Aggregate) node, true);
        if (p != null && !AggregateDecisions.recentlyDeclined(p.decision)) send(p);
      }
    } catch (Exception e) { // only an early start: whatever fails here, the rule asks itself (Scala's checked too)
      Timings.record("aggregate_early_request_failed", "", System.nanoTime());
    }
    return plan;
  }

  private void send(AggregateQuery p) {
    synchronized (SENT) {
      long now = System.nanoTime();
      SENT.values().removeIf(sent -> now - sent.nanos >= FRESH_NANOS); // expired unused: the optimizer asked anew
      Sent held = SENT.get(p.decision);
      if (held != null && System.nanoTime() - held.nanos < FRESH_NANOS) return; // asked already
      SparkSession s = session; // captured: the request runs on another thread
      String table = p.index.table().name;
      long start = System.nanoTime();
      SENT.put(p.decision, new Sent(CompletableFuture.supplyAsync(() -> {
        JsonNode answer = PruneService.call(s, p.scanRequest, table);
        Timings.record("aggregate_early_request", table, start);
        return answer;
      }, HshFileIndex.PREFETCH)));
    }
  }

  /** Drops what was asked about {@code table} (its files changed: a write of this driver, a refresh). */
  static void forget(String table) {
    synchronized (SENT) {
      SENT.keySet().removeIf(key -> key.startsWith(table + " "));
    }
  }

  /** The answer sent early under {@code decision}, once, if it was asked less than {@link #FRESH_NANOS} ago. */
  static CompletableFuture<JsonNode> take(String decision) {
    synchronized (SENT) {
      Sent held = SENT.remove(decision);
      return held != null && System.nanoTime() - held.nanos < FRESH_NANOS ? held.answer : null;
    }
  }
}
