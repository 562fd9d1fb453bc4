package hsh.spark;

import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.catalog.BucketSpec;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.command.DataWritingCommand;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.V1WriteCommand;
import org.apache.spark.sql.execution.metric.SQLMetric;
import scala.Enumeration;
import scala.Option;
import scala.collection.Seq;

/**
 * A write into a registered table that is indexed at commit ({@link IndexOnWrite}): every member delegates to the
 * real write command; {@link #run} runs it, then hands what it wrote to the index. Made by
 * {@link IndexOnWriteStrategy} after analysis and optimization, so only a {@code DataWritingCommandExec} holds it.
 *
 * <p>Why it is itself a {@code V1WriteCommand}: Spark's {@code InsertAdaptiveSparkPlan} wraps a planned V1 write
 * whole (adaptive execution below it, {@code WriteFilesExec} visible to {@code FileFormatWriter}); a plain
 * {@code DataWritingCommand} would get its child put under adaptive execution, and any write whose query has an
 * exchange would fail with "WriteFiles does not support doExecute". Spark 3.5 form (Scala 2.12 sequences, the
 * session); the 4.x form differs only in those types.
 */
public final class IndexedWrite extends LogicalPlan implements V1WriteCommand {
  private final V1WriteCommand inner;
  private final WriteTarget target;
  private final Observe observe; // null: dynamic partitions not observed
  private Seq<Enumeration.Value> nodePatterns;

  IndexedWrite(V1WriteCommand inner, WriteTarget target, Observe observe) {
    this.inner = inner;
    this.target = target;
    this.observe = observe;
    Command.$init$(this);
    DataWritingCommand.$init$(this);
  }

  @Override
  public Seq<Row> run(org.apache.spark.sql.SparkSession session, SparkPlan child) {
    return IndexOnWrite.around(session, target, () -> inner.run(session, child),
        observe == null ? null : () -> observe.written(child));
  }

  @Override
  public LogicalPlan query() {
    return inner.query();
  }

  @Override
  public Seq<String> outputColumnNames() {
    return inner.outputColumnNames();
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
  public Seq<LogicalPlan> children() {
    return Scala.seq(List.of(child()));
  }

  @Override
  public LogicalPlan withNewChildInternal(LogicalPlan newChild) {
    return new IndexedWrite((V1WriteCommand) ((LogicalPlan) inner).withNewChildren(Scala.seq(List.of(newChild))),
        target, observe);
  }

  @Override
  public LogicalPlan withNewChildrenInternal(scala.collection.IndexedSeq<LogicalPlan> newChildren) {
    return withNewChildInternal(newChildren.head());
  }

  @Override
  public Seq<Attribute> output() {
    return V1WriteCommand.super.output();
  }

  @Override
  public AttributeSet producedAttributes() {
    return V1WriteCommand.super.producedAttributes();
  }

  @Override
  public Statistics stats() {
    return V1WriteCommand.super.stats();
  }

  @Override
  public Seq<Enumeration.Value> nodePatterns() {
    return nodePatterns;
  }

  @Override
  public void org$apache$spark$sql$catalyst$plans$logical$Command$_setter_$nodePatterns_$eq(
      Seq<Enumeration.Value> v) {
    nodePatterns = v;
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
  public Seq<Attribute> partitionColumns() {
    return inner.partitionColumns();
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

  @Override
  public Seq<SortOrder> requiredOrdering() {
    return inner.requiredOrdering();
  }
}
