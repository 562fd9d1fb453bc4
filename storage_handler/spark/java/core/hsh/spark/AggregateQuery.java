package hsh.spark;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.StructField;

/**
 * An aggregate query the index may answer ({@link AggregateRule}), taken apart: the plan's shape
 * ({@code Aggregate [Project] [Filter] LogicalRelation(HshFileIndex)}), its answerable aggregates
 * ({@link AggregateSpec}), its conjuncts split between the handler and this side ({@link PartitionConjuncts}), the
 * prune request that decides it and the key its decision is kept under ({@link AggregateDecisions}).
 */
final class AggregateQuery {
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

  final Project project;
  final Filter filter;
  final LogicalRelation scan;
  final HadoopFsRelation fs;
  final HshFileIndex index;
  final List<AttributeReference> groups;
  final List<AggregateSpec> specs;
  final List<Expression> conjuncts; // all of the filter's, as the optimizer left them
  final PartitionConjuncts split;
  final ObjectNode scanRequest;
  final long minAnsweredBytes; // the limits in force (settings), read once: the decision is kept under them
  final long driverReadBytes;
  final long driverReadRows;
  final String decision; // AggregateDecisions' key

  private AggregateQuery(Project project, Filter filter, LogicalRelation scan, HadoopFsRelation fs, HshFileIndex index,
      List<AttributeReference> groups, List<AggregateSpec> specs, List<Expression> conjuncts,
      PartitionConjuncts split, ObjectNode scanRequest, long minAnsweredBytes, long driverReadBytes,
      long driverReadRows) {
    this.project = project;
    this.filter = filter;
    this.scan = scan;
    this.fs = fs;
    this.index = index;
    this.groups = groups;
    this.specs = specs;
    this.conjuncts = conjuncts;
    this.split = split;
    this.scanRequest = scanRequest;
    this.minAnsweredBytes = minAnsweredBytes;
    this.driverReadBytes = driverReadBytes;
    this.driverReadRows = driverReadRows;
    this.decision = AggregateDecisions.key(index.table().name, minAnsweredBytes + " " + driverReadBytes + " "
        + driverReadRows, scanRequest + " " + split.evaluatedHere());
  }

  /**
   * The query of {@code aggregate} (an optimized plan's), or null when it is not of that shape or asks for an
   * aggregate the index cannot answer (it plans as before).
   */
  static AggregateQuery of(SparkSession session, Aggregate aggregate) {
    LogicalPlan below = aggregate.child();
    Project project = below instanceof Project ? (Project) below : null;
    if (project != null) below = project.child();
    Filter filter = below instanceof Filter ? (Filter) below : null;
    if (filter != null) below = filter.child();
    if (!(below instanceof LogicalRelation)) return null;
    LogicalRelation scan = (LogicalRelation) below;
    if (!(scan.relation() instanceof HadoopFsRelation)) return null;
    HadoopFsRelation fs = (HadoopFsRelation) scan.relation();
    if (!(fs.location() instanceof HshFileIndex) || ((HshFileIndex) fs.location()).isFixed()) return null;
    HshFileIndex index = (HshFileIndex) fs.location();
    if (project != null) {
      for (NamedExpression e : Scala.list(project.projectList())) {
        if (!(e instanceof AttributeReference)) return null; // a computed column: not a stored column
      }
    }
    Set<String> partitions = new HashSet<>();
    for (StructField f : index.table().partitionSchema.fields()) partitions.add(f.name().toLowerCase());
    Set<Long> scanColumns = new HashSet<>();
    for (Attribute a : Scala.list(scan.output())) scanColumns.add(a.exprId().id());

    List<AttributeReference> groups = new ArrayList<>();
    for (Expression g : Scala.list(aggregate.groupingExpressions())) {
      if (!(g instanceof AttributeReference) || !partitions.contains(((AttributeReference) g).name().toLowerCase())
          || !scanColumns.contains(((AttributeReference) g).exprId().id())) {
        return null; // grouped by a data column or an expression: every row is needed
      }
      if (g.dataType() instanceof FloatType || g.dataType() instanceof DoubleType) {
        return null; // Spark's aggregation makes -0.0 and 0.0 (and every NaN) one group: left to it
      }
      groups.add((AttributeReference) g);
    }
    List<AggregateSpec> specs = new ArrayList<>();
    for (NamedExpression e : Scala.list(aggregate.aggregateExpressions())) {
      if (e instanceof AttributeReference && groups.contains(e)) continue;
      AggregateSpec spec = e instanceof Alias ? AggregateSpec.of((Alias) e, partitions, scanColumns) : null;
      if (spec == null) return null;
      specs.add(spec);
    }
    if (specs.isEmpty()) return null;
    if (session.sessionState().conf().caseSensitiveAnalysis()) {
      // Spark then reads a Parquet column only under its exact name, while the index matched names ignoring
      // case (see Prunable): a file's numbers may describe a column Spark reads as NULL. Only count(*) is safe.
      for (AggregateSpec s : specs) if (s.column != null) return null;
    }

    Set<String> counted = new LinkedHashSet<>();
    Set<String> bounded = new LinkedHashSet<>();
    for (AggregateSpec s : specs) {
      if (s.column != null) counted.add(s.column.name());
      if (s.kind == AggregateSpec.Kind.MIN || s.kind == AggregateSpec.Kind.MAX) bounded.add(s.column.name());
    }
    ObjectNode request = JSON.objectNode();
    ArrayNode columns = request.putArray(Contract.aggregateRequest("columns"));
    counted.forEach(columns::add);
    ArrayNode bounds = request.putArray(Contract.aggregateRequest("bounds"));
    bounded.forEach(bounds::add);
    List<Expression> conjuncts = filter == null ? List.of() : Scala.list(filter.splitConjunctivePredicates(
        filter.condition()));
    PartitionConjuncts split;
    try {
      split = PartitionConjuncts.split(session, index.table(), conjuncts);
    } catch (Exception e) { // a conjunct this side cannot bind (Scala throws checked ones undeclared): Spark's plan
      Timings.record("aggregate_partition_conjuncts_failed", index.table().name, System.nanoTime());
      return null;
    }
    return new AggregateQuery(project, filter, scan, fs, index, groups, specs, conjuncts, split,
        index.aggregateRequest(split.sent, request), AggregateRule.minAnsweredBytes(session),
        IndexAnswer.driverReadBytes(session), IndexAnswer.driverReadRows(session));
  }
}
