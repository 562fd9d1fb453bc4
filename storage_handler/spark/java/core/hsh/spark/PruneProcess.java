package hsh.spark;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;

/**
 * One {@code python -m storage_handler.spark.prune_service} process: one request line in, one answer line out.
 *
 * <p>Used by one query at a time ({@link PruneService} lends it out). Started on its first request; ends when its
 * stdin closes, so a JVM that dies, even by SIGKILL, takes it along. Its stderr is the driver's.
 *
 * <p>It asks the metastore for partitions, so on a Kerberos-secured metastore it must authenticate as the driver
 * does. It inherits the driver's environment ({@code HADOOP_CONF_DIR}, {@code KRB5CCNAME}, the {@code HSH_*}
 * variables a session built by the project exports); a Spark started with {@code --conf} settings only has them
 * in its configuration, so those are handed over as the variables the Python side reads
 * ({@code metastore.security.config}): names and paths, never key material.
 */
final class PruneProcess {
  private final List<String> command;
  private Process process;
  private BufferedWriter requests;
  private BufferedReader answers;

  PruneProcess(List<String> command) {
    this.command = command;
  }

  /** The answer line to {@code line}; an IOException leaves this process stopped (the next call restarts it). */
  String exchange(String line) throws IOException {
    if (process == null || !process.isAlive()) start(); // CannotRun: nothing started, nothing to stop
    String answer;
    try {
      requests.write(line);
      requests.write('\n');
      requests.flush();
      answer = answers.readLine();
    } catch (IOException e) {
      // a process that died before reading fails the write ("Broken pipe"): report the exit, not the symptom
      IOException failed = new IOException(exitOr(e.getMessage()), e);
      stop();
      throw failed;
    }
    if (answer == null) {
      IOException failed = new IOException(exitOr("it closed its output without answering"));
      stop();
      throw failed;
    }
    return answer;
  }

  /** The program named cannot be run at all (no such file, not executable): a setting to fix, not a crash. */
  static final class CannotRun extends IOException {
    CannotRun(IOException cause) {
      // ProcessBuilder says "Cannot run program \"<path>\": error=2, No such file or directory"; the why is its cause
      super(cause.getCause() != null ? cause.getCause().getMessage() : cause.getMessage(), cause);
    }
  }

  private void start() throws IOException {
    ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
    kerberosEnvironment(builder.environment());
    try {
      process = builder.start();
    } catch (IOException e) {
      throw new CannotRun(e);
    }
    requests = new BufferedWriter(new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8));
    answers = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
  }

  /**
   * The driver's Kerberos settings for the metastore as the Python side's variables: the Spark configuration wins
   * over what the driver inherited (it is this session's), keytab and principal only as a pair; the JVM's
   * krb5.conf when the environment names none (MIT Kerberos ignores {@code java.security.krb5.conf}).
   */
  static void kerberosEnvironment(Map<String, String> env) {
    SparkEnv sparkEnv = SparkEnv.get();
    if (sparkEnv != null) {
      SparkConf conf = sparkEnv.conf();
      copy(conf, env, "HSH_METASTORE_SASL", "spark.hadoop.hive.metastore.sasl.enabled");
      copy(conf, env, "HSH_METASTORE_PRINCIPAL", "spark.hadoop.hive.metastore.kerberos.principal");
      String keytab = first(conf, "spark.kerberos.keytab", "spark.yarn.keytab");
      String principal = first(conf, "spark.kerberos.principal", "spark.yarn.principal");
      if (keytab != null && principal != null) {
        env.put("HSH_KERBEROS_KEYTAB", keytab);
        env.put("HSH_KERBEROS_PRINCIPAL", principal);
      }
    }
    String krb5 = System.getProperty("java.security.krb5.conf");
    if (krb5 != null && !krb5.isEmpty() && !env.containsKey("KRB5_CONFIG")) env.put("KRB5_CONFIG", krb5);
  }

  private static void copy(SparkConf conf, Map<String, String> env, String variable, String key) {
    String value = first(conf, key);
    if (value != null) env.put(variable, value);
  }

  private static String first(SparkConf conf, String... keys) {
    for (String key : keys) {
      String value = conf.get(key, null);
      if (value != null && !value.trim().isEmpty()) return value.trim();
    }
    return null;
  }

  private String exitOr(String otherwise) {
    try {
      return process.waitFor(5, TimeUnit.SECONDS) ? "the process exited (code " + process.exitValue() + ")"
          : otherwise;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return otherwise;
    }
  }

  /** Closes its stdin (the polite way to ask it to exit), then destroys it if it has not exited in 2 s. */
  void stop() {
    if (process == null) return;
    try {
      requests.close();
    } catch (IOException ignored) {
      // it may be dead already; destroy below covers the rest
    }
    try {
      if (!process.waitFor(2, TimeUnit.SECONDS)) process.destroy();
    } catch (InterruptedException e) {
      process.destroy();
      Thread.currentThread().interrupt();
    }
    process = null;
  }
}
