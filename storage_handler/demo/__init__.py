"""The demo: generated data, the embedded stack, registration and queries through Spark and HiveServer2."""
