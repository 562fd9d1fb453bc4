package hsh.spark;

import java.time.Instant;
import java.time.ZoneId;
import java.time.zone.ZoneRules;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampType;

/**
 * The predicates the handler may prune by in a session. Leaving one out only prunes less: Spark applies every
 * data predicate to the rows, and {@link PartitionPredicate} applies the partition-only ones exactly.
 *
 * <ul>
 *   <li>With {@code spark.sql.caseSensitive} on, Spark reads a Parquet column only under its exact name while the
 *       index matched columns ignoring case (as Hive does), so a file's statistics may describe a column Spark
 *       reads as NULL: only predicates on partition columns alone are used.
 *   <li>In a session whose time zone is not UTC, Spark reads the text of a {@code timestamp} partition folder as
 *       wall-clock time in that zone; the handler reads it in UTC. Predicates on such a column are left out.
 * </ul>
 */
final class Prunable {
  private Prunable() {}

  static List<Expression> of(SparkSession session, StructType partitionSchema, Collection<Expression> predicates) {
    SQLConf conf = session.sessionState().conf();
    boolean caseSensitive = conf.caseSensitiveAnalysis();
    ZoneRules zone = ZoneId.of(conf.sessionLocalTimeZone()).getRules();
    boolean utc = zone.isFixedOffset() && zone.getOffset(Instant.EPOCH).getTotalSeconds() == 0;
    List<String> partitions = Arrays.asList(partitionSchema.fieldNames());
    List<String> zoned = new ArrayList<>();
    for (StructField f : partitionSchema.fields()) if (f.dataType() instanceof TimestampType) zoned.add(f.name());
    List<Expression> out = new ArrayList<>();
    for (Expression e : predicates) {
      boolean keep = true;
      for (Attribute a : Scala.list(e.references().toSeq())) {
        if (caseSensitive && !partitions.contains(a.name())) keep = false;
        if (!utc && zoned.stream().anyMatch(a.name()::equalsIgnoreCase)) keep = false;
      }
      if (keep) out.add(e);
    }
    return out;
  }
}
