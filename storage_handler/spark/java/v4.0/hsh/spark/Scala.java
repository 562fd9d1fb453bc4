package hsh.spark;

import java.util.List;
import java.util.Map;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Scala collections at the Java boundary, for Scala 2.13 (Spark 4.0 through 4.3): Spark's APIs take and return
 * {@code scala.collection.immutable.Seq} there. The shared core calls only these methods, so it never names a
 * Scala collection type that differs between the lines.
 */
final class Scala {
  private Scala() {}

  static <T> List<T> list(scala.collection.Seq<T> seq) {
    return CollectionConverters.asJava(seq);
  }

  static <T> Seq<T> seq(List<T> list) {
    return CollectionConverters.asScala(list).toSeq();
  }

  static <K, V> Map<K, V> map(scala.collection.Map<K, V> map) {
    return CollectionConverters.asJava(map);
  }
}
