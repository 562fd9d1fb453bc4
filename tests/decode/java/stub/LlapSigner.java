// Test-only stand-in. The pyspark 4.x wheel has no Hive LLAP jar (pyspark 3.5's has hive-llap-common; then this
// is not compiled: tests/decode/kryo_oracle.py), but FunctionRegistry's static initializer registers a UDTF whose
// class names this interface; without it FunctionRegistry (and so every comparison of two different types, every
// cast and every arithmetic UDF) fails to load in the oracle. Nothing calls it.
package org.apache.hadoop.hive.llap.security;

public interface LlapSigner {
  interface Signable {}
}
