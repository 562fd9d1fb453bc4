package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;

/**
 * The driver's channel to the handler's Python side: one long-lived {@code python -m
 * storage_handler.spark.prune_service} process per JVM, one JSON line per request and per answer.
 *
 * <p>Why a process: the pruning rules (SearchArgument, statistics, three-valued logic) live in Python, in one
 * place; the JVM only asks which files to read. The process is started on the first query (about a second, once)
 * and ends when its stdin closes, so a JVM that dies, even by SIGKILL, takes it along. Requests are read-only,
 * so a request that finds the process dead is retried once on a fresh one; a second failure fails the query with
 * the cause (the process writes its errors to the driver's stderr) rather than silently reading everything.
 */
final class PruneService {
  static final String PYTHON = "spark.hsh.python";
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Map<String, PruneService> BY_PYTHON = new ConcurrentHashMap<>();

  private final List<String> command;
  private Process process;
  private BufferedWriter requests;
  private BufferedReader answers;

  private PruneService(List<String> command) {
    this.command = command;
  }

  /**
   * The service for the session's Python: {@code spark.hsh.python} (a session setting, so it can be changed at
   * run time), else {@code spark.pyspark.python}, else {@code $PYSPARK_PYTHON}, else {@code python3}.
   */
  static PruneService get(SparkSession session) {
    SparkConf conf = session.sparkContext().getConf();
    String env = System.getenv("PYSPARK_PYTHON");
    String fallback = conf.get(PYTHON, conf.get("spark.pyspark.python", env == null ? "python3" : env));
    String python = session.conf().get(PYTHON, fallback);
    return BY_PYTHON.computeIfAbsent(python, p -> {
      PruneService service = new PruneService(Arrays.asList(p, "-m", "storage_handler.spark.prune_service"));
      Runtime.getRuntime().addShutdownHook(new Thread(service::stop, "hsh-prune-service-stop"));
      return service;
    });
  }

  /** The answer to {@code request}; throws naming {@code table} when the Python side fails or reports an error. */
  synchronized JsonNode call(ObjectNode request, String table) {
    String line;
    try {
      line = MAPPER.writeValueAsString(request);
    } catch (IOException e) {
      throw new IllegalStateException("hsh: cannot encode the pruning request for " + table, e);
    }
    IOException last = null;
    for (int attempt = 0; attempt < 2; attempt++) {
      try {
        JsonNode answer = MAPPER.readTree(exchange(line));
        if (!answer.path("ok").asBoolean(false)) {
          throw new IllegalStateException("hsh: cannot plan the scan of " + table + ": "
              + answer.path("error").asText("no error message"));
        }
        return answer;
      } catch (IOException e) {
        last = e;
        stop();
      }
    }
    throw new IllegalStateException("hsh: the pruning service (" + String.join(" ", command) + ") failed for "
        + table + ": " + last.getMessage() + "; its error is in the driver's stderr. Check that " + PYTHON
        + " names a Python with hive-storage-handler installed.", last);
  }

  private String exchange(String line) throws IOException {
    if (process == null || !process.isAlive()) start();
    String answer;
    try {
      requests.write(line);
      requests.write('\n');
      requests.flush();
      answer = answers.readLine();
    } catch (IOException e) {
      // a process that died before reading fails the write ("Broken pipe"): report the exit, not the symptom
      throw new IOException(exitOr(e.getMessage()), e);
    }
    if (answer == null) throw new IOException(exitOr("it closed its output without answering"));
    return answer;
  }

  private String exitOr(String otherwise) {
    String code = waitExit();
    return "?".equals(code) ? otherwise : "the process exited (code " + code + ")";
  }

  private void start() throws IOException {
    ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
    process = builder.start();
    requests = new BufferedWriter(new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8));
    answers = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
  }

  private String waitExit() {
    try {
      return process.waitFor(5, java.util.concurrent.TimeUnit.SECONDS) ? String.valueOf(process.exitValue()) : "?";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "?";
    }
  }

  synchronized void stop() {
    if (process == null) return;
    try {
      requests.close();
    } catch (IOException ignored) {
      // closing stdin is only the polite way to ask it to exit
    }
    try {
      if (!process.waitFor(2, java.util.concurrent.TimeUnit.SECONDS)) process.destroy();
    } catch (InterruptedException e) {
      process.destroy();
      Thread.currentThread().interrupt();
    }
    process = null;
  }
}
