#!/usr/bin/env bash
# Throwaway local Redis (Celery broker/result backend for tests and local runs).
#
#   bash infra/redis.sh start    # prints redis://127.0.0.1:PORT/0
#   bash infra/redis.sh status   # prints the URL and exits 0 if running, exits 1 otherwise
#   bash infra/redis.sh stop     # stops it by its PID
#
# Env:
#   ARENA_REDIS_PORT  TCP port on 127.0.0.1 (default 63799)
#
# If redis-server is missing it is installed with apt-get (needs root; a non-root
# developer installs it once: `sudo apt-get install -y redis-server`).
# Nothing is persisted (--save '' --appendonly no). State: <repo>/.services/redis-PORT/.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT="${ARENA_REDIS_PORT:-63799}"
STATE="$REPO/.services/redis-$PORT"
PIDFILE="$STATE/redis.pid"
URL="redis://127.0.0.1:$PORT/0"

die() { echo "redis.sh: $*" >&2; exit 1; }

pid() { [[ -f "$PIDFILE" ]] && cat "$PIDFILE" || true; }

running() {
    local p; p="$(pid)"
    [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null
}

ensure_installed() {
    command -v redis-server >/dev/null 2>&1 && return 0
    [[ "$(id -u)" == 0 ]] || die "redis-server not found; install it: sudo apt-get install -y redis-server"
    echo "redis.sh: installing redis-server with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq redis-server; } >"${TMPDIR:-/tmp}/arena-apt-redis.log" 2>&1 \
        || { cat "${TMPDIR:-/tmp}/arena-apt-redis.log" >&2; die "apt-get install redis-server failed"; }
    command -v redis-server >/dev/null 2>&1 || die "redis-server still missing after apt-get"
}

start() {
    if running; then
        echo "$URL"
        return 0
    fi
    ensure_installed
    mkdir -p "$STATE"
    rm -f "$PIDFILE"
    redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize yes --pidfile "$PIDFILE" --logfile "$STATE/redis.log" --dir "$STATE" \
        || die "redis-server failed to start (see $STATE/redis.log)"
    # Wait until it answers PING (daemonize returns before the socket is ready).
    local i
    for i in $(seq 1 100); do
        if running && { exec 3<>"/dev/tcp/127.0.0.1/$PORT"; } 2>/dev/null; then
            printf 'PING\r\n' >&3
            local reply=""
            read -r -t 2 reply <&3 || true
            exec 3>&- 3<&-
            if [[ "$reply" == +PONG* ]]; then
                echo "$URL"
                return 0
            fi
        fi
        sleep 0.05
    done
    cat "$STATE/redis.log" >&2 || true
    die "redis-server did not answer on port $PORT"
}

stop() {
    local p; p="$(pid)"
    if [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null; then
        kill "$p" 2>/dev/null || true
        local i
        for i in $(seq 1 100); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.05
        done
        kill -9 "$p" 2>/dev/null || true
    fi
    rm -rf "$STATE"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) if running; then echo "$URL"; else echo "redis.sh: not running on port $PORT" >&2; exit 1; fi ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
