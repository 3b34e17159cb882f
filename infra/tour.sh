#!/usr/bin/env bash
# The README's quick tour in one command: everything a newcomer needs to go from nothing to a
# finished tournament in the browser, on 127.0.0.1:
#   PostgreSQL and Redis (infra/postgres.sh, infra/redis.sh), the site (`arena api`: REST API
#   and the /ui pages, gunicorn), one Celery worker (`arena worker`: bot checks and matches),
#   beat (`arena beat`: the reaper) and two sample bot servers (`arena bots serve greedy` and
#   `heuristic`); an organizer account whose token is printed.
#
#   bash infra/tour.sh           start (creates .venv first if needed); prints the addresses
#   bash infra/tour.sh status    what is running
#   bash infra/tour.sh stop      stop what it started (by pid) and throw the data away
#
# Env: ARENA_TOUR_PORT (site, default 8000), ARENA_TOUR_BOT_PORTS (default "8101 8102"),
#      ARENA_PG_PORT / ARENA_REDIS_PORT (see infra/postgres.sh, infra/redis.sh).
# Local only: bot URLs on 127.0.0.1 are allowed (ARENA_ALLOW_PRIVATE_BOT_URLS=1) and the
# session cookie works over plain HTTP (ARENA_COOKIE_SECURE=0). Never expose this set-up.
# The sample bots run without a signing secret (they cannot know it before you register
# them): their check passes with a warning about the badly signed request. A real bot is
# started with the secret its page shows (bots_sdk.serve(bot, secret=...)).
# State, logs and pids: <repo>/.services/tour/ (gitignored).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="$REPO/.services/tour"
PORT="${ARENA_TOUR_PORT:-8000}"
read -r -a BOT_PORTS <<<"${ARENA_TOUR_BOT_PORTS:-8101 8102}"
ARENA="$REPO/.venv/bin/arena"
SITE="http://127.0.0.1:$PORT"

die() { echo "tour.sh: $*" >&2; exit 1; }

