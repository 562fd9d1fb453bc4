package hsh.spark;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.catalog.CatalogManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.runtime.AbstractPartialFunction;

/**
 * Spark's SQL parser, except that a two-part name ({@code db.table}) of a table {@link HshSessionCatalog} holds is
 * parsed as the three-part name it resolves to ({@code spark_catalog.db.table}).
 *
 * <p>Why: Spark resolves {@code db.table} by first asking whether {@code db} names a catalog. It does not remember
 * the answer "no": every query builds and throws two exceptions for it (a missing {@code spark.sql.catalog.db}
 * setting, then "catalog not found"), each with an error message read from Spark's error classes and a stack trace
 * as deep as the analyzer. For a point lookup through the handler that was about 2 ms of a 60-100 ms query, a fifth
 * of what issue 30 allows over the limit (measured side by side: {@code tpch.lineitem} against
 * {@code spark_catalog.tpch.lineitem}). With the session catalog named, Spark takes it without a search.
 *
 * <p>The name means the same table: a two-part name whose first part is not a catalog resolves in the current
 * catalog. So the name is rewritten only when all of these hold at parse time: the current catalog is the session
 * catalog ({@code spark_catalog}); no {@code spark.sql.catalog.<db>} setting makes the first part a catalog; it is
 * not the global temporary views' database; the statement cannot change the current catalog before it reads
 * ({@code USE}, {@code SET CATALOG}, a SQL script); and {@link HshSessionCatalog} holds the table (a registered
 * table this driver has already resolved). Every other name, statement and table is parsed exactly as Spark parses
 * it. Only relations read by the statement are rewritten (an {@code INSERT}'s target is not a child of the
 * statement); a view's text is parsed by {@code parseQuery}, which is left alone, so a view resolves in the catalog
 * it was made in. A {@code WITH} clause's definitions are not the statement's children and keep their names too (no
 * saving there, the same table). The one visible difference: {@code EXPLAIN EXTENDED}'s parsed plan shows the
 * three-part name, which the analyzed plan shows in either case.
 *
 * <p>The wrapper is a {@link Proxy} over {@link ParserInterface} rather than a class implementing it: the
 * interface gains methods in nearly every Spark release (4.3 alone added two), and a compiled delegate would need a
 * source set per release and break on the next. The proxy forwards every method, known or not, unchanged. One
 * limit of a proxy: a checked exception that a method does not declare would reach its caller wrapped in
 * {@code UndeclaredThrowableException}; every parse method of every supported line declares the
 * {@code ParseException} it throws ({@code splitStatements}, new in 4.3, splits without parsing and declares
 * none).
 */
final class QualifiedNames {
  private static final Logger LOG = LoggerFactory.getLogger(QualifiedNames.class);

  private QualifiedNames() {}

  /** {@code delegate} with held tables' two-part names qualified by the session catalog (see the class comment). */
  static ParserInterface parser(SparkSession session, ParserInterface delegate) {
    InvocationHandler forward = (proxy, method, args) -> {
      Object result;
      try {
        result = method.invoke(delegate, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
      return isPlanParse(method) && result instanceof LogicalPlan ? qualify(session, (LogicalPlan) result) : result;
    };
    return (ParserInterface) Proxy.newProxyInstance(ParserInterface.class.getClassLoader(),
        new Class<?>[] {ParserInterface.class}, forward);
  }

  /** A statement's parse ({@code spark.sql}, the Thrift server); not {@code parseQuery}, which parses views. */
  private static boolean isPlanParse(Method method) {
    return method.getName().equals("parsePlan") || method.getName().equals("parsePlanWithParameters");
  }

  /**
   * {@code plan} with the held tables it reads named by three parts, when that names the same tables; {@code plan}
   * itself when anything here fails (a catalog that cannot say what it is): the saving is never worth a statement.
   */
  static LogicalPlan qualify(SparkSession session, LogicalPlan plan) {
    if (!HshSessionCatalog.holdsAny()) return plan;
    try {
      CatalogManager catalogs = session.sessionState().catalogManager();
      if (catalogs.currentCatalog() != catalogs.v2SessionCatalog() || mayChangeCatalog(plan)) return plan;
      return plan.transformUpWithSubqueries(new Qualify(session));
    } catch (RuntimeException e) {
      LOG.debug("hsh: names left as written in {}", plan.nodeName(), e);
      return plan;
    }
  }

  /** A held table's two-part name, read by the statement, as its three-part name (see the class comment). */
  private static final class Qualify extends AbstractPartialFunction<LogicalPlan, LogicalPlan> {
    private final SparkSession session;

    Qualify(SparkSession session) {
      this.session = session;
    }

    @Override
    public boolean isDefinedAt(LogicalPlan p) {
      if (!(p instanceof UnresolvedRelation) || ((UnresolvedRelation) p).isStreaming()) return false;
      List<String> parts = Scala.list(((UnresolvedRelation) p).multipartIdentifier());
      return parts.size() == 2 && !session.sessionState().catalog().isGlobalTempViewDB(parts.get(0))
          && session.sessionState().conf().getConfString("spark.sql.catalog." + parts.get(0), null) == null
          && HshSessionCatalog.holds(parts.get(0), parts.get(1));
    }

    @Override
    public LogicalPlan apply(LogicalPlan p) {
      if (!isDefinedAt(p)) return p;
      UnresolvedRelation relation = (UnresolvedRelation) p;
      List<String> parts = Scala.list(relation.multipartIdentifier());
      List<String> qualified = List.of(CatalogManager.SESSION_CATALOG_NAME(), parts.get(0), parts.get(1));
      return relation.copy(Scala.seq(qualified), relation.options(), relation.isStreaming());
    }
  }

  /**
   * Whether running {@code plan} may change the current catalog before it reads: a SQL script (Spark 4's compound
   * statements, run one by one), or a node that sets the catalog ({@code USE}: {@code SetCatalogAndNamespace};
   * {@code SET CATALOG}: {@code SetCatalogCommand}). By class name: the script and command classes differ from
   * line to line, and a name that merely looks alike costs only the saving, never the right table.
   */
  private static boolean mayChangeCatalog(LogicalPlan plan) {
    if (plan.getClass().getSimpleName().toLowerCase(Locale.ROOT).startsWith("compound")) return true;
    return plan.find(new scala.runtime.AbstractFunction1<LogicalPlan, Object>() {
      @Override
      public Object apply(LogicalPlan p) {
        return p.getClass().getSimpleName().startsWith("SetCatalog");
      }
    }).isDefined();
  }
}
