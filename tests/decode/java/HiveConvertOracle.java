// Reference oracle for tests/decode/test_hive_conformance.py: Hive 2.3.10's own ConvertAstToSearchArg.
//
// Protocol: one expression per stdin line, in the hsh-expr JSON format (storage_handler/expr/serde.py); for each
// line, one stdout line: the SearchArgument's toOldString(), or "ERROR <message>". Constants must already have
// the column's type (Hive's type checker guarantees that before ConvertAstToSearchArg runs).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.common.type.HiveDecimal;
import org.apache.hadoop.hive.ql.io.sarg.ConvertAstToSearchArg;
import org.apache.hadoop.hive.ql.io.sarg.SearchArgument;
import org.apache.hadoop.hive.ql.io.sarg.SearchArgumentImpl;
import org.apache.hadoop.hive.ql.plan.ExprNodeColumnDesc;
import org.apache.hadoop.hive.ql.plan.ExprNodeConstantDesc;
import org.apache.hadoop.hive.ql.plan.ExprNodeDesc;
import org.apache.hadoop.hive.ql.plan.ExprNodeGenericFuncDesc;
import org.apache.hadoop.hive.ql.udf.generic.*;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfo;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoFactory;
import org.apache.hadoop.hive.serde2.typeinfo.TypeInfoUtils;

public class HiveConvertOracle {
  public static void main(String[] args) throws Exception {
    ObjectMapper mapper = new ObjectMapper();
    Configuration conf = new Configuration(false);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      try {
        ExprNodeDesc expr = build(mapper.readTree(line).get("expr"));
        SearchArgument sarg = ConvertAstToSearchArg.create(conf, (ExprNodeGenericFuncDesc) expr);
        System.out.println(((SearchArgumentImpl) sarg).toOldString());
      } catch (Exception e) {
        System.out.println("ERROR " + e.toString().replace('\n', ' '));
      }
      System.out.flush();
    }
  }

  static ExprNodeDesc build(JsonNode node) {
    if (node.has("column")) {
      TypeInfo type = TypeInfoUtils.getTypeInfoFromTypeString(node.get("type").asText());
      return new ExprNodeColumnDesc(type, node.get("column").asText(), "t", false);
    }
    if (node.has("constant")) {
      String typeName = node.get("type").asText();
      TypeInfo type = TypeInfoUtils.getTypeInfoFromTypeString(typeName);
      JsonNode v = node.get("constant");
      Object value;
      if (v.isNull()) value = null;
      else if (typeName.equals("int")) value = v.asInt();
      else if (typeName.equals("bigint")) value = v.asLong();
      else if (typeName.equals("smallint")) value = (short) v.asInt();
      else if (typeName.equals("tinyint")) value = (byte) v.asInt();
      else if (typeName.equals("double")) value = Double.parseDouble(v.asText());
      else if (typeName.equals("float")) value = Float.parseFloat(v.asText());
      else if (typeName.equals("boolean")) value = v.asBoolean();
      else if (typeName.startsWith("decimal")) value = HiveDecimal.create(v.asText());
      else if (typeName.equals("date")) value = java.sql.Date.valueOf(v.asText());
      else if (typeName.equals("timestamp")) value = java.sql.Timestamp.valueOf(v.asText().replace('T', ' '));
      else value = v.asText();
      return new ExprNodeConstantDesc(type, value);
    }
    String fn = node.get("call").asText();
    List<ExprNodeDesc> children = new ArrayList<>();
    for (JsonNode arg : node.get("args")) children.add(build(arg));
    GenericUDF udf;
    switch (fn) {
      case "=": udf = new GenericUDFOPEqual(); break;
      case "<>": udf = new GenericUDFOPNotEqual(); break;
      case "<=>": udf = new GenericUDFOPEqualNS(); break;
      case "<": udf = new GenericUDFOPLessThan(); break;
      case "<=": udf = new GenericUDFOPEqualOrLessThan(); break;
      case ">": udf = new GenericUDFOPGreaterThan(); break;
      case ">=": udf = new GenericUDFOPEqualOrGreaterThan(); break;
      case "and": udf = new GenericUDFOPAnd(); break;
      case "or": udf = new GenericUDFOPOr(); break;
      case "not": udf = new GenericUDFOPNot(); break;
      case "isnull": udf = new GenericUDFOPNull(); break;
      case "isnotnull": udf = new GenericUDFOPNotNull(); break;
      case "in": udf = new GenericUDFIn(); break;
      case "between": udf = new GenericUDFBetween(); break;
      default: udf = new GenericUDFUpper(); // any function ConvertAstToSearchArg does not know
    }
    return new ExprNodeGenericFuncDesc(TypeInfoFactory.booleanTypeInfo, udf, children);
  }
}
