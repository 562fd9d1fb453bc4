// Reference oracle for tests/decode/test_kryo_*.py: a Hive release's own serialization and reading of pushed
// filters -- the release whose jars are on the classpath (tests/hive_releases.py: 2.3.10 from the running pyspark,
// 2.3.9 from pyspark 3.5's wheel). It compiles against each unchanged.
//
// One JVM per release serves a whole test run; requests are stdin lines, each answered by exactly one stdout line.
//
//   E <tree>   Build the expression with Hive's classes (ExprNodeGenericFuncDesc.newInstance initializes every UDF,
//              as Hive's planner does), write it with SerializationUtilities.serializeExpression (what Hive puts in
//              hive.io.filter.expr.serialized) and read it back with ConvertAstToSearchArg.createFromConf (Hive's
//              reader). Answer: OK <base64> <toString> <toOldString> <fixed toString> <fixed toOldString>, where
//              "fixed" is what a Hive with HIVE-24209 makes of the same filter (NOT BETWEEN keeps its NOT).
//   S <tree>   Convert the expression to a SearchArgument, write it the way Spark's Hive ORC path does (plain
//              new Kryo().writeObject, base64) into sarg.pushdown, read it back with createFromConf.
//              Answer: OK <base64> <toString> <toOldString>.
//   Z <zone>   Make <zone> the JVM's default time zone (java.sql.Date/Timestamp convert with it). Answer: OK.
//   L          The layout of every class the two Kryo instances have met so far, one JSON object per line
//              (class, registration id, serializer, serialized fields in Kryo's order, enum constants), then END.
//   T <n> <b64> Time Hive's reader (deserializeExpression + ConvertAstToSearchArg.create) on the bytes, n times after
//              n warm-up runs. Answer: OK <median nanoseconds>. (benchmarks/bench_decode.py)
//
// With the argument "read" the program only reads: one base64 expression per stdin line, its toOldString() per
// stdout line, no session set up -- what a JVM started for a single decode would do.
//
// <tree> is JSON: {"col": NAME, "type": T} | {"const": TEXT-or-null, "type": T} | {"fn": NAME, "args": [...]}
// | {"field": NAME, "of": <tree of a struct>}; a "fn" node with "aslist": true keeps its children in Arrays.asList.
// Constants are Java's own text forms (Timestamp.valueOf, Date.valueOf, HiveDecimal.create, Double.valueOf...).
// Errors answer "ERROR <message>" on one line.
import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Registration;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Output;
import com.esotericsoftware.kryo.serializers.FieldSerializer;
import com.esotericsoftware.kryo.util.DefaultClassResolver;
import com.esotericsoftware.kryo.util.ObjectMap;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.TimeZone;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.common.type.HiveChar;
import org.apache.hadoop.hive.common.type.HiveDecimal;
import org.apache.hadoop.hive.common.type.HiveVarchar;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.ql.exec.FunctionInfo;
import org.apache.hadoop.hive.ql.exec.FunctionRegistry;
import org.apache.hadoop.hive.ql.exec.SerializationUtilities;
import org.apache.hadoop.hive.ql.session.SessionState;
import org.apache.hadoop.hive.ql.io.sarg.ConvertAstToSearchArg;
import org.apache.hadoop.hive.ql.io.sarg.SearchArgument;
import org.apache.hadoop.hive.ql.io.sarg.SearchArgumentImpl;
import org.apache.hadoop.hive.ql.plan.ExprNodeColumnDesc;
import org.apache.hadoop.hive.ql.plan.ExprNodeConstantDesc;
import org.apache.hadoop.hive.ql.plan.ExprNodeDesc;
import org.apache.hadoop.hive.ql.plan.ExprNodeFieldDesc;
import org.apache.hadoop.hive.ql.plan.ExprNodeGenericFuncDesc;
import org.apache.hadoop.hive.ql.udf.generic.*;
import org.apache.hadoop.hive.serde2.typeinfo.StructTypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils;

