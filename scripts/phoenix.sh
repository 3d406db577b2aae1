#!/usr/bin/env bash
# Arize Phoenix as a local, offline OTLP trace UI for memwarden (used by `make dashboard`).
#
#   scripts/phoenix.sh install   create .venv-phoenix and pip install arize-phoenix into it
#   scripts/phoenix.sh serve     install if needed, then serve on 127.0.0.1:6006 (foreground)
#
# Phoenix pins clash with memwarden's, so it lives in its own virtual environment. It binds
# to loopback only, sends no telemetry and loads no external resources (fonts, scripts).
# Point memwarden at it with:  memwarden demo --otlp http://127.0.0.1:6006/v1/traces
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${PHOENIX_VENV:-.venv-phoenix}"
STAMP="$VENV/.installed"
SPEC="arize-phoenix${PHOENIX_VERSION:+==$PHOENIX_VERSION}"

install() {
    if [ -f "$STAMP" ]; then
        return 0
    fi
    echo "phoenix: creating $VENV and installing $SPEC (this takes a few minutes the first time)" >&2
    started=$(date +%s)
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet "$SPEC"
    touch "$STAMP"
    echo "phoenix: installed in $(( $(date +%s) - started )) s" >&2
}

serve() {
    install
    # UI and OTLP/HTTP on loopback only. Phoenix's OTLP/gRPC receiver has no host setting and
    # listens on every interface at PHOENIX_GRPC_PORT: firewall it, or leave it unused.
    export PHOENIX_HOST="${PHOENIX_HOST:-127.0.0.1}"
    export PHOENIX_PORT="${PHOENIX_PORT:-6006}"
    export PHOENIX_GRPC_PORT="${PHOENIX_GRPC_PORT:-4317}"
    # Traces kept under .phoenix/ in this checkout (SQLite).
    export PHOENIX_WORKING_DIR="${PHOENIX_WORKING_DIR:-$PWD/.phoenix}"
    # Offline: no telemetry pixels (FullStory, Scarf), no public-internet requests of its own
    # (web fonts, sandbox download), no LLM assistant, no MCP endpoint.
    export PHOENIX_TELEMETRY_ENABLED=false
    export PHOENIX_ALLOW_EXTERNAL_RESOURCES=false
    export PHOENIX_DISABLE_AGENT_ASSISTANT=true
    export PHOENIX_AGENTS_DISABLE_BASH=true
    export PHOENIX_ENABLE_MCP_SERVER=false
    export DO_NOT_TRACK=1
    export PHOENIX_DB_LOGGING_LEVEL="${PHOENIX_DB_LOGGING_LEVEL:-warning}"
    mkdir -p "$PHOENIX_WORKING_DIR"
    echo "phoenix: UI and OTLP/HTTP at http://$PHOENIX_HOST:$PHOENIX_PORT (traces: /v1/traces)" >&2
    exec "$VENV/bin/phoenix" serve
}

case "${1:-serve}" in
    install) install ;;
    serve) serve ;;
    *) echo "usage: $0 [install|serve]" >&2; exit 2 ;;
esac