alive() { [[ -f "$STATE/$1.pid" ]] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

wait_for() {  # wait_for NAME WHAT COMMAND...: until COMMAND succeeds; gives up after 60 s,
    # or as soon as process NAME has exited; then stops everything started and says why
    local name="$1" what="$2"; shift 2
    for _ in $(seq 1 240); do
        "$@" >/dev/null 2>&1 && return 0
        if ! alive "$name"; then
            echo "tour.sh: $what exited; the end of $STATE/$name.log:" >&2
            tail -n 5 "$STATE/$name.log" >&2 || true
            stop >/dev/null
            die "$what did not come up (everything started is stopped again)"
        fi
        sleep 0.25
    done
    stop >/dev/null
    die "$what did not come up within 60 s (everything started is stopped again); see $STATE/*.log"
}

spawn() {  # spawn NAME COMMAND...: a background process in its own session, pid and log in STATE
    local name="$1"; shift
    setsid "$@" >"$STATE/$name.log" 2>&1 < /dev/null &
    echo $! >"$STATE/$name.pid"
}

stop() {
    local name pid
    # the worker first: its running matches finish (a warm shutdown) while the bots still answer
    for name in beat worker bot2 bot1 site; do
        if alive "$name"; then
            pid="$(cat "$STATE/$name.pid")"
            kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
            kill -KILL -- "-$pid" 2>/dev/null || true
        fi
        rm -f "$STATE/$name.pid"
    done
    if [[ -f "$STATE/env" ]]; then
        # shellcheck disable=SC1091
        source "$STATE/env"
        ARENA_PG_PORT="$TOUR_PG_PORT" bash "$REPO/infra/postgres.sh" stop || true
        ARENA_REDIS_PORT="$TOUR_REDIS_PORT" bash "$REPO/infra/redis.sh" stop || true
        rm -f "$STATE/env"
    fi
    echo "tour.sh: stopped"
}

status() {
    local name
    for name in site worker beat bot1 bot2; do
        if alive "$name"; then echo "$name: running (pid $(cat "$STATE/$name.pid"))"; else echo "$name: stopped"; fi
    done
}

port_free() {  # true if nothing listens on 127.0.0.1:$1
    ! { exec 9<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || { exec 9>&- 9<&-; return 1; }
}
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
    alive site && { echo "tour.sh: already running (bash infra/tour.sh stop first)"; status; exit 0; }
    local p
    for p in "$PORT" "${BOT_PORTS[@]}"; do
        port_free "$p" || die "port $p is in use: choose others with ARENA_TOUR_PORT (site, now $PORT) and ARENA_TOUR_BOT_PORTS (bots, now \"${BOT_PORTS[*]}\")"
    done
    bash "$REPO/infra/bootstrap.sh"
    mkdir -p "$STATE"
    # like infra/test.sh: a default port that is taken (another run) gives way to a free one
    local pg_port="${ARENA_PG_PORT:-}" redis_port="${ARENA_REDIS_PORT:-}"
    if [[ -z "$pg_port" ]]; then pg_port=54329; port_free "$pg_port" || pg_port="$(free_port)"; fi
    if [[ -z "$redis_port" ]]; then redis_port=63799; port_free "$redis_port" || redis_port="$(free_port)"; fi
    # written first, so `stop` also cleans up a start that failed half-way
    printf 'TOUR_PG_PORT=%s\nTOUR_REDIS_PORT=%s\n' "$pg_port" "$redis_port" >"$STATE/env"
    export ARENA_DATABASE_URL ARENA_BROKER_URL
    ARENA_DATABASE_URL="$(ARENA_PG_PORT="$pg_port" bash "$REPO/infra/postgres.sh" start)"
    ARENA_BROKER_URL="$(ARENA_REDIS_PORT="$redis_port" bash "$REPO/infra/redis.sh" start)"
    export ARENA_ALLOW_PRIVATE_BOT_URLS=1 ARENA_COOKIE_SECURE=0 ARENA_DATA_DIR="$STATE/data"
    mkdir -p "$ARENA_DATA_DIR"
    "$ARENA" db upgrade >"$STATE/upgrade.log" 2>&1 || { cat "$STATE/upgrade.log" >&2; die "arena db upgrade failed"; }
    local token
    token="$("$ARENA" accounts create --organizer organizer 2>>"$STATE/upgrade.log")" \
        || { cat "$STATE/upgrade.log" >&2; die "arena accounts create failed"; }
    echo "$token" >"$STATE/organizer-token"
    chmod 600 "$STATE/organizer-token"
    spawn site "$ARENA" api --port "$PORT" --no-upgrade
    spawn worker "$ARENA" worker --concurrency 8
    spawn beat "$ARENA" beat --schedule "$STATE/beat-schedule"
    spawn bot1 "$ARENA" bots serve greedy --port "${BOT_PORTS[0]}"
    spawn bot2 "$ARENA" bots serve heuristic --port "${BOT_PORTS[1]}"
    wait_for site "the site" curl -sf "$SITE/healthz"
    wait_for worker "the worker" grep -q "ready\." "$STATE/worker.log"
    wait_for bot1 "bot 1" curl -sf "http://127.0.0.1:${BOT_PORTS[0]}/"
    wait_for bot2 "bot 2" curl -sf "http://127.0.0.1:${BOT_PORTS[1]}/"
    cat <<EOF

Daifugo Arena is running (bash infra/tour.sh stop stops it):
  site             $SITE/ui/
  sign up          $SITE/ui/signup
  sample bot URLs  http://127.0.0.1:${BOT_PORTS[0]}/  (greedy)
                   http://127.0.0.1:${BOT_PORTS[1]}/  (heuristic)
  organizer token  $token
                   (sign in at $SITE/ui/login; also in $STATE/organizer-token)
  API docs         $SITE/docs
  logs             $STATE/{site,worker,beat,bot1,bot2}.log
EOF
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) die "usage: bash infra/tour.sh [start|status|stop]" ;;
esac
