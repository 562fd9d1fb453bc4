package hsh.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;

/**
 * The driver's channel to the handler's Python side: long-lived {@code python -m
 * storage_handler.spark.prune_service} processes ({@link PruneProcess}), one JSON line per request and per answer.
 *
 * <p>Why processes: the pruning rules (SearchArgument, statistics, three-valued logic) live in Python, in one
 * place; the JVM only asks which files to read. A process is started when a query finds none idle (about a
 * second, once), up to {@code spark.hsh.pruneService.processes} (default 4) per Python, so queries planned at the
 * same time (a Thrift server's users) do not wait for each other's listing; beyond that they queue. Requests are
 * read-only, so a request that finds its process dead is retried once on a fresh one; a second failure fails the
 * query with the cause (the process writes its errors to the driver's stderr) rather than silently reading
 * everything.
 */
final class PruneService {
  static final String PYTHON = Contract.SETTING_PYTHON;
  static final String PROCESSES = Contract.SETTING_PROCESSES;
  private static final int DEFAULT_PROCESSES = 4;
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Map<String, PruneService> BY_PYTHON = new ConcurrentHashMap<>();

  private final List<String> command;
  private final Deque<PruneProcess> idle = new ArrayDeque<>(); // most recently used first: it is warm
  private final List<PruneProcess> started = new ArrayList<>();

  private PruneService(List<String> command) {
    this.command = command;
  }

  /** The answer to {@code request} for the session; throws naming {@code table} when the Python side fails. */
  static JsonNode call(SparkSession session, ObjectNode request, String table) {
    IndexOnWrite.awaitPending(table); // this driver's last write into the table: indexed before it is pruned
    return forPython(python(session, table)).call(request, table, maxProcesses(session, table),
        "plan the scan of");
  }

