# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Both create .venv (if missing), install the project into it, and need only Python >= 3.11, Java 17 and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.hsh-installed

# Every other supported Spark line gets its own virtualenv, created once and cached (see README, "Spark lines"):
# that line's newest pyspark is installed first, then the project on top of it, which must leave it in place.
# 3.5 is also the low end of the pyarrow/numpy range (a numpy-1 environment, as Spark 3.5 clusters have).
VENVS        ?= .venvs
COMPAT_LINES := 3.5 4.0 4.1 4.2
COMPAT_PINS_3.5 := pyspark==3.5.9 pyarrow==14.0.2 numpy==1.23.5
COMPAT_PINS_4.0 := pyspark==4.0.5
COMPAT_PINS_4.1 := pyspark==4.1.4
COMPAT_PINS_4.2 := pyspark==4.2.1
COMPAT_STAMPS   := $(foreach l,$(COMPAT_LINES),$(VENVS)/pyspark-$(l)/.hsh-installed)
# what runs in each line's environment: the compatibility suite; on the low end also the pyarrow-heavy units
COMPAT_TESTS     := tests/compat
COMPAT_TESTS_3.5 := tests/compat tests/stats tests/pruning tests/storage tests/catalog tests/test_no_false_negatives_e2e.py \
                    tests/spark/test_file_rows.py

.PHONY: demo test test-lines test-fast test-deep compat lint check-java clean test-docker

demo: check-java $(STAMP)
	$(BIN)/hsh demo

# The whole truth, as CI runs it: lint, the full suite on the default line and, at the same time, every other
# line's suite. Why at the same time: the main suite leaves much of the machine idle (its time goes to JVM and
# interpreter start-ups and waits on real processes), and the other lines fill it at a lower priority (`nice`), so
# the main suite, the long pole, is slowed as little as possible. Their output is printed after the main suite's,
# and either failing fails the target.
TEST_LOGS := .test-logs
test: check-java $(STAMP) lint compat
	@mkdir -p $(TEST_LOGS); status=0; \
	nice -n 15 $(MAKE) --no-print-directory test-lines > $(TEST_LOGS)/lines.log 2>&1 & lines=$$!; \
	$(BIN)/python -m pytest --durations=25 $(PYTEST_ARGS) || status=1; \
	wait $$lines || status=1; \
	echo "== the other Spark lines ($(TEST_LOGS)/lines.log):"; cat $(TEST_LOGS)/lines.log; \
	exit $$status

# Every other line's suite, one line after another (what `make test` runs beside the main suite).
test-lines: compat
	@for line in $(COMPAT_LINES); do \
	  tests="$(COMPAT_TESTS)"; [ "$$line" = 3.5 ] && tests="$(COMPAT_TESTS_3.5)"; \
	  echo "== pyspark $$line: $$tests"; \
	  HSH_EXPECT_PYSPARK=$$line HYPOTHESIS_PROFILE=fast $(VENVS)/pyspark-$$line/bin/python -m pytest -q \
	    -p no:cacheprovider $$tests || exit 1; \
	done

# The inner loop: no JVM (tests that start one are marked `jvm` by their fixtures), no waiting out real
# timeouts (`slow`), fewer property-test examples.
test-fast: $(STAMP)
	HYPOTHESIS_PROFILE=fast $(BIN)/python -m pytest -q -m "not jvm and not slow and not docker" $(PYTEST_ARGS)

# A hunt for rare inputs, by hand (hours, not CI): every property test with ten times its examples, fresh seeds.
test-deep: check-java $(STAMP)
	HYPOTHESIS_PROFILE=deep $(BIN)/python -m pytest -q -p no:cacheprovider -m "not docker" \
	  $$(grep -rl --include='test_*.py' '@given' tests) $(PYTEST_ARGS)

# the lines' environments are independent: installed side by side (downloads dominate)
compat:
	@$(MAKE) --no-print-directory -j4 $(COMPAT_STAMPS)

$(VENVS)/pyspark-%/.hsh-installed: pyproject.toml
	@test -x $(VENVS)/pyspark-$*/bin/python || $(PYTHON) -m venv $(VENVS)/pyspark-$*
	$(VENVS)/pyspark-$*/bin/python -m pip install --quiet --upgrade pip
	$(VENVS)/pyspark-$*/bin/python -m pip install --quiet $(COMPAT_PINS_$*)
	$(VENVS)/pyspark-$*/bin/python -m pip install --quiet -e '.[spark,test]' --config-settings editable_mode=compat
	@touch $@

lint: $(STAMP)
	$(BIN)/ruff check storage_handler metastore tests benchmarks pyspark_hsh.py
	$(BIN)/mypy storage_handler metastore pyspark_hsh.py

check-java:
	@command -v java >/dev/null 2>&1 || [ -x "$$JAVA_HOME/bin/java" ] || \
	  { echo "error: Java 17 is required (the metastore and Spark are JVM programs); install a JDK 17, e.g. apt-get install openjdk-17-jdk-headless" >&2; exit 1; }

# Editable install in "compat" mode puts the repo root on sys.path through a .pth file, which is what lets Spark's
# Python workers discover the top-level `pyspark_hsh` data-source module.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[spark,test,reference-jdk,kerberos]' --config-settings editable_mode=compat
	@touch $@

# Real Apache Hive 4 (metastore + HiveServer2 + Postgres) in Docker; only where a Docker engine exists.
DOCKER_WAREHOUSE ?= $(CURDIR)/.docker-warehouse
test-docker: check-java $(STAMP)
	@command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 || \
	  { echo "error: make test-docker needs a running Docker engine (docker info failed)" >&2; exit 1; }
	mkdir -p $(DOCKER_WAREHOUSE) docker/lib && chmod 0777 $(DOCKER_WAREHOUSE)
	@test -f docker/lib/postgresql.jar || docker run --rm -v $(CURDIR)/docker/lib:/out maven:3-eclipse-temurin-17 \
	  sh -c 'mvn -q dependency:copy -Dartifact=org.postgresql:postgresql:42.7.4 -DoutputDirectory=/out && mv /out/postgresql-42.7.4.jar /out/postgresql.jar'
	HSH_WAREHOUSE=$(DOCKER_WAREHOUSE) docker compose up -d --wait
	HSH_WAREHOUSE=$(DOCKER_WAREHOUSE) HSH_DOCKER=1 HSH_METASTORE_URI=thrift://127.0.0.1:9083 \
	  HSH_HIVESERVER2=127.0.0.1:10000 $(BIN)/python -m pytest -m docker $(PYTEST_ARGS); \
	  status=$$?; HSH_WAREHOUSE=$(DOCKER_WAREHOUSE) docker compose down -v; exit $$status

clean:
	rm -rf $(VENV) $(VENVS) $(TEST_LOGS) .pytest_cache .hypothesis build *.egg-info
