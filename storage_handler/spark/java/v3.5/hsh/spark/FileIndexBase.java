package hsh.spark;

import java.util.List;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;

/**
 * {@link FileIndex} for Spark 3.5 (Scala 2.12): {@code FileIndex} takes and returns {@code scala.collection.Seq}. One Java class cannot override both lines' signatures, so the
 * shared {@link HshFileIndex} implements the Java-typed methods below and this per-line base adapts them.
 */
abstract class FileIndexBase implements FileIndex {
  /** The table's root folders. */
  abstract List<Path> rootPathList();

  /** The partitions to read for Spark's partition-only and data-only predicates. */
  abstract List<PartitionDirectory> listPartitions(List<Expression> partitionFilters, List<Expression> dataFilters);

  @Override
  public final scala.collection.Seq<Path> rootPaths() {
    return Scala.seq(rootPathList());
  }

  @Override
  public final scala.collection.Seq<PartitionDirectory> listFiles(scala.collection.Seq<Expression> partitionFilters,
      scala.collection.Seq<Expression> dataFilters) {
    return Scala.seq(listPartitions(Scala.list(partitionFilters), Scala.list(dataFilters)));
  }
}