public class HiveKryoOracle {
  static final ObjectMapper MAPPER = new ObjectMapper();
  static final Kryo PLAIN = new Kryo();  // what Spark's OrcFileFormat.toKryo uses, kept to list its classes

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("read")) {
      BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String line;
      while ((line = lines.readLine()) != null) {
        ExprNodeGenericFuncDesc expr = SerializationUtilities.deserializeExpression(line.trim());
        System.out.println(((SearchArgumentImpl) ConvertAstToSearchArg.create(conf(), expr)).toOldString());
      }
      return;
    }
    // Arithmetic UDFs read hive.compat from the session; the planner always has one. Comparing bigint with
    // string or double is refused under Hive's default strict checks; allow it so such filters can be written.
    HiveConf hiveConf = new HiveConf();
    hiveConf.set("hive.strict.checks.type.safety", "false");
    SessionState.setCurrentSessionState(new SessionState(hiveConf));
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
    // Hive's console and log4j's fallback logger print to System.out/err; keep them off the protocol.
    PrintStream nowhere = new PrintStream(OutputStream.nullOutputStream());
    System.setOut(nowhere);
    System.setErr(nowhere);
    String line;
    while ((line = in.readLine()) != null) {
      try {
        char mode = line.charAt(0);
        String rest = line.length() > 2 ? line.substring(2) : "";
        if (mode == 'E') out.println(expression(rest));
        else if (mode == 'S') out.println(sargPushdown(rest));
        else if (mode == 'Z') { TimeZone.setDefault(TimeZone.getTimeZone(rest)); out.println("OK"); }
        else if (mode == 'L') { layouts(out); out.println("END"); }
        else if (mode == 'T') out.println(timeReader(rest));
        else out.println("ERROR unknown request " + mode);
      } catch (Throwable e) {
        out.println("ERROR " + e.toString().replace('\n', ' ').replace('\t', ' '));
      }
      out.flush();
    }
  }

  static Configuration conf() {
    Configuration conf = new Configuration(false);
    conf.set("hive.io.sarg.cache.max.weight.mb", "0");  // no cache: the same bytes read differently per zone
    return conf;
  }

  static String expression(String json) throws Exception {
    JsonNode tree = MAPPER.readTree(json);
    String bytes = SerializationUtilities.serializeExpression((ExprNodeGenericFuncDesc) build(tree, false));
    Configuration conf = conf();
    conf.set("hive.io.filter.expr.serialized", bytes);
    SearchArgument sarg = ConvertAstToSearchArg.createFromConf(conf);
    Configuration fixedConf = conf();
    fixedConf.set("hive.io.filter.expr.serialized",
        SerializationUtilities.serializeExpression((ExprNodeGenericFuncDesc) build(tree, true)));
    SearchArgument fixed = ConvertAstToSearchArg.createFromConf(fixedConf);
    return "OK\t" + bytes + "\t" + sarg + "\t" + ((SearchArgumentImpl) sarg).toOldString() + "\t" + fixed + "\t"
        + ((SearchArgumentImpl) fixed).toOldString();
  }

  static String timeReader(String request) {
    String[] parts = request.split(" ", 2);
    int n = Integer.parseInt(parts[0]);
    String bytes = parts[1].trim();
    long[] times = new long[n];
    Configuration conf = conf();
    for (int round = 0; round < 2; round++) {  // the first round warms the JIT up
      for (int i = 0; i < n; i++) {
        long start = System.nanoTime();
        ConvertAstToSearchArg.create(conf, SerializationUtilities.deserializeExpression(bytes));
        times[i] = System.nanoTime() - start;
      }
    }
    java.util.Arrays.sort(times);
    return "OK\t" + times[n / 2];
  }

  static String sargPushdown(String json) throws Exception {
    ExprNodeGenericFuncDesc expr = (ExprNodeGenericFuncDesc) build(MAPPER.readTree(json), true);
    SearchArgument made = ConvertAstToSearchArg.create(conf(), expr);
    Output output = new Output(4 * 1024, 10 * 1024 * 1024);
    new Kryo().writeObject(output, made);
    PLAIN.writeObject(new Output(4 * 1024, 10 * 1024 * 1024), made);
    output.close();
    String bytes = Base64.getEncoder().encodeToString(output.toBytes());
    Configuration conf = conf();
    conf.set("sarg.pushdown", bytes);
    SearchArgument sarg = ConvertAstToSearchArg.createFromConf(conf);
    return "OK\t" + bytes + "\t" + sarg + "\t" + ((SearchArgumentImpl) sarg).toOldString();
  }

  // fixNotBetween: write NOT BETWEEN as NOT(BETWEEN), which every Hive converts with its NOT (HIVE-24209).
  static ExprNodeDesc build(JsonNode node, boolean fixNotBetween) throws Exception {
    if (node.has("col")) {
      TypeInfo type = TypeInfoUtils.getTypeInfoFromTypeString(node.get("type").asText());
      return new ExprNodeColumnDesc(type, node.get("col").asText(), "t", false);
    }
    if (node.has("const")) {
      return constant(node.get("type").asText(), node.get("const").isNull() ? null : node.get("const").asText());
    }
    if (node.has("field")) {  // a struct field: s.a
      ExprNodeDesc of = build(node.get("of"), fixNotBetween);
      String name = node.get("field").asText();
      TypeInfo type = ((StructTypeInfo) of.getTypeInfo()).getStructFieldTypeInfo(name);
      return new ExprNodeFieldDesc(type, of, name, false);
    }
    String fn = node.get("fn").asText();
    List<ExprNodeDesc> children = new ArrayList<>();
    for (JsonNode arg : node.get("args")) children.add(build(arg, fixNotBetween));
    if (fixNotBetween && fn.equals("between") && Boolean.TRUE.equals(((ExprNodeConstantDesc) children.get(0)).getValue())) {
      children.set(0, constant("boolean", "false"));
      List<ExprNodeDesc> inner = new ArrayList<>();
      inner.add(ExprNodeGenericFuncDesc.newInstance(new GenericUDFBetween(), "between", children));
      return ExprNodeGenericFuncDesc.newInstance(new GenericUDFOPNot(), "not", inner);
    }
    if (node.has("aslist")) {  // children in an Arrays.asList list, as some of Hive's planner code builds them
      children = java.util.Arrays.asList(children.toArray(new ExprNodeDesc[0]));
    }
    return ExprNodeGenericFuncDesc.newInstance(udf(fn), fn, children);
  }

  static ExprNodeConstantDesc constant(String typeName, String text) {
    TypeInfo type = TypeInfoUtils.getTypeInfoFromTypeString(typeName);
    Object value;
    if (text == null) value = null;
    else if (typeName.equals("int")) value = Integer.valueOf(text);
    else if (typeName.equals("bigint")) value = Long.valueOf(text);
    else if (typeName.equals("smallint")) value = Short.valueOf(text);
    else if (typeName.equals("tinyint")) value = Byte.valueOf(text);
    else if (typeName.equals("double")) value = Double.valueOf(text);
    else if (typeName.equals("float")) value = Float.valueOf(text);
    else if (typeName.equals("boolean")) value = Boolean.valueOf(text);
    else if (typeName.startsWith("decimal")) value = HiveDecimal.create(text);
    else if (typeName.equals("date")) value = java.sql.Date.valueOf(text);
    else if (typeName.equals("timestamp")) value = java.sql.Timestamp.valueOf(text);
    else if (typeName.startsWith("varchar")) value = new HiveVarchar(text, -1);
    else if (typeName.startsWith("char")) value = new HiveChar(text, -1);
    else value = text;
    return new ExprNodeConstantDesc(type, value);
  }

  static GenericUDF udf(String fn) throws Exception {
    switch (fn) {
      case "=": return new GenericUDFOPEqual();
      case "<>": return new GenericUDFOPNotEqual();
      case "<=>": return new GenericUDFOPEqualNS();
      case "<": return new GenericUDFOPLessThan();
      case "<=": return new GenericUDFOPEqualOrLessThan();
      case ">": return new GenericUDFOPGreaterThan();
      case ">=": return new GenericUDFOPEqualOrGreaterThan();
      case "and": return new GenericUDFOPAnd();
      case "or": return new GenericUDFOPOr();
      case "not": return new GenericUDFOPNot();
      case "isnull": return new GenericUDFOPNull();
      case "isnotnull": return new GenericUDFOPNotNull();
      case "in": return new GenericUDFIn();
      case "between": return new GenericUDFBetween();
      default:
        // Any other function by its Hive name, as the planner finds it (casts, like, substr, year, ...).
        FunctionInfo info = FunctionRegistry.getFunctionInfo(fn);
        if (info == null || info.getGenericUDF() == null) throw new IllegalArgumentException("no Hive UDF " + fn);
        return info.getGenericUDF();
    }
  }

  static Object field(Object owner, Class<?> cls, String name) throws Exception {
    Field f = cls.getDeclaredField(name);
    f.setAccessible(true);
    return f.get(owner);
  }

  static void layouts(PrintStream out) throws Exception {
    Kryo hive = SerializationUtilities.borrowKryo();
    try {
      TreeMap<String, String> lines = new TreeMap<>();
      for (Kryo kryo : new Kryo[] {hive, PLAIN}) {
        ObjectMap<?, ?> registered = (ObjectMap<?, ?>) field(kryo.getClassResolver(), DefaultClassResolver.class,
            "classToRegistration");
        for (Object key : registered.keys()) {
          Class<?> type = (Class<?>) key;
          if (type.isPrimitive()) continue;
          String prefix = kryo == hive ? "hive " : "plain ";
          lines.put(prefix + type.getName(), layout(kryo, type, prefix.trim()));
        }
      }
      for (String line : lines.values()) out.println(line);
    } finally {
      SerializationUtilities.releaseKryo(hive);
    }
  }

  static String layout(Kryo kryo, Class<?> type, String flavor) throws Exception {
    Registration registration = kryo.getRegistration(type);
    Serializer<?> serializer = registration.getSerializer();
    ObjectNode node = MAPPER.createObjectNode();
    node.put("kryo", flavor);
    node.put("class", type.getName());
    node.put("id", registration.getId());
    node.put("serializer", serializer.getClass().getName());
    if (serializer instanceof FieldSerializer) {
      ArrayNode fields = node.putArray("fields");
      for (FieldSerializer.CachedField<?> cached : ((FieldSerializer<?>) serializer).getFields()) {
        Field f = (Field) field(cached, FieldSerializer.CachedField.class, "field");
        Class<?> valueClass = (Class<?>) field(cached, FieldSerializer.CachedField.class, "valueClass");
        ArrayNode pair = fields.addArray();
        pair.add(f.getName());
        pair.add(f.getType().isPrimitive() ? f.getType().getName() : valueClass == null ? "" : valueClass.getName());
      }
    }
    if (type.isEnum()) {
      ArrayNode constants = node.putArray("enum");
      for (Object constant : type.getEnumConstants()) constants.add(((Enum<?>) constant).name());
    }
    if (type.isArray()) {
      node.put("elementFinal", kryo.isFinal(type.getComponentType()));
    }
    return MAPPER.writeValueAsString(node);
  }
}
