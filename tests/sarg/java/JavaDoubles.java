// Test oracle: Double.toString as the running JVM prints it (tests/sarg/test_jdouble.py).
//
// Compiled once with --release 8 (so any JDK from 8 up runs it) and run as one long-lived process per JVM.
// Protocol (ASCII): the first line out is the JVM's java.specification.version ("1.8", "17", "21"...); then for
// each line in -- the 16 hex digits of the IEEE bits of some doubles, separated by spaces -- one line out with
// their Double.toString, separated by spaces. An empty line or end of input quits.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

public final class JavaDoubles {
  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
    PrintStream out = new PrintStream(System.out, false, "US-ASCII");
    out.println(System.getProperty("java.specification.version"));
    out.flush();
    String line;
    while ((line = in.readLine()) != null && !line.isEmpty()) {
      StringBuilder answer = new StringBuilder();
      for (String hex : line.trim().split(" ")) {
        if (answer.length() > 0) {
          answer.append(' ');
        }
        answer.append(Double.toString(Double.longBitsToDouble(Long.parseUnsignedLong(hex, 16))));
      }
      out.println(answer);
      out.flush();
    }
  }
}
