// A Hive Metastore (2.3, from the pyspark wheel's jars) on one address only, optionally secured with Kerberos:
// a superset of LoopbackMetaStore.java (next to it) that does what Hive 2.3's HiveMetaStore.startMetaStore does
// when hive.metastore.sasl.enabled=true (SASL/GSSAPI transport as the keytab's service principal, a delegation
// token manager, the caller's identity for every call), but still binds only the given address, which Hive's own
// main cannot do.
//
// Why not Hive's main: it binds every interface, and it takes `hadoop.security.authentication` only from a
// core-site.xml on the class path (Hadoop's UserGroupInformation never reads -D system properties; with
// -Dhadoop.security.authentication=kerberos alone it fails with "Kerberos principal should have 3 parts: root").
// This launcher copies every -Dhadoop.* system property into the configuration UGI uses, and switches UGI to
// Kerberos itself when SASL is on, so no conf folder is needed (one on the class path still works).
//
// Usage: java -cp "<jars>/*:<classes>" -Djava.security.krb5.conf=... -Dhive.metastore.sasl.enabled=true
//          -Dhive.metastore.kerberos.keytab.file=... -Dhive.metastore.kerberos.principal=hive/HOST@REALM
//          SecureLoopbackMetaStore <bind-address> <port>
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.util.Map;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.MetaStoreUtils;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.hadoop.hive.shims.ShimLoader;
import org.apache.hadoop.hive.thrift.HadoopThriftAuthBridge;
import org.apache.hadoop.hive.thrift.HiveDelegationTokenManager;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.authorize.ProxyUsers;
import org.apache.thrift.TProcessor;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransportFactory;

public class SecureLoopbackMetaStore {
  public static void main(String[] args) throws Throwable {
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    HiveConf conf = new HiveConf(HiveMetaStore.HMSHandler.class);
    for (Map.Entry<Object, Object> e : System.getProperties().entrySet()) {
      String key = String.valueOf(e.getKey());
      if (key.startsWith("hadoop.")) conf.set(key, String.valueOf(e.getValue()));
    }
    for (String scheme : new String[] {"s3a", "s3", "s3n", "gs", "abfs", "abfss"}) {
      if (!loadable(conf.get("fs." + scheme + ".impl")) && loadable("ObjectStoreFolders")) {
        conf.set("fs." + scheme + ".impl", "ObjectStoreFolders");
      }
    }
    boolean sasl = conf.getBoolVar(HiveConf.ConfVars.METASTORE_USE_THRIFT_SASL);
    HiveMetaStore.HMSHandler base = new HiveMetaStore.HMSHandler("hsh-loopback-metastore", conf, false);
    IHMSHandler handler = HiveMetaStore.newRetryingHMSHandler(base, conf);
    TProcessor processor;
    TTransportFactory transports;
    String mode;
    if (sasl) {
      String keytab = conf.getVar(HiveConf.ConfVars.METASTORE_KERBEROS_KEYTAB_FILE);
      String principal = conf.getVar(HiveConf.ConfVars.METASTORE_KERBEROS_PRINCIPAL);
      if (conf.get("hadoop.security.authentication", "simple").equals("simple")) {
        conf.set("hadoop.security.authentication", "kerberos");
      }
      UserGroupInformation.setConfiguration(conf);
      HadoopThriftAuthBridge.Server server;
      try {
        server = ShimLoader.getHadoopThriftAuthBridge().createServer(keytab, principal);
      } catch (Exception e) {
        // one line the Python side shows as is: which keytab, which principal, what failed (never key material)
        System.err.println("hsh: cannot log in to Kerberos as " + principal + " with keytab " + keytab + ": "
            + rootMessage(e));
        System.exit(3);
        return;
      }
      HiveDelegationTokenManager tokens = new HiveDelegationTokenManager();
      tokens.startDelegationTokenSecretManager(conf, base, HadoopThriftAuthBridge.Server.ServerMode.METASTORE);
      server.setSecretManager(tokens.getSecretManager());
      // HMSHandler serves get/renew/cancel_delegation_token (HiveServer2 with doAs, Spark on YARN/Kubernetes ask
      // for them) and audits client addresses through HiveMetaStore's private statics, which only Hive's own
      // startMetaStore sets; without them get_delegation_token fails with a NullPointerException.
      setStatic("delegationTokenManager", tokens);
      setStatic("saslServer", server);
      setStatic("useSasl", true);
      // proxy-user rules (-Dhadoop.proxyuser.<user>.hosts/groups) for delegation tokens issued on behalf of
      // others; Hadoop would otherwise read them from a core-site.xml only
      ProxyUsers.refreshSuperUserGroupsConfiguration(conf);
      transports = server.createTransportFactory(MetaStoreUtils.getMetaStoreSaslProperties(conf));
      processor = server.wrapProcessor(new ThriftHiveMetastore.Processor<>(handler));
      mode = "Kerberos (SASL/GSSAPI as " + UserGroupInformation.getLoginUser().getUserName() + ", qop "
          + conf.get("hadoop.rpc.protection", "authentication") + ")";
    } else {
      processor = new TSetIpAddressProcessor<>(handler);
      transports = new TTransportFactory();
      mode = "no authentication";
    }
    TServerSocket socket = new TServerSocket(new InetSocketAddress(host, port));
    // Strict reads, as Hive's own server: a message without a protocol version (e.g. a SASL client's first frame
    // sent to this server when it is unsecured) is refused at once instead of read as a 16 MB method name, which
    // leaves the client waiting for its timeout.
    long maxMessage = conf.getLongVar(HiveConf.ConfVars.METASTORESERVERMAXMESSAGESIZE);
    TThreadPoolServer.Args serverArgs = new TThreadPoolServer.Args(socket)
        .processor(processor)
        .transportFactory(transports)
        .protocolFactory(new TBinaryProtocol.Factory())
        .inputProtocolFactory(new TBinaryProtocol.Factory(true, true, maxMessage, maxMessage))
        .minWorkerThreads(4)
        .maxWorkerThreads(200);
    System.out.println("hsh: metastore listening on " + host + ":" + port + ", " + mode);
    new TThreadPoolServer(serverArgs).serve();
  }

  private static void setStatic(String field, Object value) throws ReflectiveOperationException {
    Field f = HiveMetaStore.class.getDeclaredField(field);
    f.setAccessible(true);
    f.set(null, value);
  }

  private static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) t = t.getCause();
    String m = t.getMessage();
    return (m == null ? t.getClass().getSimpleName() : m).replace('\n', ' ');
  }

  private static boolean loadable(String className) {
    if (className == null) return false;
    try {
      Class.forName(className);
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }
}
