package hsh.spark;

import java.util.List;
import java.util.function.Supplier;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.BucketSpec;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.V1WriteCommand;
import org.apache.spark.sql.execution.metric.SQLMetric;
import scala.Option;

/**
 * A write into a registered table that is indexed at commit ({@link IndexOnWrite}): every member delegates to the
 * real write command; {@code run} runs it, then hands what it wrote to the index. Made by
 * {@link IndexOnWriteStrategy} after analysis and optimization, so only a {@code DataWritingCommandExec} holds it.
 * The members whose signatures differ by Spark line are in the per-line {@link WriteCommandBase}.
 *
 * <p>Why it is itself a {@code V1WriteCommand}: Spark's {@code InsertAdaptiveSparkPlan} wraps a planned V1 write
 * whole (adaptive execution below it, {@code WriteFilesExec} visible to {@code FileFormatWriter}); a plain
 * {@code DataWritingCommand} would get its child put under adaptive execution, and any write whose query has an
 * exchange would fail with "WriteFiles does not support doExecute".
 */
public final class IndexedWrite extends WriteCommandBase {
  private final WriteTarget target;
  private final Observe observe; // null: dynamic partitions not observed

  IndexedWrite(V1WriteCommand inner, WriteTarget target, Observe observe) {
    super(inner);
    this.target = target;
    this.observe = observe;
  }

  @Override
  <T> T around(SparkSession session, SparkPlan child, Supplier<T> write) {
    return IndexOnWrite.around(session, target, write, observe == null ? null : () -> observe.written(child));
  }

  @Override
  public LogicalPlan query() {
    return inner.query();
  }

  @Override
  public scala.collection.immutable.Map<String, SQLMetric> metrics() {
    return inner.metrics(); // the inner command's trackers update these: the UI shows the write's numbers
  }

  @Override
  public LogicalPlan child() {
    return inner.query();
  }

  @Override
  public LogicalPlan withNewChildInternal(LogicalPlan newChild) {
    return new IndexedWrite((V1WriteCommand) ((LogicalPlan) inner).withNewChildren(Scala.seq(List.of(newChild))),
        target, observe);
  }

  @Override
  public int productArity() {
    return 1;
  }

  @Override
  public Object productElement(int n) {
    if (n == 0) return inner;
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof IndexedWrite;
  }

  @Override
  public FileFormat fileFormat() {
    return inner.fileFormat();
  }

  @Override
  public scala.collection.immutable.Map<String, String> staticPartitions() {
    return inner.staticPartitions();
  }

  @Override
  public Option<BucketSpec> bucketSpec() {
    return inner.bucketSpec();
  }

  @Override
  public scala.collection.immutable.Map<String, String> options() {
    return inner.options();
  }
}
