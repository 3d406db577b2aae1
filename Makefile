# The two commands of the README. Each creates .venv and installs into it what it needs, again
# only when pyproject.toml changes, then runs: `make demo` the runtime dependencies alone,
# `make test` the test extras as well (on top of the runtime ones, so switching between the
# two never reinstalls anything already there). `make test` is what CI runs: the lint and
# layer checks, then every test. `make test-fast` is for development: unit and integration
# tests that are not slow (no processes, browsers or trace UI), on two cores; see README
# "Development".
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.installed-runtime
TEST_STAMP    := $(VENV)/.installed-test
# Bytecode is cached (a shell that sets PYTHONDONTWRITEBYTECODE makes every run, and each
# test worker, compile every module again, and pytest rewrite every test module again:
# about 9 s of a test run's start-up).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-fast lint install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME_STAMP)

$(TEST_STAMP): pyproject.toml $(RUNTIME_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(TEST_STAMP)

install: $(RUNTIME_STAMP)

install-test: $(TEST_STAMP)

demo: $(RUNTIME_STAMP)
	$(BIN)/memwarden demo

# ruff (pyproject.toml [tool.ruff]) and the import graph: no cycle, no upward import, no
# module over 500 lines without a reason (tests/test_layers.py).
lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q tests/test_layers.py

test: lint
	$(BIN)/python -m pytest -q

# Three worker processes (pytest-xdist) on the 2-core development machine: a worker spends
# about a third of its time waiting (fsync, Chroma's server, PostgreSQL), so two workers left
# the cores 70% busy. Each has its own session fixtures (Chroma server, PostgreSQL cluster) and
# temporary directories; worksteal hands a long test's neighbours to an idle worker.
test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -n 3 --dist worksteal -m "not system and not slow"

clean:
	rm -rf $(VENV) build *.egg-info

# Arize Phoenix, a local trace UI, in its own environment (.venv-phoenix: its pins clash with
# ours), serving on 127.0.0.1:6006 offline (no telemetry, no external resources). Then, in
# another terminal: .venv/bin/memwarden demo --otlp http://127.0.0.1:6006/v1/traces
.PHONY: dashboard
dashboard:
	PYTHON=$(PYTHON) bash scripts/phoenix.sh serve

# A local PostgreSQL for shared policies and audit (Debian: apt-get install postgresql), in
# .pgdata on 127.0.0.1:5433; prints its URL. `make postgres-stop` stops it.
.PHONY: postgres postgres-stop
postgres:
	bash scripts/postgres.sh start .pgdata 5433

postgres-stop:
	bash scripts/postgres.sh stop .pgdata
