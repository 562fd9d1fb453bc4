package hsh.spark;

import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;

/**
 * How many writes this driver has committed into each registered table (and {@code REFRESH TABLE}s issued for it).
 *
 * <p>Why: a query planned before a write and run after it must read what Spark's own read would then. Spark lists
 * a table's files when the query runs, and the write invalidates its caches; but this extension settles some of a
 * query's answer while it is optimized -- the prune request it prefetches (reused by the listing that follows
 * within seconds) and the numbers it answers from the index. Each records the table's count when it was made; a
 * listing that finds the count moved asks again, and an answer from the index that finds it moved refuses to run
 * (its aggregation was planned around numbers that no longer hold: run the query again). Writes by other drivers
 * are not counted: Spark's own read does not see them either until {@code REFRESH TABLE}.
 */
final class TableWrites {
  private static final ConcurrentHashMap<String, AtomicLong> COUNTS = new ConcurrentHashMap<>();

  private TableWrites() {}

  /** The count for a table named {@code db.table} (as {@link HshTable#name}). */
  static long of(String table) {
    AtomicLong count = COUNTS.get(key(table));
    return count == null ? 0 : count.get();
  }

  /** Whether {@code table} was written (or refreshed) since its count was {@code count}; never for -1 (a count
   *  not taken: nothing to check). */
  static boolean since(String table, long count) {
    return count >= 0 && of(table) != count;
  }

  static void wrote(CatalogTable table) {
    wrote(HshTable.nameOf(table));
  }

  static void wrote(String table) {
    COUNTS.computeIfAbsent(key(table), k -> new AtomicLong()).incrementAndGet();
  }

  private static String key(String table) {
    return table.toLowerCase(Locale.ROOT);
  }
}
