package hsh.spark;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One {@code python -m storage_handler.spark.prune_service} process: one request line in, one answer line out.
 *
 * <p>Used by one query at a time ({@link PruneService} lends it out). Started on its first request; ends when its
 * stdin closes, so a JVM that dies, even by SIGKILL, takes it along. Its stderr is the driver's.
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
    if (process == null || !process.isAlive()) start();
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

  private void start() throws IOException {
    ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
    process = builder.start();
    requests = new BufferedWriter(new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8));
    answers = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
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
