package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The file index of a registered table: Spark's native Parquet scan asks it for files and it answers with the
 * files the handler keeps ({@code list_status} on the Python side, asked through the {@link Contract}'s scan
 * request for the {@link HshTable}).
 *
 * <p>Pruning predicates are the ones Spark passes to {@link #listFiles} plus the full conditions of the query's
 * filter above the scan ({@link #withQueryFilters}): Spark splits its own arguments into partition-only and
 * data-only predicates, which loses an OR across a partition column and a data column. Spark re-applies the
 * data predicates to the rows read, so for them pruning only decides which files to open. Partition-only
 * predicates it does not re-apply: it takes the partitions listed as matching, so {@link PartitionPredicate}
 * evaluates those exactly on the handler's answer.
 *
 * <p>{@link #sizeInBytes} (Spark's size estimate, used to choose broadcast joins) is the size of the files the
 * query filters keep, not of the whole table.
 *
 * <p>One pruning per query, started early: when {@link QueryFilterRule} hands the index its query's filters (in
 * the optimizer), the prune request is sent at once on a background thread, so the handler's listing and
 * statistics run while Spark finishes optimizing and planning; the size estimate and the listing that follow
 * take that answer (same predicates, within {@link #REUSE_NANOS}) instead of asking again, the listing once.
 * Nothing is cached across queries, also not across actions on one DataFrame (which share this index when no
 * filter sits above the scan): every query lists storage and reads the current index. One bounded exception: an
 * answer asked for while a plan is made before its action (the Thrift server logs each statement's plan before
 * running it; {@code explain}; a size estimate read from a DataFrame's query execution) is taken by that plan's
 * listing within {@link #REUSE_NANOS}. Spark's SQL execution id cannot separate the Thrift server's one query
 * from a DataFrame planned now and run later: the statement is planned before its execution id exists.
 */
public final class HshFileIndex extends FileIndexBase {
  private static final Logger LOG = LoggerFactory.getLogger(HshFileIndex.class);

  private final transient SparkSession session;
  private final HshTable table;
  private final List<Expression> queryFilters;
  private final JsonNode fixedFiles; // files chosen before the query was built (read_table), else null
  private final String note; // what EXPLAIN adds to the index's name (files answered from the index), or null
  private volatile Long sizeInBytes;
  // the answer (or the one under way) of this query's size estimate or prefetch, for its listing to take once
  private volatile Recent recent;

  /** An answer (possibly still under way) and the canonical predicates it was asked for. */
  private static final class Recent {
    final Set<Expression> predicates;
    final CompletableFuture<JsonNode> answer;
    final long nanos = System.nanoTime();
    final long writes; // TableWrites' count when it was asked

    Recent(Set<Expression> predicates, CompletableFuture<JsonNode> answer, long writes) {
      this.predicates = predicates;
      this.answer = answer;
      this.writes = writes;
    }
  }

  /** Threads that send prefetched prune requests (daemons: a driver never waits for them to exit). */
  private static final ExecutorService PREFETCH = Executors.newCachedThreadPool(runnable -> {
    Thread thread = new Thread(runnable, "hsh-prune-prefetch");
    thread.setDaemon(true);
    return thread;
  });

  /** How long an answer may be reused: the time between Spark's size estimate and its listing, not longer. */
  static final long REUSE_NANOS = 5_000_000_000L;

  private HshFileIndex(SparkSession session, HshTable table, List<Expression> queryFilters, JsonNode fixedFiles,
      String note) {
    this.session = session;
    this.table = table;
    this.queryFilters = List.copyOf(queryFilters);
    this.fixedFiles = fixedFiles;
    this.note = note;
  }

  /** The index of a table scanned by a query: it asks the prune service on every listing. */
  static HshFileIndex pruning(SparkSession session, HshTable table) {
    return new HshFileIndex(session, table, List.of(), null, null);
  }

  /** An index answering with {@code files} (a prune-service answer's list), whatever the filters. */
  static HshFileIndex fixed(SparkSession session, HshTable table, JsonNode files) {
    return new HshFileIndex(session, table, List.of(), files, null);
  }

  boolean isFixed() {
    return fixedFiles != null;
  }

  /**
   * This index pruning also by {@code filters} (conjuncts of the filter directly above the scan); its answer for
   * them is requested at once (see the class comment).
   */
  HshFileIndex withQueryFilters(List<Expression> filters) {
    HshFileIndex index = filtered(filters, note);
    if (fixedFiles == null && !filters.isEmpty() && !NO_PREFETCH.get()) index.prefetch();
    return index;
  }

  /** This index with other query filters (and {@code note}), keeping what its fixed files' answer is checked by. */
  private HshFileIndex filtered(List<Expression> filters, String note) {
    HshFileIndex index = new HshFileIndex(session, table, filters, fixedFiles, note);
    index.answeredAt = answeredAt;
    index.asked = asked;
    index.keptAtPlanning = keptAtPlanning;
    return index;
  }

  /** Set while a plan is optimized only to read its filters (read_table's): no scan follows, so none is sent. */
  private static final ThreadLocal<Boolean> NO_PREFETCH = ThreadLocal.withInitial(() -> false);

  /** {@code work}'s result, with no prune request prefetched while it runs (see {@link #NO_PREFETCH}). */
  static <T> T withoutPrefetch(java.util.function.Supplier<T> work) {
    boolean before = NO_PREFETCH.get();
    NO_PREFETCH.set(true);
    try {
      return work.get();
    } finally {
      NO_PREFETCH.set(before);
    }
  }

  /** Send the prune request for the query filters now, on a background thread; its answer becomes recent. */
  private void prefetch() {
    Map<Expression, Expression> predicates = canonical(queryFilters, List.of(), List.of());
    long start = System.nanoTime();
    long writes = TableWrites.of(table.name);
    CompletableFuture<JsonNode> answer = CompletableFuture.supplyAsync(() -> {
      // built on this thread, off the optimizer's path: the request reads the session's settings explicitly
      // (FilterJson, Prunable), not the thread's
      ObjectNode request = ScanRequest.of(session, table, predicates.values(), true);
      JsonNode found = PruneService.call(session, request, table.name);
      Timings.record("prefetch", table.name, start);
      return found;
    }, PREFETCH);
    recent = new Recent(Set.copyOf(predicates.keySet()), answer, writes);
  }

  /** Predicates by canonical form, no leaf twice, in the order given. */
  private static Map<Expression, Expression> canonical(List<Expression> first, List<Expression> second,
      List<Expression> third) {
    Map<Expression, Expression> predicates = new LinkedHashMap<>();
    for (List<Expression> group : List.of(first, second, third)) {
      for (Expression e : group) predicates.putIfAbsent(e.canonicalized(), e);
    }
    return predicates;
  }

  List<Expression> queryFilters() {
    return queryFilters;
  }

  @Override
  List<Path> rootPathList() {
    return List.of(new Path(table.location));
  }

  @Override
  List<PartitionDirectory> listPartitions(List<Expression> exact, List<Expression> dataFilters) {
    long start = System.nanoTime();
    try {
      return listed(exact, dataFilters);
    } finally {
      Timings.record("list_files", table.name, start);
    }
  }

  private List<PartitionDirectory> listed(List<Expression> exact, List<Expression> dataFilters) {
    if (fixedFiles != null) {
      if (TableWrites.since(table.name, answeredAt) && !keptAsPlanned()) checkUnwritten(table.name, answeredAt);
      return keep(AnswerFiles.partitions(session, table, fixedFiles), exact);
    }
    JsonNode answer = scanOrReuse(canonical(queryFilters, exact, dataFilters), true);
    JsonNode m = Contract.answer(answer, "metrics", table.name);
    LOG.info("hsh scan {}: kept {}/{} files, {}/{} bytes for {}", table, metric(m, "files_kept"),
        metric(m, "files_total"), metric(m, "bytes_kept"), metric(m, "bytes_total"),
        Contract.metric(m, "sarg", table.name).asText());
    return keep(AnswerFiles.partitions(session, table, Contract.answer(answer, "files", table.name)), exact);
  }

  /** Spark re-applies no partition-only predicate to rows: the partitions listed must match exactly. */
  private List<PartitionDirectory> keep(List<PartitionDirectory> dirs, List<Expression> partitionFilters) {
    return PartitionPredicate.matching(dirs, partitionFilters, table.partitionSchema);
  }

  @Override
  public String[] inputFiles() {
    JsonNode files = fixedFiles != null ? fixedFiles
        : Contract.answer(scan(List.of(), false), "files", table.name);
    String[] paths = new String[files.size()];
    for (int i = 0; i < paths.length; i++) paths[i] = Contract.fileField(files.get(i), "uri", table.name).asText();
    return paths;
  }

  @Override
  public void refresh() {
    sizeInBytes = null; // every listing reads storage; only the size (and an answer for a few seconds) is kept
    recent = null;
    TableWrites.wrote(table.name); // REFRESH TABLE, or Spark after a write: nothing asked before it holds
    AggregateDecisions.forget(table.name);
  }

  /**
   * The answer for {@code predicates} (keyed by canonical form): the size estimate's own answer, or the prefetched
   * one, when the {@code listing} that follows it within {@link #REUSE_NANOS} asks for the same predicates (one
   * pruning per query, not two), else a fresh one. A listing takes the held answer once: the next listing of this
   * index belongs to the next query (a DataFrame acted on again), which must see storage as it is then. Every
   * answer is recorded in the scan log.
   */
  private JsonNode scanOrReuse(Map<Expression, Expression> predicates, boolean listing) {
    Recent last = recent;
    if (last != null && System.nanoTime() - last.nanos < REUSE_NANOS && last.predicates.equals(predicates.keySet())
        && !TableWrites.since(table.name, last.writes)) {
      if (listing) recent = null;
      long start = System.nanoTime();
      try {
        return last.answer.join();
      } catch (CompletionException e) {
        if (e.getCause() instanceof RuntimeException) throw (RuntimeException) e.getCause();
        throw e;
      } finally {
        Timings.record("answer_reused", table.name, start); // the time this call waited for it
      }
    }
    long writes = TableWrites.of(table.name);
    JsonNode answer = scan(predicates.values(), true);
    if (!listing) {
      recent = new Recent(Set.copyOf(predicates.keySet()), CompletableFuture.completedFuture(answer), writes);
    }
    return answer;
  }

  @Override
  public long sizeInBytes() {
    Long size = sizeInBytes;
    if (size == null) {
      long start = System.nanoTime();
      if (fixedFiles != null) {
        long sum = 0;
        for (JsonNode f : fixedFiles) sum += Contract.fileField(f, "bytes", table.name).asLong();
        size = sum;
      } else {
        // the bytes the query will read: with the query's filters attached, a selective scan of a big table
        // looks small to join planning (broadcast) as it will be; without filters, every file
        size = metric(Contract.answer(scanOrReuse(canonical(queryFilters, List.of(), List.of()), false), "metrics",
            table.name), "bytes_kept");
      }
      sizeInBytes = size;
      Timings.record("size_in_bytes", table.name, start);
    }
    return size;
  }

  @Override
  public StructType partitionSchema() {
    return table.partitionSchema;
  }

  private long metric(JsonNode metrics, String name) {
    return Contract.metric(metrics, name, table.name).asLong();
  }

  /**
   * This index pruning also by {@code filters}, with the answer for them -- including which files the index
   * answers {@code aggregate} for -- asked now (the optimizer shapes the plan by it); the listing reuses it.
   */
  HshFileIndex withAggregateAnswer(List<Expression> filters, ObjectNode request) {
    HshFileIndex index = filtered(filters, null);
    Map<Expression, Expression> predicates = canonical(filters, List.of(), List.of());
    long writes = TableWrites.of(table.name);
    JsonNode answer = PruneService.call(session, request, table.name);
    index.recent = new Recent(Set.copyOf(predicates.keySet()), CompletableFuture.completedFuture(answer), writes);
    return index;
  }

  /** The scan request {@link #withAggregateAnswer} sends for {@code filters} and {@code aggregate}. */
  ObjectNode aggregateRequest(List<Expression> filters, ObjectNode aggregate) {
    return ScanRequest.of(session, table, canonical(filters, List.of(), List.of()).values(), true, aggregate);
  }

  /** The answer this index holds for its own query filters (after {@link #withAggregateAnswer}), else null. */
  JsonNode heldAnswer() {
    Recent last = recent;
    return last == null ? null : last.answer.getNow(null);
  }

  /**
   * An index over exactly {@code files}, the files an answer from the index left to read ({@code note} describes
   * them in plans, {@code EXPLAIN}); {@code writes}: {@link TableWrites}' count when that answer was asked, from
   * {@code asked}, keeping {@code kept}. A listing after a write into the table from this driver (or a refresh)
   * asks again, and refuses when the table no longer keeps those files: the rest of the answer is no longer true.
   */
  static HshFileIndex answeredRest(SparkSession session, HshTable table, JsonNode files, String note, long writes,
      ObjectNode asked, JsonNode kept) {
    HshFileIndex index = new HshFileIndex(session, table, List.of(), files, note);
    index.answeredAt = writes;
    index.asked = asked.deepCopy().put(Contract.request("record"), false);
    index.keptAtPlanning = kept;
    return index;
  }

  /** {@link TableWrites}' count when the answer this index's fixed files come from was asked; -1: not checked. */
  private long answeredAt = -1;

  /** The request that answer came from (not recorded as a scan), and every file it kept (answered or left). */
  private ObjectNode asked;

  private JsonNode keptAtPlanning;

  /**
   * Whether the table, asked again now, keeps exactly the files the answer was planned on (same paths, sizes and
   * modification times), after a write or {@code REFRESH TABLE} counted since: then the index's numbers and the
   * files left still describe the table, and the query runs. Why ask rather than refuse at once: a Thrift server or
   * a notebook runs statements from many threads, and a refresh or a write into another partition in between
   * failed queries whose answer had not changed (plain Spark never fails there).
   */
  private boolean keptAsPlanned() {
    if (asked == null || keptAtPlanning == null) return false;
    long writes = TableWrites.of(table.name);
    JsonNode again = Contract.answer(PruneService.call(session, asked, table.name), "files", table.name);
    if (!again.equals(keptAtPlanning)) return false;
    answeredAt = writes; // checked against this count: a later listing of this plan asks only after another write
    return true;
  }

  /** Refuses a query whose answer from the index was asked before a write into the table (see TableWrites). */
  static void checkUnwritten(String table, long writes) {
    if (TableWrites.since(table, writes)) {
      throw new IllegalStateException("hsh: " + table + " was written after this query was planned, and part of "
          + "its answer came from the index at planning; run the query again (plan it anew: spark.sql(...) or the "
          + "DataFrame built again), or set spark.hsh.aggregates=false to plan such queries without the index");
    }
  }

  /** The {@link TableWrites} count the held answer was asked at (after {@link #withAggregateAnswer}). */
  long heldAnswerWrites() {
    Recent last = recent;
    return last == null ? -1 : last.writes;
  }

  HshTable table() {
    return table;
  }

  private JsonNode scan(Collection<Expression> predicates, boolean record) {
    return PruneService.call(session, ScanRequest.of(session, table, predicates, record), table.name);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof HshFileIndex)) return false;
    HshFileIndex other = (HshFileIndex) o;
    return table.equals(other.table) && queryFilters.equals(other.queryFilters)
        && Objects.equals(fixedFiles, other.fixedFiles) && answeredAt == other.answeredAt;
  }

  @Override
  public int hashCode() {
    return Objects.hash(table, queryFilters, fixedFiles, answeredAt);
  }

  @Override
  public String toString() {
    return "HshFileIndex(" + table + (note == null ? "" : "; " + note) + ")";
  }
}
