package hsh.spark;

import java.util.List;
import java.util.Map;
import scala.collection.JavaConverters;
import scala.collection.Seq;

/**
 * Scala collections at the Java boundary, for Scala 2.12 (Spark 3.5): Spark's APIs take and return
 * {@code scala.collection.Seq} there, and 2.12 has no {@code scala.jdk.javaapi}. The shared core calls only these
 * methods, so it never names a Scala collection type that differs between the lines.
 */
final class Scala {
  private Scala() {}

  static <T> List<T> list(scala.collection.Seq<T> seq) {
    return JavaConverters.seqAsJavaList(seq);
  }

  static <T> Seq<T> seq(List<T> list) {
    return JavaConverters.asScalaBuffer(list).toList();
  }

  static <K, V> Map<K, V> map(scala.collection.Map<K, V> map) {
    return JavaConverters.mapAsJavaMap(map);
  }
}
