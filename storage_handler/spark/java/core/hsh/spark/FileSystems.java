package hsh.spark;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.util.VersionInfo;
import org.apache.spark.sql.SparkSession;

/**
 * Whether this Spark can read a table's files at all: Spark reads the kept files in the table's own scheme
 * ({@code s3a://...}) with whatever Hadoop connector the session has. Without one (this machine's pyspark wheel
 * has none for S3), Spark would fail deep inside a task with "No FileSystem for scheme"; the handler fails the
 * query at planning instead, with one line naming the table, the scheme and the package to add.
 */
final class FileSystems {
  private FileSystems() {}

  static void check(SparkSession session, String table, String location) {
    String scheme = new Path(location).toUri().getScheme();
    if (scheme == null || "file".equalsIgnoreCase(scheme)) return; // Hadoop's local file system is always there
    // The context's configuration first: it is shared, while newHadoopConf() copies every setting of the session
    // (~1 ms, and this runs for every query). Only a scheme it cannot serve is looked up again with the
    // session's own spark.hadoop.* settings, which may add the class.
    if (readable(scheme, session.sparkContext().hadoopConfiguration())) return;
    try {
      FileSystem.getFileSystemClass(scheme, session.sessionState().newHadoopConf());
    } catch (IOException | RuntimeException e) { // no class for the scheme, or a class that is not there
      throw new IllegalStateException("hsh: table " + table + " is on " + scheme + "://, but this Spark has no "
          + "file system for " + scheme + ": " + fix(scheme) + " (or read it with spark.read.format(\"hsh\"), "
          + "which reads through pyarrow)");
    }
  }

  private static boolean readable(String scheme, Configuration conf) {
    try {
      FileSystem.getFileSystemClass(scheme, conf);
      return true;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /**
   * {@code new Path(text)} for a kept file's URI as the prune service writes it ({@code scheme://authority/path},
   * the path absolute and normal), without Path's string normalization: {@code new Path(String)} runs two regular
   * expressions per call, ~1.7 us; at 20,000 kept files that was 35 ms of every such query. The result is the
   * same {@link Path} (the same five-part {@link URI} constructor); any other text takes {@code new Path(text)}.
   */
  static Path path(String text) {
    int sep = text.indexOf("://");
    if (sep > 0 && text.indexOf('\\') < 0 && !text.endsWith("/") && text.indexOf(':') == sep) {
      int slash = text.indexOf('/', sep + 3);
      if (slash > 0 && text.indexOf("//", slash) < 0) {
        try {
          return new Path(new URI(text.substring(0, sep), text.substring(sep + 3, slash), text.substring(slash), null,
              null));
        } catch (URISyntaxException e) {
          // not a URI this way: Hadoop's own parsing decides (and reports)
        }
      }
    }
    return new Path(text);
  }

  /** What to add for {@code scheme}, for the Hadoop version Spark runs. */
  static String fix(String scheme) {
    String version = VersionInfo.getVersion();
    switch (scheme.toLowerCase(Locale.ROOT)) {
      case "s3a":
        return "add --conf spark.jars.packages=org.apache.hadoop:hadoop-aws:" + version + " (hsh spark-conf --s3 prints it)";
      case "s3":
      case "s3n":
        return "add --conf spark.jars.packages=org.apache.hadoop:hadoop-aws:" + version + " and --conf spark.hadoop.fs."
            + scheme + ".impl=org.apache.hadoop.fs.s3a.S3AFileSystem (hsh spark-conf --s3 prints both)";
      case "abfs":
      case "abfss":
        return "add --conf spark.jars.packages=org.apache.hadoop:hadoop-azure:" + version;
      case "gs":
        return "add the GCS connector (com.google.cloud.bigdataoss:gcs-connector) to spark.jars.packages";
      default:
        return "add the Hadoop connector for " + scheme + ":// to the session's class path";
    }
  }
}
