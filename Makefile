# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Both create .venv (if missing), install the project into it, and need only Python >= 3.10, Java 17 and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.hsh-installed

.PHONY: demo test lint check-java clean test-docker

demo: check-java $(STAMP)
	$(BIN)/hsh demo

test: check-java $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check storage_handler metastore tests benchmarks pyspark_hsh.py

check-java:
	@command -v java >/dev/null 2>&1 || [ -x "$$JAVA_HOME/bin/java" ] || \
	  { echo "error: Java 17 is required (the metastore and Spark are JVM programs); install a JDK 17, e.g. apt-get install openjdk-17-jdk-headless" >&2; exit 1; }

# Editable install in "compat" mode puts the repo root on sys.path through a .pth file, which is what lets Spark's
# Python workers discover the top-level `pyspark_hsh` data-source module.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	@touch $@

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
