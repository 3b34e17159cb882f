#!/usr/bin/env bash
# Throwaway local PostgreSQL 15 for tests and local runs.
#
#   bash infra/postgres.sh start    # prints postgresql+psycopg://postgres@127.0.0.1:PORT/arena
#   bash infra/postgres.sh status   # prints the URL and exits 0 if running, exits 1 otherwise
#   bash infra/postgres.sh stop     # stops the server and deletes its data folder
#   bash infra/postgres.sh halt     # stops the server, keeping its data: an outage; `start`
#                                   # brings the same server back on its data
#
# Env:
#   ARENA_PG_PORT      TCP port (default 54329)
#   ARENA_PG_BIN       folder with initdb/pg_ctl/postgres (default /usr/lib/postgresql/15/bin)
#   ARENA_PG_HOST      also listen on this address of the machine (a data host that workers and
#                      the API reach over the network; docs/operations.md, "Several machines");
#                      then ARENA_PG_PASSWORD is required, and `start` prints
#                      postgresql+psycopg://arena:PASSWORD@HOST:PORT/arena
#   ARENA_PG_PASSWORD  password of the role `arena` (owner of the database `arena`), the only
#                      role let in from the network (scram-sha-256); 16 or more of A-Z a-z 0-9 . _ ~ -
#                      (`openssl rand -hex 24`), so the URL needs no escaping
#   ARENA_PG_ALLOW     client addresses let in from the network, as pg_hba.conf writes them
#                      (default samenet: the subnets of the machine's own addresses)
#
# State lives in <repo>/.services/postgres-PORT/ (gitignored): `datadir` names the data
# folder (under a mktemp dir), the server's pid is in its postmaster.pid.
# The data is thrown away on stop: fsync=off, trust auth on 127.0.0.1 only (the superuser
# `postgres` is never let in from the network).
#
# As root (CI, these machines) initdb/pg_ctl run as the `postgres` system user through
# `runuser`, because PostgreSQL refuses to run as root. As a non-root developer the
# server runs as yourself: you need the PostgreSQL 15 server binaries (Debian:
# `apt-get install postgresql-15`, or set ARENA_PG_BIN) and nothing else; the
# database superuser is still called `postgres` (initdb -U postgres).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT="${ARENA_PG_PORT:-54329}"
BIN="${ARENA_PG_BIN:-/usr/lib/postgresql/15/bin}"
STATE="$REPO/.services/postgres-$PORT"
URL="postgresql+psycopg://postgres@127.0.0.1:$PORT/arena"

die() { echo "postgres.sh: $*" >&2; exit 1; }

# The address served beyond loopback: the one of the first start, kept for a halted server.
HOST="${ARENA_PG_HOST:-}"
if [[ -f "$STATE/host" ]]; then HOST="$(cat "$STATE/host")"; fi
if [[ -f "$STATE/url" ]]; then URL="$(cat "$STATE/url")"; fi

