package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogUtils;
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser$;
import org.apache.spark.sql.catalyst.util.CharVarcharUtils;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * A registered table as the handler names it: {@code db.table}, its location, its Hive-typed columns and partition
 * keys, plus the Spark types Spark reads them as. The JSON form is the contract's {@code table} message.
 *
 * <p>A table is the handler's when its metastore parameters carry {@link Contract#PARAM_HANDLER}; nothing else of
 * the table is ours, so every other reader sees a plain Hive Parquet table.
 */
final class HshTable {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final String RAW_TYPE = "__CHAR_VARCHAR_TYPE_STRING"; // where Spark keeps a varchar(n)'s type

  final String name;
  final String location;
  final String metastore; // where a partitioned table's partitions are listed (the session's hive.metastore.uris)
  final Map<String, String> storage; // the table's fs.s3a.* parameters (endpoint, region, path style; no secrets)
  final StructType dataSchema;
  final StructType partitionSchema;
  private final List<String> dataTypes; // Hive types, by position
  private final List<String> partitionTypes;

  private HshTable(String name, String location, String metastore, Map<String, String> storage,
      StructType dataSchema, List<String> dataTypes, StructType partitionSchema, List<String> partitionTypes) {
    this.name = name;
    this.location = location;
    this.metastore = metastore;
    this.storage = Map.copyOf(storage);
    this.dataSchema = dataSchema;
    this.partitionSchema = partitionSchema;
    this.dataTypes = List.copyOf(dataTypes);
    this.partitionTypes = List.copyOf(partitionTypes);
  }

  /**
   * {@code table} without its statistics. Spark sizes a file relation by its catalog table's statistics when it
   * has any, and the handler publishes the whole table's ({@code hsh register}: for every other reader); the
   * handler's own scan must be sized by the files it keeps instead ({@code HshFileIndex.sizeInBytes}), or a
   * selective scan of a big table is never broadcast. Through the case class's {@code copy} by reflection: its
   * arity differs between Spark lines (20 parameters on 3.5, 22 on 4.3), the statistics are the one
   * {@code Option<CatalogStatistics>}.
   */
  static CatalogTable withoutStatistics(CatalogTable table) {
    if (table.stats().isEmpty() || COPY_DEFAULTS.length == 0) return table;
    try {
      Object[] args = new Object[COPY_DEFAULTS.length];
      for (int i = 0; i < args.length; i++) {
        args[i] = COPY_DEFAULTS[i] == null ? Option.empty() : COPY_DEFAULTS[i].invoke(table);
      }
      return (CatalogTable) COPY.invoke(table, args);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return table; // sized by the table's statistics then: a worse plan, never a wrong answer
    }
  }

  /** {@code CatalogTable.copy}, looked up once per class loader (every query's relation is built through it). */
  private static final java.lang.reflect.Method COPY = copyMethod();
  /** Per parameter of {@link #COPY}: its default's getter, or null for the statistics (replaced by none). */
  private static final java.lang.reflect.Method[] COPY_DEFAULTS = copyDefaults(COPY);

  private static java.lang.reflect.Method copyMethod() {
    for (java.lang.reflect.Method m : CatalogTable.class.getMethods()) {
      if (m.getName().equals("copy")) return m;
    }
    return null;
  }

  private static java.lang.reflect.Method[] copyDefaults(java.lang.reflect.Method copy) {
    if (copy == null) return new java.lang.reflect.Method[0];
    java.lang.reflect.Type[] types = copy.getGenericParameterTypes();
    java.lang.reflect.Method[] out = new java.lang.reflect.Method[types.length];
    try {
      for (int i = 0; i < types.length; i++) {
        if (!types[i].getTypeName().contains("CatalogStatistics")) {
          out[i] = CatalogTable.class.getMethod("copy$default$" + (i + 1));
        }
      }
    } catch (NoSuchMethodException e) {
      return new java.lang.reflect.Method[0]; // with COPY then unusable: withoutStatistics keeps the table
    }
    return out;
  }

  static boolean isHandled(CatalogTable table) {
    return table.properties().contains(Contract.PARAM_HANDLER);
  }

  /** {@code db.table} of a catalog entry, as {@code hsh} commands name it (without Spark's catalog prefix). */
  static String nameOf(CatalogTable table) {
    String db = table.identifier().database().isDefined() ? table.identifier().database().get() : "default";
    return db + "." + table.identifier().table();
  }

