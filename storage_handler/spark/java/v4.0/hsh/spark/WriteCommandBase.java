package hsh.spark;

import java.util.List;
import java.util.function.Supplier;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.command.DataWritingCommand;
import org.apache.spark.sql.execution.datasources.V1WriteCommand;
import scala.Enumeration;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * The members of a {@code V1WriteCommand} that wraps another ({@link #inner}) whose signatures differ by line, for
 * Spark 4.0 through 4.3 (Scala 2.13: {@code scala.collection.immutable.Seq}; the classic session). Each delegates to the wrapped command (the output, statistics and Scala's trait field aside, which are the trait's own); {@link #run} runs
 * it inside {@link #around}. The shared {@link IndexedWrite} holds everything else.
 */
abstract class WriteCommandBase extends LogicalPlan implements V1WriteCommand {
  protected final V1WriteCommand inner;
  private Seq<Enumeration.Value> nodePatterns;

  WriteCommandBase(V1WriteCommand inner) {
    this.inner = inner;
    Command.$init$(this);
    DataWritingCommand.$init$(this);
  }

  /** Runs {@code write} (the wrapped command's own run) and returns what it returned. */
  abstract <T> T around(org.apache.spark.sql.SparkSession session, SparkPlan child, Supplier<T> write);

  @Override
  public final Seq<Row> run(org.apache.spark.sql.classic.SparkSession session, SparkPlan child) {
    return around(session, child, () -> inner.run(session, child));
  }

  @Override
  public final Seq<String> outputColumnNames() {
    return inner.outputColumnNames();
  }

  @Override
  public final Seq<LogicalPlan> children() {
    return Scala.seq(List.of(child()));
  }

  @Override
  public final LogicalPlan withNewChildrenInternal(IndexedSeq<LogicalPlan> newChildren) {
    return withNewChildInternal(newChildren.head());
  }

  @Override
  public final Seq<Attribute> output() {
    return V1WriteCommand.super.output();
  }

  // the trait's own definitions, which LogicalPlan's would hide; only a direct implementer may name them
  @Override
  public final AttributeSet producedAttributes() {
    return V1WriteCommand.super.producedAttributes();
  }

  @Override
  public final Statistics stats() {
    return V1WriteCommand.super.stats();
  }

  @Override
  public final Seq<Enumeration.Value> nodePatterns() {
    return nodePatterns;
  }

  @Override
  public final void org$apache$spark$sql$catalyst$plans$logical$Command$_setter_$nodePatterns_$eq(
      Seq<Enumeration.Value> v) {
    nodePatterns = v;
  }

  @Override
  public final Seq<Attribute> partitionColumns() {
    return inner.partitionColumns();
  }

  @Override
  public final Seq<SortOrder> requiredOrdering() {
    return inner.requiredOrdering();
  }
}
