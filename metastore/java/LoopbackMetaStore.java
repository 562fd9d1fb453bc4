// A Hive Metastore (2.3, from the pyspark wheel's jars) whose Thrift server listens on one address only.
// Hive 2.3's own HiveMetaStore.main binds every interface and has no option to change that; an embedded,
// unauthenticated metastore must not be reachable from the network, so hsh starts this launcher instead.
// Object-store locations get ObjectStoreFolders (see there): the wheel has no S3A classes.
// Usage: java -cp "<jars>/*:<classes>" LoopbackMetaStore <bind-address> <port>
import java.net.InetSocketAddress;

import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransportFactory;

public class LoopbackMetaStore {
  public static void main(String[] args) throws Throwable {
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    HiveConf conf = new HiveConf(HiveMetaStore.HMSHandler.class);
    for (String scheme : new String[] {"s3a", "s3", "s3n", "gs", "abfs", "abfss"}) {
      if (!loadable(conf.get("fs." + scheme + ".impl"))) conf.set("fs." + scheme + ".impl", "ObjectStoreFolders");
    }
    ThriftHiveMetastore.Iface handler = HiveMetaStore.newRetryingHMSHandler("hsh-loopback-metastore", conf, false);
    TSetIpAddressProcessor<ThriftHiveMetastore.Iface> processor = new TSetIpAddressProcessor<>(handler);
    TServerSocket socket = new TServerSocket(new InetSocketAddress(host, port));
    // Strict reads, as Hive's own server: a message without a protocol version -- a Kerberos (SASL) client's
    // first frame, "01 00 00 00 06 GSSAPI" -- is refused at once. A lenient reader takes it for a 16 MB method
    // name and waits for it, and the client hangs until its socket timeout.
    long maxMessage = conf.getLongVar(HiveConf.ConfVars.METASTORESERVERMAXMESSAGESIZE);
    TThreadPoolServer.Args serverArgs = new TThreadPoolServer.Args(socket)
        .processor(processor)
        .transportFactory(new TTransportFactory())
        .protocolFactory(new TBinaryProtocol.Factory())
        .inputProtocolFactory(new TBinaryProtocol.Factory(true, true, maxMessage, maxMessage))
        .minWorkerThreads(4)
        .maxWorkerThreads(200);
    System.out.println("hsh: metastore listening on " + host + ":" + port);
    new TThreadPoolServer(serverArgs).serve();
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
