package hsh.spark;

import org.apache.spark.SparkContext;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.sources.RelationProvider;

/**
 * {@code spark.read.format("hsh")} on Spark 3.5, which has no Python data sources: one line naming the Spark
 * version and what to use instead, rather than Spark's "failed to find the data source".
 */
public final class PythonSourceUnavailable implements DataSourceRegister, RelationProvider {
  @Override
  public String shortName() {
    return "hsh";
  }

  @Override
  public BaseRelation createRelation(SQLContext sqlContext, scala.collection.immutable.Map<String, String> options) {
    throw new UnsupportedOperationException("hsh: spark.read.format(\"hsh\") is the handler's Python data source, "
        + "which needs Spark 4.0 or newer; this is Spark " + SparkContext.getOrCreate().version()
        + ": read registered tables with spark.sql / spark.table (pruned by the session extension) or "
        + "storage_handler.spark.read_table(spark, table, where=...)");
  }
}
