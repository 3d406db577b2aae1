# The two commands of the README. Each creates .venv and installs memwarden into it from
# scratch when pyproject.toml changes, then runs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/memwarden demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

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
