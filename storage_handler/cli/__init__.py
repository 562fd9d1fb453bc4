"""The ``hsh`` command line."""
