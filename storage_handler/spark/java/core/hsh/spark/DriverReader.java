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
   *  {@code counts[1]} the readers built (not found kept); {@code make} makes the row's projection; each file's
   *  reader is added to {@code opened} as it is opened, for {@link #close}. */
  static Iterator<InternalRow> rows(SparkSession session, LogicalRelation scan, Set<Long> needed,
      long[] counts, DriverProjections make, List<scala.collection.Iterator<InternalRow>> opened) {
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
    return Iterators.concat(Iterators.map(files.iterator(), file -> {
      scala.collection.Iterator<InternalRow> rows = reader.apply(file);
      opened.add(rows);
      return Iterators.map(Iterators.of(rows, () -> counts[0]++), toOutput::apply);
    }));
  }

  /**
   * Closes what {@link #rows} opened: a reader read to its end has closed itself already, one left on a failure
   * (a corrupt page, an error in the query's expressions) has not, and in the driver no task's completion closes
   * it (on S3 it would hold a pooled connection until collected). Safe to call for readers already closed.
   */
  static void close(List<scala.collection.Iterator<InternalRow>> opened) {
    for (scala.collection.Iterator<InternalRow> rows : opened) {
      if (rows instanceof java.io.Closeable) {
        try {
          ((java.io.Closeable) rows).close();
        } catch (Exception ignored) { // (Scala's readers throw checked exceptions undeclared)
          // nothing of the answer depends on a reader it has finished with
        }
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