  /**
   * The answer to an index request ({@link IndexOnWrite}), waiting at most {@code timeoutMs}; throws naming
   * {@code table} when the Python side fails or does not answer in time. A request still running when the wait
   * ends runs on to its end on a daemon thread (it is an idempotent commit of its own), and its process goes back
   * to the pool then; the write that asked has long returned.
   */
  static JsonNode index(SparkSession session, ObjectNode request, String table, long timeoutMs) {
    PruneService service = forPython(python(session, table));
    int max = maxProcesses(session, table);
    java.util.concurrent.FutureTask<JsonNode> task = new java.util.concurrent.FutureTask<>(
        () -> service.call(request, table, max, "index the write into"));
    Thread thread = new Thread(task, "hsh-index-on-write");
    thread.setDaemon(true);
    thread.start();
    try {
      return task.get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException("hsh: indexing the write into " + table + " took longer than " + timeoutMs
          + " ms (" + Contract.SETTING_INDEX_ON_WRITE_TIMEOUT + "); it goes on in the background", e);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) throw (RuntimeException) cause;
      throw new IllegalStateException("hsh: indexing the write into " + table + " failed: " + cause, cause);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("hsh: interrupted while indexing the write into " + table, e);
    }
  }

  /**
   * The driver's Python: {@code spark.hsh.python} as the driver started with it, else {@code spark.pyspark.python},
   * else {@code $PYSPARK_PYTHON}, else {@code python3}.
   *
   * <p>Why not a session setting: it names a program the driver runs, as the driver's user. A Thrift server's
   * clients change session settings with {@code SET}, so one that could name the program would run anything it
   * likes on the driver (with the server's Kerberos credentials, on a secured cluster). Only the Spark
   * configuration the driver started with ({@code --conf}, {@code spark-defaults.conf}, the session builder)
   * names it; a session whose own value differs is refused, naming both, and nothing is run.
   */
  private static String python(SparkSession session, String table) {
    SparkConf conf = session.sparkContext().conf(); // the driver's own (getConf() copies it: once per query)
    String env = System.getenv("PYSPARK_PYTHON");
    String configured = conf.get(PYTHON, conf.get("spark.pyspark.python", env == null ? "python3" : env));
    String asked = session.conf().get(PYTHON, configured);
    if (!asked.equals(configured)) {
      throw new IllegalArgumentException("hsh: cannot plan the scan of " + table + ": this session sets " + PYTHON
          + " to '" + asked + "', but the driver started with '" + configured + "'. It names a program the driver"
          + " runs, so only the driver's own Spark configuration sets it (--conf, spark-defaults.conf or the"
          + " session builder, before the driver starts); unset it in the session (RESET " + PYTHON + ")");
    }
    return configured;
  }

  private static int maxProcesses(SparkSession session, String table) {
    String value = session.conf().get(PROCESSES, String.valueOf(DEFAULT_PROCESSES)).trim();
    try {
      int max = Integer.parseInt(value);
      if (max >= 1) return max;
    } catch (NumberFormatException ignored) {
      // reported below
    }
    throw new IllegalArgumentException("hsh: cannot plan the scan of " + table + ": " + PROCESSES + " is '" + value
        + "'; set it to a whole number of at least 1");
  }

  private static PruneService forPython(String python) {
    return BY_PYTHON.computeIfAbsent(python, p -> {
      PruneService service = new PruneService(Arrays.asList(p, "-m", "storage_handler.spark.prune_service"));
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        IndexOnWrite.awaitAll(); // writes being indexed need the processes: they go first
        service.stop();
      }, "hsh-prune-service-stop"));
      return service;
    });
  }

  private JsonNode call(ObjectNode request, String table, int max, String doing) {
    String line;
    try {
      line = MAPPER.writeValueAsString(request);
    } catch (IOException e) {
      throw new IllegalStateException("hsh: cannot encode the request to " + doing + " " + table, e);
    }
    long start = System.nanoTime();
    PruneProcess process = borrow(max, table);
    long waited = System.nanoTime();
    try {
      IOException last = null;
      for (int attempt = 0; attempt < 2; attempt++) {
        JsonNode answer;
        try {
          answer = MAPPER.readTree(process.exchange(line));
        } catch (PruneProcess.CannotRun e) {
          // IllegalArgumentException: PySpark turns it into its own one-line error instead of a Py4J trace
          throw new IllegalArgumentException("hsh: cannot " + doing + " " + table + ": " + PYTHON + " is '"
              + command.get(0) + "', which cannot be run (" + e.getMessage() + "). Set " + PYTHON + " in the"
              + " driver's Spark configuration to a Python with hive-storage-handler installed (in the Python that"
              + " runs the driver: sys.executable)", e);
        } catch (IOException e) {
          last = e;
          process.stop(); // an answer that is not JSON leaves the stream out of step: start afresh
          continue;
        }
        if (!Contract.answer(answer, "ok", table).asBoolean(false)) {
          throw new IllegalStateException("hsh: cannot " + doing + " " + table + ": "
              + answer.path("error").asText("no error message"));
        }
        String step = doing.startsWith("plan") ? "prune_round_trip" : "index_round_trip";
        Timings.record(step, table, start, "waited_ms", (waited - start) / 1e6,
            "request_bytes", line.length(), "attempt", attempt, "service_ms", answer.path("service_ms").asDouble(-1));
        return answer;
      }
      throw new IllegalStateException("hsh: the pruning service (" + String.join(" ", command) + ") failed for "
          + table + ": " + last.getMessage() + "; its error is in the driver's stderr. If it never answered, check"
          + " that " + PYTHON + " names a Python with hive-storage-handler installed; if it crashed (an exit code"
          + " above 128 is a signal), the stderr says where: please report it.", last);
    } finally {
      release(process);
    }
  }

  private synchronized PruneProcess borrow(int max, String table) {
    while (true) {
      PruneProcess process = idle.pollFirst();
      if (process != null) return process;
      if (started.size() < max) {
        process = new PruneProcess(command);
        started.add(process);
        return process;
      }
      try {
        wait();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("hsh: interrupted while waiting to plan the scan of " + table, e);
      }
    }
  }

  private synchronized void release(PruneProcess process) {
    idle.addFirst(process);
    notifyAll();
  }

  private synchronized void stop() {
    for (PruneProcess process : started) process.stop();
  }
}
