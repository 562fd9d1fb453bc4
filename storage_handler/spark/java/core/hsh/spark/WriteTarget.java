package hsh.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.execution.command.DataWritingCommand;
import org.apache.spark.sql.execution.datasources.InsertIntoHadoopFsRelationCommand;
import org.apache.spark.sql.hive.execution.InsertIntoHiveTable;
import scala.Option;

/**
 * What a write command says about its target before it runs: the catalog table, its static partition values and
 * the partition columns whose values the rows decide (dynamic).
 *
 * <p>Why only these two commands: every insert into a Hive table ends in one of them, on every supported line —
 * {@code InsertIntoHiveTable} (Spark's Hive path, and the nested insert of {@code saveAsTable} with
 * {@code format("hive")}) and {@code InsertIntoHadoopFsRelationCommand} (the converted path, Spark's default for
 * Parquet Hive tables). Both are {@code V1WriteCommand}s with these accessors on 3.5 and 4.x.
 */
final class WriteTarget {
  final String command;
  final CatalogTable table;
  final List<String> partitionColumns;
  final Map<String, String> staticSpec = new LinkedHashMap<>(); // partition-column order
  final List<String> dynamicColumns = new ArrayList<>();

  private WriteTarget(String command, CatalogTable table, Map<String, String> spec) {
    this.command = command;
    this.table = table;
    this.partitionColumns = Scala.list(table.partitionColumnNames());
    for (String c : partitionColumns) {
      String value = valueOf(spec, c);
      if (value != null) staticSpec.put(c, value);
      else dynamicColumns.add(c);
    }
  }

  /** The target of {@code cmd} when it writes a table registered with the handler; null otherwise. */
  static WriteTarget of(DataWritingCommand cmd) {
    if (cmd instanceof InsertIntoHiveTable) {
      InsertIntoHiveTable c = (InsertIntoHiveTable) cmd;
      Map<String, String> spec = new LinkedHashMap<>();
      for (Map.Entry<String, Option<String>> e : Scala.map(c.partition()).entrySet()) {
        if (e.getValue().isDefined()) spec.put(e.getKey(), e.getValue().get());
      }
      return registered("InsertIntoHiveTable" + (c.overwrite() ? " (overwrite)" : ""), c.table(), spec);
    }
    if (cmd instanceof InsertIntoHadoopFsRelationCommand) {
      InsertIntoHadoopFsRelationCommand c = (InsertIntoHadoopFsRelationCommand) cmd;
      if (c.catalogTable().isEmpty()) return null; // a path write, no table
      return registered("InsertIntoHadoopFsRelationCommand (" + c.mode() + ")", c.catalogTable().get(),
          new LinkedHashMap<>(Scala.map(c.staticPartitions())));
    }
    return null;
  }

  private static WriteTarget registered(String command, CatalogTable table, Map<String, String> spec) {
    return HshTable.isHandled(table) ? new WriteTarget(command, table, spec) : null;
  }

  private static String valueOf(Map<String, String> spec, String column) {
    for (Map.Entry<String, String> e : spec.entrySet()) {
      if (e.getKey().equalsIgnoreCase(column)) return e.getValue();
    }
    return null;
  }

  /** {@code db.table} (not Spark's {@code spark_catalog.} prefix, which the warning's suggested
   *  {@code hsh index refresh} would refuse). */
  String name() {
    return HshTable.nameOf(table);
  }

  /** The leading static values: what every written partition starts with when the rest are not observed. */
  Map<String, String> prefix() {
    Map<String, String> out = new LinkedHashMap<>();
    for (String c : partitionColumns) {
      if (!staticSpec.containsKey(c)) break;
      out.put(c, staticSpec.get(c));
    }
    return out;
  }
}