check_password() {  # check_password VAR VALUE: a password that fits a URL as it is
    [[ -n "$2" ]] || die "$1 is required with ARENA_PG_HOST (a password of 16 or more of A-Z a-z 0-9 . _ ~ -)"
    [[ ${#2} -ge 16 && "$2" =~ ^[A-Za-z0-9._~-]+$ ]] \
        || die "$1 must be 16 or more of A-Z a-z 0-9 . _ ~ - (openssl rand -hex 24)"
}

as_pg() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

datadir() { [[ -f "$STATE/datadir" ]] && cat "$STATE/datadir" || true; }

running() {
    local d; d="$(datadir)"
    [[ -n "$d" && -d "$d" ]] || return 1
    as_pg "$BIN/pg_ctl" -D "$d" status >/dev/null 2>&1
}

install_if_missing() {
    # A fresh Debian machine without the server: install it from the system packages (root
    # only; the package also creates the `postgres` system user). A non-root developer
    # installs it once: sudo apt-get install -y postgresql-15
    [[ -x "$BIN/pg_ctl" ]] && return 0
    [[ -z "${ARENA_PG_BIN:-}" && "$(id -u)" == 0 ]] || die "PostgreSQL binaries not found in $BIN (set ARENA_PG_BIN, or: sudo apt-get install -y postgresql-15)"
    echo "postgres.sh: installing postgresql-15 with apt-get" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15; } \
        >"${TMPDIR:-/tmp}/arena-apt-postgres.log" 2>&1 \
        || { cat "${TMPDIR:-/tmp}/arena-apt-postgres.log" >&2; die "apt-get install postgresql-15 failed"; }
    # the package may start a cluster of its own on 5432; ours uses its own port and folder
    [[ -x "$BIN/pg_ctl" ]] || die "PostgreSQL binaries still missing in $BIN after apt-get"
}

# The server's options, the same at every start (a halted server comes back as it was).
server_options() {
    echo "-c listen_addresses=127.0.0.1${HOST:+,$HOST} -c port=$PORT -c unix_socket_directories=$1 -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
}

start() {
    install_if_missing
    if running; then
        echo "$URL"
        return 0
    fi
    local kept; kept="$(datadir)"
    if [[ -f "$STATE/halted" && -n "$kept" && -d "$kept" ]]; then
        # halted: the same server again, on its data
        local top; top="$(dirname "$kept")"
        as_pg "$BIN/pg_ctl" -D "$kept" -l "$top/server.log" -w -t 30 -o "$(server_options "$top")" \
            start >/dev/null || { cat "$top/server.log" >&2 || true; die "server did not start again on port $PORT"; }
        rm -f "$STATE/halted"
        echo "$URL"
        return 0
    fi
    if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
        die "running as root needs a 'postgres' system user (PostgreSQL refuses root)"
    fi
    # Leftovers of a crashed run.
    local old; old="$(datadir)"
    [[ -n "$old" ]] && rm -rf "$(dirname "$old")"
    rm -f "$STATE/host" "$STATE/url"
    HOST="${ARENA_PG_HOST:-}"
    if [[ -n "$HOST" ]]; then check_password ARENA_PG_PASSWORD "${ARENA_PG_PASSWORD:-}"; fi
    mkdir -p "$STATE"

    local top; top="$(mktemp -d "${TMPDIR:-/tmp}/arena-pg-$PORT.XXXXXX")"
    chmod 755 "$top"
    local d="$top/data"
    mkdir -p "$d"
    chmod 700 "$d"
    # The server writes its log and socket in $top and owns $d.
    if [[ "$(id -u)" == 0 ]]; then chown -R postgres: "$top"; fi
    echo "$d" > "$STATE/datadir"

    as_pg "$BIN/initdb" -D "$d" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
        >"$STATE/initdb.log" 2>&1 || { cat "$STATE/initdb.log" >&2; die "initdb failed"; }
    # Trust only loopback TCP (and the local socket in the data folder); from the network, only
    # the role `arena` with its password, to its database.
    cat > "$d/pg_hba.conf" <<HBA
local all all trust
host  all all 127.0.0.1/32 trust
HBA
    if [[ -n "$HOST" ]]; then
        echo "host  arena arena ${ARENA_PG_ALLOW:-samenet} scram-sha-256" >> "$d/pg_hba.conf"
    fi
    as_pg "$BIN/pg_ctl" -D "$d" -l "$top/server.log" -w -t 30 -o "$(server_options "$top")" \
        start >/dev/null || { cat "$top/server.log" >&2 || true; die "server did not start on port $PORT"; }
    echo "$top/server.log" > "$STATE/logfile"
    as_pg "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres arena \
        || die "could not create database arena"
    if [[ -n "$HOST" ]]; then
        # the password goes through stdin, never on a command line
        as_pg "$BIN/psql" -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres arena >/dev/null <<SQL \
            || die "could not create the role arena"
CREATE ROLE arena LOGIN PASSWORD '$ARENA_PG_PASSWORD';
ALTER DATABASE arena OWNER TO arena;
ALTER SCHEMA public OWNER TO arena;
SQL
        URL="postgresql+psycopg://arena:$ARENA_PG_PASSWORD@$HOST:$PORT/arena"
        echo "$HOST" > "$STATE/host"
        (umask 077 && echo "$URL" > "$STATE/url")
    fi
    echo "$URL"
}

halt() {
    # An outage: open connections are cut and new ones refused; the data stays. A fast
    # shutdown, not an immediate one: with synchronous_commit=off an immediate one would
    # lose the commits of the last fraction of a second.
    local d; d="$(datadir)"
    [[ -n "$d" && -d "$d" ]] || die "no server on port $PORT"
    touch "$STATE/halted"
    as_pg "$BIN/pg_ctl" -D "$d" -m fast -w stop >/dev/null
}

stop() {
    local d; d="$(datadir)"
    if [[ -n "$d" && -d "$d" ]]; then
        as_pg "$BIN/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1 || true
        rm -rf "$(dirname "$d")"
    fi
    rm -rf "$STATE"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    halt) halt ;;
    status) if running; then echo "$URL"; else echo "postgres.sh: not running on port $PORT" >&2; exit 1; fi ;;
    *) echo "usage: $0 start|stop|halt|status" >&2; exit 2 ;;
esac