  /** The table of a catalog entry Spark resolved (its schema already has Spark's types). */
  static HshTable of(CatalogTable table, SparkSession session) {
    String metastore = session.sparkContext().hadoopConfiguration().get("hive.metastore.uris");
    Map<String, String> storage = new TreeMap<>();
    for (Map.Entry<String, String> kv : Scala.map(table.properties())
        .entrySet()) {
      if (Contract.isStorageSetting(kv.getKey())) storage.put(kv.getKey(), kv.getValue());
    }
    return new HshTable(nameOf(table), CatalogUtils.URIToString(table.location()),
        metastore == null || metastore.isBlank() ? null : metastore, storage,
        table.dataSchema(), hiveTypes(table.dataSchema()), table.partitionSchema(),
        hiveTypes(table.partitionSchema()));
  }

  /** The table of a contract {@code table} message (from {@code read_table}): Spark types parsed as Spark does. */
  static HshTable fromJson(String json) throws IOException {
    JsonNode node = MAPPER.readTree(json);
    List<String> dataTypes = new ArrayList<>();
    List<String> partitionTypes = new ArrayList<>();
    StructType data = schema(node.get(Contract.table("columns")), dataTypes);
    StructType partitions = schema(node.get(Contract.table("partition_keys")), partitionTypes);
    JsonNode metastore = node.get(Contract.table("metastore"));
    Map<String, String> storage = new TreeMap<>();
    JsonNode settings = node.get(Contract.table("storage"));
    if (settings != null && settings.isObject()) {
      settings.fields().forEachRemaining(e -> {
        if (Contract.isStorageSetting(e.getKey())) storage.put(e.getKey(), e.getValue().asText());
      });
    }
    return new HshTable(node.get(Contract.table("name")).asText(), node.get(Contract.table("location")).asText(),
        metastore == null || metastore.isNull() ? null : metastore.asText(), storage, data, dataTypes, partitions,
        partitionTypes);
  }

  private static StructType schema(JsonNode pairs, List<String> hiveTypes) {
    List<StructField> fields = new ArrayList<>();
    for (JsonNode pair : pairs) {
      String hiveType = pair.get(1).asText();
      // HiveClientImpl's reading of a metastore column type: struct field names quoted, char/varchar as string
      String quoted = hiveType.replaceAll("(?<=struct<|,)([^,<:]+)(?=:)", "`$1`");
      DataType type = CharVarcharUtils.replaceCharVarcharWithString(
          CatalystSqlParser$.MODULE$.parseDataType(quoted));
      fields.add(new StructField(pair.get(0).asText(), type, true, org.apache.spark.sql.types.Metadata.empty()));
      hiveTypes.add(hiveType);
    }
    return new StructType(fields.toArray(new StructField[0]));
  }

  private static List<String> hiveTypes(StructType schema) {
    List<String> out = new ArrayList<>();
    for (StructField f : schema.fields()) {
      Option<String> raw = f.metadata().contains(RAW_TYPE) ? Option.apply(f.metadata().getString(RAW_TYPE))
          : Option.empty();
      out.add(raw.isDefined() ? raw.get() : f.dataType().catalogString());
    }
    return out;
  }

  /** Data columns then partition columns: the order of Spark's file relation and of the Hive relation's output. */
  StructType schema() {
    List<StructField> all = new ArrayList<>(List.of(dataSchema.fields()));
    all.addAll(List.of(partitionSchema.fields()));
    return new StructType(all.toArray(new StructField[0]));
  }

  ObjectNode toJson() {
    ObjectNode node = JsonNodeFactory.instance.objectNode();
    node.put(Contract.table("name"), name).put(Contract.table("location"), location)
        .put(Contract.table("metastore"), metastore);
    ObjectNode settings = node.putObject(Contract.table("storage"));
    for (Map.Entry<String, String> e : new TreeMap<>(storage).entrySet()) settings.put(e.getKey(), e.getValue());
    node.set(Contract.table("columns"), pairs(dataSchema, dataTypes));
    node.set(Contract.table("partition_keys"), pairs(partitionSchema, partitionTypes));
    return node;
  }

  private static ArrayNode pairs(StructType schema, List<String> types) {
    ArrayNode out = JsonNodeFactory.instance.arrayNode();
    for (int i = 0; i < types.size(); i++) out.addArray().add(schema.fields()[i].name()).add(types.get(i));
    return out;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof HshTable)) return false;
    HshTable other = (HshTable) o;
    return name.equals(other.name) && location.equals(other.location)
        && Objects.equals(metastore, other.metastore) && storage.equals(other.storage)
        && dataSchema.equals(other.dataSchema)
        && partitionSchema.equals(other.partitionSchema) && dataTypes.equals(other.dataTypes)
        && partitionTypes.equals(other.partitionTypes);
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, location, dataSchema, partitionSchema);
  }

  @Override
  public String toString() {
    return name;
  }
}
