package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EvalMode$;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * A prune answer's kept files as Spark's listing gives them: {@code PartitionDirectory}s, each partition's values
 * cast from their folder text exactly as Spark's own listing casts them.
 */
final class AnswerFiles {
  private static final long BLOCK_SIZE = 128L * 1024 * 1024;

  private AnswerFiles() {}

  /** The kept files (an answer's {@code files}) grouped by partition, each partition's values cast from text like Spark's own listing does. */
  static List<PartitionDirectory> partitions(SparkSession session, HshTable table, JsonNode files) {
    long start = System.nanoTime();
    try {
      return partitionsOf(session, table, files);
    } finally {
      Timings.record("answer_to_partitions", table.name, start, "files", files.size());
    }
  }

  private static List<PartitionDirectory> partitionsOf(SparkSession session, HshTable table, JsonNode files) {
    Map<List<String>, List<FileStatus>> groups = new LinkedHashMap<>();
    StructType partitionSchema = table.partitionSchema;
    Set<String> schemes = new java.util.HashSet<>();
    for (JsonNode f : files) {
      List<String> values = new ArrayList<>();
      JsonNode partition = Contract.fileField(f, "partition_values", table.name);
      for (StructField field : partitionSchema.fields()) {
        values.add(partitionText(partition, field.name()));
      }
      Path path = FileSystems.path(Contract.fileField(f, "uri", table.name).asText());
      if (schemes.add(String.valueOf(path.toUri().getScheme()))) {
        FileSystems.check(session, table.name, path.toString()); // a partition registered on another store
      }
      FileStatus status = new FileStatus(Contract.fileField(f, "bytes", table.name).asLong(), false, 1, BLOCK_SIZE,
          Contract.fileField(f, "mtime_ms", table.name).asLong(), path);
      groups.computeIfAbsent(values, k -> new ArrayList<>()).add(status);
    }
    String zone = session.sessionState().conf().sessionLocalTimeZone();
    List<PartitionDirectory> out = new ArrayList<>();
    for (Map.Entry<List<String>, List<FileStatus>> group : groups.entrySet()) {
      Object[] row = new Object[partitionSchema.size()];
      for (int i = 0; i < row.length; i++) {
        String text = group.getKey().get(i);
        row[i] = partitionValue(text, partitionSchema.fields()[i].dataType(), zone);
      }
      out.add(PartitionDirectory.apply(new GenericInternalRow(row), group.getValue().toArray(new FileStatus[0])));
    }
    return out;
  }

  /**
   * The value text of partition column {@code name} in {@code values} (a file's {@code partition_values}, an
   * answered partition of {@code matched}; keys in any case), null for Hive's default partition.
   */
  static String partitionText(JsonNode values, String name) {
    JsonNode v = IndexNumbers.findIgnoreCase(values, name);
    return v == null || v.isNull() ? null : v.asText();
  }

  /**
   * A partition folder's value text as Spark's own listing casts it (null stays null), in LEGACY mode: text that is
   * no value of the type is null. Spark's plain read casts in the session's mode, so under ANSI such text fails
   * its query -- but only for the partitions its metastore filter kept; this handler keeps a partition whose text
   * it cannot parse (unknown) and re-applies the partition predicates here, where null drops it. Failing instead
   * would fail queries plain Spark answers.
   */
  static Object partitionValue(String text, org.apache.spark.sql.types.DataType type, String zone) {
    return text == null ? null : new Cast(Literal$.MODULE$.create(text, DataTypes.StringType), type,
        Option.apply(zone), EvalMode$.MODULE$.LEGACY()).eval(InternalRow.empty());
  }

}
