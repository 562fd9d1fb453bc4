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
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.types.StructField;
import scala.runtime.AbstractPartialFunction;

/**
 * An aggregate query the index may answer ({@link AggregateRule}), taken apart: the plan's shape
 * ({@code Aggregate [Project] [Filter] LogicalRelation(HshFileIndex)}), its answerable aggregates
 * ({@link AggregateSpec}), its conjuncts split between the handler and this side ({@link PartitionConjuncts}), the
 * prune request that decides it and the key its decision is kept under ({@link AggregateDecisions}) -- which is
 * also the key of the request sent when the query is analyzed ({@link EarlyAggregateRequest}).
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
  final String decision; // AggregateDecisions' key, and EarlyAggregateRequest's

  private AggregateQuery(Project project, Filter filter, LogicalRelation scan, HadoopFsRelation fs, HshFileIndex index,
      List<AttributeReference> groups, List<AggregateSpec> specs, List<Expression> conjuncts,
      PartitionConjuncts split, ObjectNode scanRequest, String decision) {
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
    this.decision = decision;
  }

  /**
   * The query of {@code aggregate}, or null when it is not of that shape or asks for an aggregate the index cannot
   * answer (it plans as before). {@code analyzed}: the plan is the analyzer's (the table's alias still above the
   * relation, constants not yet folded), for {@link EarlyAggregateRequest}.
   */
  static AggregateQuery of(SparkSession session, Aggregate aggregate, boolean analyzed) {
    LogicalPlan below = aggregate.child();
    Project project = below instanceof Project ? (Project) below : null;
    if (project != null) below = project.child();
    Filter filter = below instanceof Filter ? (Filter) below : null;
    if (filter != null) below = filter.child();
    while (analyzed && below instanceof SubqueryAlias) below = ((SubqueryAlias) below).child();
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
    List<Expression> conjuncts;
    try {
      conjuncts = filter == null ? List.of() : Scala.list(filter.splitConjunctivePredicates(
          analyzed ? folded(filter.condition()) : filter.condition()));
    } catch (Exception e) { // a constant that fails to evaluate (ANSI overflow): left to the optimizer's rule
      return null;
    }
    PartitionConjuncts split;
    try {
      split = PartitionConjuncts.split(session, index.table(), conjuncts);
    } catch (Exception e) { // a conjunct this side cannot bind (Scala throws checked ones undeclared): Spark's plan
      Timings.record("aggregate_partition_conjuncts_failed", index.table().name, System.nanoTime());
      return null;
    }
    // the IsNotNull Spark's optimizer infers from a comparison is left out: the request is then the same whether
    // made from the analyzed plan or the optimized one (EarlyAggregateRequest), and the answer is too
    ObjectNode scanRequest = index.aggregateRequest(ImpliedNotNull.without(split.sent), request);
    String decision = AggregateDecisions.key(index.table().name, AggregateRule.minAnsweredBytes(session) + " "
        + IndexAnswer.driverReadBytes(session) + " " + IndexAnswer.driverReadRows(session),
        scanRequest + " " + split.evaluatedHere());
    return new AggregateQuery(project, filter, scan, fs, index, groups, specs, conjuncts, split, scanRequest, decision);
  }

  /** {@code condition} with its constant parts evaluated, as Spark's optimizer first does ({@code ConstantFolding}:
   *  {@code i >= CAST(20 AS BIGINT)} becomes {@code i >= 20L}): the analyzed filter then reads as the optimized
   *  one does. */
  private static Expression folded(Expression condition) {
    return condition.transform(new AbstractPartialFunction<Expression, Expression>() {
      @Override
      public boolean isDefinedAt(Expression e) {
        return e.foldable() && !(e instanceof Literal);
      }

      @Override
      public Expression apply(Expression e) {
        return isDefinedAt(e) ? Literal$.MODULE$.create(e.eval(null), e.dataType()) : e;
      }
    });
  }
}
