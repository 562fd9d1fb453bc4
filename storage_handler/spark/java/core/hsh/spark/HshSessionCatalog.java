package hsh.spark;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalog;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogEvent;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogEventListener;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogWithListener;
import org.apache.spark.sql.catalyst.catalog.TableEvent;
import org.apache.spark.sql.connector.catalog.DelegatingCatalogExtension;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.V1Table;
import org.apache.spark.sql.hive.HiveExternalCatalog;
import org.apache.spark.sql.hive.client.RawHiveTable;
import org.apache.spark.sql.internal.SQLConf;
import scala.Option;

/**
 * {@code spark.sql.catalog.spark_catalog=hsh.spark.HshSessionCatalog}: Spark's own session catalog, except that a
 * registered table's definition is re-used across queries for as long as the metastore still holds exactly the
 * same table.
 *
 * <p>Why: resolving a table's name costs every query one metastore {@code get_table}, its conversion into Spark's
 * {@code CatalogTable} and, from Spark 4.0, a search for a data source named after the table's provider; for a
 * point lookup that is about a tenth of the query (issue 30, {@code benchmarks/results/overhead.md}). Here a
 * registered table costs one {@code get_table} through Spark's own Hive client (so Kerberos and the session's
 * metastore settings apply as for every other call) and a comparison of the metastore's table object with the one
 * the cached definition was made from; any difference (an {@code ALTER}, new statistics, a new location, a
 * drop and re-create) and any change of the session's settings loads the definition afresh from Spark's catalog.
 * Nothing is stale: the check is the very call Spark would make, only its conversion is skipped.
 *
 * <p>{@code spark.hsh.tableDefinition.recheckSeconds} (default 0: every query checks) lets a definition checked
 * less than that long ago be used without asking the metastore: the one round trip left is then saved too, and a
 * change another process makes is seen within that many seconds. A change this driver makes (any {@code ALTER},
 * {@code DROP}, {@code CREATE}, statistics from a write; every session of the driver) drops the definition at
 * once, through Spark's catalog events, so a session always reads what it just wrote.
 *
 * <p>Only tables carrying the handler's parameter are cached, and only after one query found them so: every other
 * table costs exactly what it costs without this class. A metastore client from another class loader
 * ({@code spark.sql.hive.metastore.jars} set to other jars) has table objects this class cannot compare: then
 * nothing is cached. A session that sets its own {@code spark_catalog} (Delta's, Iceberg's) keeps it; the handler
 * prunes there all the same, only without this saving.
 */
public final class HshSessionCatalog extends DelegatingCatalogExtension {
  /**
   * Per registered table: its definition and what it was made from ({@link #NONE}: found registered, none held).
   * One map for the driver, not one per session: a Thrift server opens a session per connection, and a definition
   * made in one session serves another only under the very same settings.
   */
  private static final Map<String, Entry> HELD = new ConcurrentHashMap<>();
  private static final Entry NONE = new Entry(null, null, null, 0);
  /** Whether this driver's catalog changes reach {@link #HELD} (without them no check is ever skipped). */
  private static final AtomicBoolean LISTENING = new AtomicBoolean();
  /** The handler's own settings' prefix: none of them changes how Spark reads a table's definition. */
  private static final String HANDLER_SETTINGS = "spark.hsh.";

  private static final class Entry {
    final Object metastoreTable; // the metastore's thrift Table the definition was made from
    final Map<String, String> settings; // the session's settings it was made under (the handler's own aside)
    final Table table;
    final long checkedNanos; // when the metastore last held exactly metastoreTable

