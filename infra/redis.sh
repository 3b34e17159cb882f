#!/usr/bin/env bash
# Throwaway local Redis (Celery broker/result backend for tests and local runs).
#
#   bash infra/redis.sh start    # prints redis://127.0.0.1:PORT/0
#   bash infra/redis.sh status   # prints the URL and exits 0 if running, exits 1 otherwise
#   bash infra/redis.sh stop     # stops it by its PID
#
# Env:
#   ARENA_REDIS_PORT      TCP port (default 63799)
#   ARENA_REDIS_HOST      also listen on this address of the machine (a data host that workers,
#                         the API and gateways reach over the network; docs/operations.md,
#                         "Several machines"); then ARENA_REDIS_PASSWORD is required: Redis 7
#                         on a network address refuses clients in protected mode without one.
#                         `start` prints redis://:PASSWORD@HOST:PORT/0
#   ARENA_REDIS_PASSWORD  password every client then gives (requirepass, in a config file only
#                         the owner reads, never on a command line), loopback clients too;
#                         16 or more of A-Z a-z 0-9 . _ ~ - (`openssl rand -hex 24`)
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
if [[ -f "$STATE/url" ]]; then URL="$(cat "$STATE/url")"; fi

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
    local host="${ARENA_REDIS_HOST:-}" password="${ARENA_REDIS_PASSWORD:-}"
    if [[ -n "$host" ]]; then
        [[ ${#password} -ge 16 && "$password" =~ ^[A-Za-z0-9._~-]+$ ]] \
            || die "ARENA_REDIS_HOST needs ARENA_REDIS_PASSWORD: 16 or more of A-Z a-z 0-9 . _ ~ - (openssl rand -hex 24)"
    fi
    mkdir -p "$STATE"
    rm -f "$PIDFILE" "$STATE/url"
    URL="redis://127.0.0.1:$PORT/0"
    (umask 077 && : > "$STATE/redis.conf")
    if [[ -n "$host" ]]; then
        echo "requirepass $password" >> "$STATE/redis.conf"
        URL="redis://:$password@$host:$PORT/0"
        (umask 077 && echo "$URL" > "$STATE/url")
    fi
    redis-server "$STATE/redis.conf" --port "$PORT" --bind 127.0.0.1 ${host:+"$host"} --save '' --appendonly no \
        --daemonize yes --pidfile "$PIDFILE" --logfile "$STATE/redis.log" --dir "$STATE" \
        || die "redis-server failed to start (see $STATE/redis.log)"
    # Wait until it answers PING (daemonize returns before the socket is ready; with a password
    # it answers NOAUTH, which is an answer too). A guard of 60 s, for a loaded machine.
    local i
    for i in $(seq 1 1200); do
        if running && { exec 3<>"/dev/tcp/127.0.0.1/$PORT"; } 2>/dev/null; then
            printf 'PING\r\n' >&3
            local reply=""
            read -r -t 2 reply <&3 || true
            exec 3>&- 3<&-
            if [[ "$reply" == +PONG* || "$reply" == -NOAUTH* ]]; then
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
