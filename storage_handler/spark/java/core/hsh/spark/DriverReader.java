package hsh.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.datasources.FileFormat$;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Function1;

/**
 * Reads the handler's fixed file list in the driver, with the relation's own format as a scan task reads it
 * ({@code FileFormat.buildReaderWithPartitionValues}: the needed data columns, then the partition values), for
 * {@link IndexAnswer}.
 *
 * <p>Why the reader is kept between queries: building it broadcasts the Hadoop configuration, 10-20 ms on a
 * 2-core machine -- a third of a year's count answered from the index. It is kept under everything it is built
 * from: the Spark context (its broadcast lives there), the format, the three schemas, the relation's options,
 * every SQL setting of the session and every entry of the context's Hadoop configuration. A change to any of
 * them builds a new one; the 16 most recently used are kept. Which files are read is never kept.
 */
final class DriverReader {
  private DriverReader() {}

  private static final int KEPT = 16;
  private static final Map<List<Object>, Function1<PartitionedFile, scala.collection.Iterator<InternalRow>>> READERS =
      Collections.synchronizedMap(new LinkedHashMap<>(KEPT, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<List<Object>,
            Function1<PartitionedFile, scala.collection.Iterator<InternalRow>>> eldest) {
          return size() > KEPT;
        }
      });

  /** The rows of {@code scan} (over a fixed {@link HshFileIndex}) in its output's order; columns whose
   *  expression ids are not in {@code needed} are not read (null). {@code counts[0]} counts the rows read,
   *  {@code counts[1]} the readers built (not found kept); {@code make} makes the row's projection. */
  static Iterator<InternalRow> rows(SparkSession session, LogicalRelation scan, Set<Long> needed,
      long[] counts, DriverProjections make) {
    HadoopFsRelation fs = (HadoopFsRelation) scan.relation();
    List<Attribute> output = new ArrayList<>(Scala.list(scan.output()));
    Set<String> partitionNames = new HashSet<>();
    for (StructField f : fs.partitionSchema().fields()) partitionNames.add(f.name().toLowerCase());
    List<StructField> required = new ArrayList<>();
    List<Attribute> layout = new ArrayList<>(); // the reader's row: required data columns, then partition values
    for (Attribute a : output) {
      if (partitionNames.contains(a.name().toLowerCase()) || !needed.contains(a.exprId().id())) continue;
      for (StructField f : fs.dataSchema().fields()) {
        if (f.name().equalsIgnoreCase(a.name())) {
          required.add(f);
          layout.add(a);
          break;
        }
      }
    }
    for (StructField f : fs.partitionSchema().fields()) {
      for (Attribute a : output) if (a.name().equalsIgnoreCase(f.name())) layout.add(a);
    }
    List<Expression> reorder = new ArrayList<>(); // the reader's row in the relation's output order
    for (Attribute a : output) {
      int at = layout.indexOf(a);
      reorder.add(at >= 0 ? new BoundReference(at, a.dataType(), a.nullable())
          : Literal$.MODULE$.create(null, a.dataType())); // a column nothing reads
    }
    UnsafeProjection toOutput = make.unsafe(reorder, List.of());
    Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> reader =
        reader(session, fs, new StructType(required.toArray(new StructField[0])), counts);
    List<PartitionedFile> files = new ArrayList<>();
    for (PartitionDirectory dir : ((HshFileIndex) fs.location()).listPartitions(List.of(), List.of())) {
      for (FileStatusWithMetadata f : Scala.list(dir.files())) {
        if (f.getLen() == 0) continue; // as Spark's scan: an empty file has no split to read
        files.add(new PartitionedFile(dir.values(), SparkPath.fromPath(f.getPath()), 0L, f.getLen(),
            new String[0], f.getModificationTime(), f.getLen(),
            scala.collection.immutable.Map$.MODULE$.<String, Object>empty()));
      }
    }
    return Iterators.concat(Iterators.map(opened(files, reader),
        rows -> Iterators.map(Iterators.of(rows, () -> counts[0]++), toOutput::apply)));
  }

  /** Opens the next file on, so that opening overlaps with the work of this thread. */
  private static final java.util.concurrent.ExecutorService OPENER =
      java.util.concurrent.Executors.newFixedThreadPool(2, runnable -> {
        Thread thread = new Thread(runnable, "hsh-driver-open");
        thread.setDaemon(true); // a driver never waits for it to exit
        return thread;
      });

  /**
   * {@code files} opened with {@code reader} in order, each file's successor opened on {@link #OPENER} while this
   * thread opens or reads it.
   *
   * <p>Why: opening a Parquet file in Spark's reader costs about 2.5 ms of CPU here (it copies the Hadoop
   * configuration into a job context and reads the footer) -- as much as reading its 3,000 rows -- and a driver's
   * answer typically reads the two files a range cuts at its ends. A failure to open is thrown here, as opening
   * here would throw it (the answer then leaves the query to Spark's plan); a file opened ahead that is then not
   * read is closed.
   */
  private static Iterator<scala.collection.Iterator<InternalRow>> opened(List<PartitionedFile> files,
      Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> reader) {
    return new Iterator<scala.collection.Iterator<InternalRow>>() {
      private int next;
      private java.util.concurrent.CompletableFuture<scala.collection.Iterator<InternalRow>> ahead;

      @Override
      public boolean hasNext() {
        return next < files.size();
      }

      @Override
      public scala.collection.Iterator<InternalRow> next() {
        if (!hasNext()) throw new java.util.NoSuchElementException();
        java.util.concurrent.CompletableFuture<scala.collection.Iterator<InternalRow>> current = ahead;
        PartitionedFile file = files.get(next++);
        PartitionedFile following = hasNext() ? files.get(next) : null; // read here, not by the other thread
        ahead = following == null ? null
            : java.util.concurrent.CompletableFuture.supplyAsync(() -> reader.apply(following), OPENER);
        try {
          return current == null ? reader.apply(file) : current.join();
        } catch (Throwable e) { // Scala's readers throw checked exceptions undeclared
          if (ahead != null) ahead.thenAccept(DriverReader::close); // not to be read: closed once open
          ahead = null;
          next = files.size();
          throw DriverReader.<RuntimeException>rethrow(
              e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e);
        }
      }
    };
  }

  /** {@code e} thrown as it is, checked or not: what failed to open fails the answer as it did in the reader. */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> RuntimeException rethrow(Throwable e) throws E {
    throw (E) e;
  }

  private static void close(scala.collection.Iterator<InternalRow> rows) {
    if (rows instanceof java.io.Closeable) {
      try {
        ((java.io.Closeable) rows).close();
      } catch (java.io.IOException ignored) {
        // a reader never read: nothing of the answer depends on it
      }
    }
  }

  private static Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> reader(SparkSession session,
      HadoopFsRelation fs, StructType required, long[] counts) {
    List<Object> key = Arrays.asList(new Identity(session.sparkContext()), fs.fileFormat().getClass().getName(),
        fs.dataSchema(), fs.partitionSchema(), required, fs.options(),
        session.sessionState().conf().getAllConfs(), contents(session.sparkContext().hadoopConfiguration()));
    Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> kept = READERS.get(key);
    if (kept != null) return kept;
    Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> built =
        fs.fileFormat().buildReaderWithPartitionValues(session, fs.dataSchema(), fs.partitionSchema(), required,
            Scala.seq(new ArrayList<org.apache.spark.sql.sources.Filter>()),
            fs.options().updated(FileFormat$.MODULE$.OPTION_RETURNING_BATCH(), "false"),
            session.sessionState().newHadoopConfWithOptions(fs.options()));
    READERS.put(key, built);
    counts[1]++;
    return built;
  }

  /** Every entry of {@code conf}: what the broadcast copy of it holds. */
  private static Map<String, String> contents(Configuration conf) {
    Map<String, String> out = new java.util.HashMap<>();
    for (Map.Entry<String, String> e : conf) out.put(e.getKey(), e.getValue());
    return out;
  }

  /** A key part compared by identity (a stopped context's broadcasts are gone; a new one is another key). */
  private static final class Identity {
    private final Object of;

    Identity(Object of) {
      this.of = of;
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof Identity && ((Identity) other).of == of;
    }

    @Override
    public int hashCode() {
      return System.identityHashCode(of);
    }
  }
}