    Entry(Object metastoreTable, Map<String, String> settings, Table table, long checkedNanos) {
      this.metastoreTable = metastoreTable;
      this.settings = settings;
      this.table = table;
      this.checkedNanos = checkedNanos;
    }
  }

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    if (ident.namespace().length != 1) return super.loadTable(ident);
    String key = key(ident.namespace()[0], ident.name());
    if (!HELD.containsKey(key)) {
      listen();
      Table table = super.loadTable(ident);
      if (isHandled(table)) HELD.put(key, NONE);
      return table;
    }
    long start = System.nanoTime();
    long recheck = recheckNanos();
    Map<String, String> settings = settings();
    Entry entry = HELD.get(key);
    // a definition made under these settings, if one is held
    Entry usable = entry != null && entry != NONE && settings.equals(entry.settings) ? entry : null;
    if (usable != null && LISTENING.get() && start - usable.checkedNanos < recheck) {
      Timings.record("table_definition", key, start, "reused", 1, "checked", 0);
      return usable.table;
    }
    Object now = metastoreTable(ident.namespace()[0], ident.name());
    if (usable != null && usable.metastoreTable.equals(now)) {
      HELD.replace(key, usable, new Entry(now, settings, usable.table, start));
      Timings.record("table_definition", key, start, "reused", 1, "checked", 1);
      return usable.table;
    }
    // the metastore's object is read before Spark's: a change between the two reads makes the next check miss
    Table table = super.loadTable(ident);
    if (now != null && isHandled(table)) {
      HELD.put(key, new Entry(now, settings, table, start));
    } else {
      HELD.remove(key);
    }
    Timings.record("table_definition", key, start, "reused", 0, "checked", 1);
    return table;
  }

  /** Whether this driver has found {@code db.table} registered (resolved it through this catalog before). */
  static boolean holds(String db, String table) {
    return HELD.containsKey(key(db, table));
  }

  /** Whether {@link #holds} can be true for any table (a cheap test before looking at a statement's names). */
  static boolean holdsAny() {
    return !HELD.isEmpty();
  }

  /**
   * The session's settings a definition depends on: all but the handler's own ({@code spark.hsh.*}, which never
   * change how Spark reads a table's definition), so that toggling one of those does not make the definition anew.
   */
  private static Map<String, String> settings() {
    Map<String, String> out = new java.util.HashMap<>();
    for (Map.Entry<String, String> kv : Scala.map(SQLConf.get().getAllConfs()).entrySet()) {
      if (!kv.getKey().startsWith(HANDLER_SETTINGS)) out.put(kv.getKey(), kv.getValue());
    }
    return out;
  }

  private static String key(String db, String table) {
    return db.toLowerCase(java.util.Locale.ROOT) + "." + table.toLowerCase(java.util.Locale.ROOT);
  }

  /** {@code spark.hsh.tableDefinition.recheckSeconds} in nanoseconds; 0 (every query checks) when not set. */
  private static long recheckNanos() {
    String value = SQLConf.get().getConfString(Contract.SETTING_DEFINITION_RECHECK, "0").trim();
    try {
      double seconds = Double.parseDouble(value);
      if (seconds >= 0) return (long) (seconds * 1e9);
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new IllegalArgumentException("hsh: " + Contract.SETTING_DEFINITION_RECHECK + " is '" + value
        + "'; set it to a number of seconds (0: check the table's definition in the metastore for every query)");
  }

  /**
   * Drops a held definition whenever this driver changes the table (or its database) through Spark's catalog:
   * registered once per driver, on the first lookup.
   */
  private static void listen() {
    if (LISTENING.get()) return;
    Option<SparkSession> active = SparkSession.getActiveSession();
    if (active.isEmpty()) return;
    ExternalCatalog catalog = active.get().sharedState().externalCatalog();
    if (!(catalog instanceof ExternalCatalogWithListener) || !LISTENING.compareAndSet(false, true)) return;
    ((ExternalCatalogWithListener) catalog).addListener(new ExternalCatalogEventListener() {
      @Override
      public void onEvent(ExternalCatalogEvent event) {
        if (event instanceof TableEvent) {
          HELD.remove(key(((TableEvent) event).database(), ((TableEvent) event).name()));
        } else {
          HELD.clear(); // a database created, altered or dropped: start over
        }
      }
    });
  }

  private static boolean isHandled(Table table) {
    return table instanceof V1Table && HshTable.isHandled(((V1Table) table).v1Table());
  }

  /**
   * The metastore's table object through Spark's Hive client (one {@code get_table}), or null when there is none
   * to compare: no such table, no Hive catalog, or a client whose classes this class loader cannot see.
   */
  private static Object metastoreTable(String db, String name) {
    Option<SparkSession> active = SparkSession.getActiveSession();
    if (active.isEmpty()) return null;
    ExternalCatalog catalog = active.get().sharedState().externalCatalog().unwrapped();
    if (!(catalog instanceof HiveExternalCatalog)) return null;
    Option<RawHiveTable> raw = ((HiveExternalCatalog) catalog).client().getRawHiveTableOption(db, name);
    if (raw.isEmpty()) return null;
    Object table = raw.get().rawTable();
    if (!(table instanceof org.apache.hadoop.hive.ql.metadata.Table)) return null;
    return Objects.requireNonNull(((org.apache.hadoop.hive.ql.metadata.Table) table).getTTable());
  }
}
