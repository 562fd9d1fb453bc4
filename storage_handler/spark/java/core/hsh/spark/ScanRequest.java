package hsh.spark;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Collection;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;

/**
 * The contract's scan request: which files of a registered table a query's predicates keep (and, with an
 * aggregate, which kept files the index answers it for). One place builds it, whoever asks: the file index's
 * listing and prefetch, the aggregate rule, {@code read_table}'s planning ({@link HshRelations}).
 */
final class ScanRequest {
  private ScanRequest() {}

  /** The scan request for {@code predicates}; {@code record}: the answer is recorded in the scan log. */
  static ObjectNode of(SparkSession session, HshTable table, Collection<Expression> predicates, boolean record) {
    return of(session, table, predicates, record, null);
  }

  /**
   * The scan request; with {@code aggregate} ({@code {"columns": [...], "bounds": [...]}}) the answer also says
   * which kept files the index answers the query's aggregates for ({@link AggregateRule}). {@code complete}
   * tells the handler whether every predicate reached its filters whole.
   */
  static ObjectNode of(SparkSession session, HshTable table, Collection<Expression> predicates, boolean record,
      ObjectNode aggregate) {
    List<Expression> prunable = Prunable.of(session, table.partitionSchema, predicates);
    FilterJson.Encoded encoded = FilterJson.encode(session, prunable);
    ObjectNode request = JsonNodeFactory.instance.objectNode();
    request.put(Contract.request("op"), "scan").put(Contract.request("contract"), Contract.VERSION)
        .put(Contract.request("record"), record)
        .put(Contract.request("complete"), encoded.complete && prunable.size() == predicates.size());
    request.set(Contract.request("table"), table.toJson());
    request.set(Contract.request("filters"), encoded.filters);
    request.set(Contract.request("aggregate"), aggregate == null ? JsonNodeFactory.instance.nullNode() : aggregate);
    return request;
  }
}
