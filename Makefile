# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Both create .venv (if missing), install the project into it, and need only Python >= 3.10, Java 17 and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.hsh-installed

.PHONY: demo test lint check-java clean test-docker

demo: check-java $(STAMP)
	$(BIN)/hsh demo

test: check-java $(STAMP) lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

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
	$(BIN)/python -m pip install --quiet -e '.[test]' --config-settings editable_mode=compat
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
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
