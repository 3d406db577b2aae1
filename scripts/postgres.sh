#!/usr/bin/env bash
# A local PostgreSQL cluster for memwarden's shared policies and audit log (Debian's
# `postgresql` package, or any install with initdb and pg_ctl). Used by `make postgres` and by
# the tests' `postgres` fixture.
#
#   scripts/postgres.sh start DIR [PORT] [-c NAME=VALUE ...]
#       create a cluster in DIR (first time only), start it on 127.0.0.1:PORT (default 5433),
#       and print its URL, e.g. postgresql://memwarden@127.0.0.1:5433/memwarden
#   scripts/postgres.sh stop DIR [fast|immediate]
#
# The cluster trusts local connections from the `memwarden` user only on 127.0.0.1 (and on a
# Unix socket inside DIR): it is for development and tests, not for production. Run as root, the
# server runs as the `postgres` user (PostgreSQL refuses to run as root). Exit status 3 means no
# PostgreSQL server binaries were found.
set -euo pipefail

die() { echo "postgres.sh: $*" >&2; exit "${2:-1}"; }

bindir() {
    if [ -n "${PG_BINDIR:-}" ]; then echo "$PG_BINDIR"; return; fi
    local newest
    newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    if [ -n "$newest" ] && [ -x "$newest/pg_ctl" ]; then echo "$newest"; return; fi
    if command -v pg_ctl >/dev/null 2>&1; then dirname "$(command -v pg_ctl)"; return; fi
    die "no PostgreSQL server binaries (initdb, pg_ctl); install them, e.g. apt-get install postgresql" 3
}

# Runs a server binary as the cluster's owner: `postgres` when we are root, else ourselves.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || die "running as root needs a 'postgres' user to own the cluster"
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

start() {
    local dir=${1:?usage: postgres.sh start DIR [PORT] [-c NAME=VALUE ...]} port=${2:-5433}
    shift $(( $# >= 2 ? 2 : 1 ))
    local bin; bin=$(bindir)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" = 0 ]; then
        chown postgres: "$dir" && chmod 700 "$dir"
        as_owner test -x "$dir" || die "the postgres user cannot reach $dir (a parent directory is private to root)"
    fi
    if [ ! -f "$dir/PG_VERSION" ]; then
        as_owner "$bin/initdb" -D "$dir" -U memwarden --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync >"$dir.initdb.log" 2>&1 \
            || { cat "$dir.initdb.log" >&2; die "initdb failed"; }
        rm -f "$dir.initdb.log"
        # Loopback and the socket in DIR only.
        printf 'local all memwarden trust\nhost all memwarden 127.0.0.1/32 trust\n' >"$dir/pg_hba.conf"
    fi
    if as_owner "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then  # already running: say where
        echo "postgresql://memwarden@127.0.0.1:$(sed -n 4p "$dir/postmaster.pid")/memwarden"
        return 0
    fi
    as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir $*" start >/dev/null \
        || { tail -20 "$dir/server.log" >&2; die "the server did not start (see $dir/server.log)"; }
    as_owner "$bin/psql" -h 127.0.0.1 -p "$port" -U memwarden -d postgres -qAt \
        -c "SELECT 1 FROM pg_database WHERE datname = 'memwarden'" | grep -q 1 \
        || as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U memwarden memwarden
    echo "postgresql://memwarden@127.0.0.1:$port/memwarden"
}

stop() {
    local dir=${1:?usage: postgres.sh stop DIR [fast|immediate]} mode=${2:-fast}
    [ -f "$dir/postmaster.pid" ] || return 0
    as_owner "$(bindir)/pg_ctl" -D "$dir" -m "$mode" -w stop >/dev/null
}

case "${1:-}" in
    start) shift; start "$@" ;;
    stop) shift; stop "$@" ;;
    *) die "usage: postgres.sh start DIR [PORT] [-c NAME=VALUE ...] | stop DIR [fast|immediate]" 2 ;;
esac
