#!/usr/bin/env bash
# The README's quick tour in one command: everything a newcomer needs to go from nothing to a
# finished tournament in the browser, on 127.0.0.1:
#   PostgreSQL and Redis (infra/postgres.sh, infra/redis.sh), the site (`arena api`: REST API
#   and the /ui pages, gunicorn), one Celery worker (`arena worker`: bot checks and matches),
#   beat (`arena beat`: the reaper), a gateway (`arena gateway`: bots that dial out connect to
#   it), an organizer account whose token is printed, and two sample bots of that organizer
#   (`greedy` and `heuristic`, every rule set) registered through the API as bots that connect,
#   started with `arena bots connect` (they dial out: no listening port) and checked: ready;
#   and an open Million Doubt ladder both sample bots are entered in (`arena ladder`), beat
#   running its tick every ARENA_LADDER_TICK_S seconds (10 here unless set) and its official
#   table every ARENA_LADDER_FIT_S (60 here unless set), so the ladder moves during the tour.
#
#   bash infra/tour.sh           start (creates .venv first if needed); prints the addresses
#   bash infra/tour.sh status    what is running
#   bash infra/tour.sh stop      stop what it started (by pid) and throw the data away
#
# Env: ARENA_TOUR_PORT (site, default 8000), ARENA_TOUR_GATEWAY_PORT (gateway, default 8765),
#      ARENA_LADDER_TICK_S (the ladder's tick, default 10 here), ARENA_LADDER_FIT_S (60 here),
#      ARENA_TOUR_DIR (state, logs and pids, default <repo>/.services/tour, gitignored),
#      ARENA_PG_PORT / ARENA_REDIS_PORT (see infra/postgres.sh, infra/redis.sh).
# Bot URLs on 127.0.0.1 are refused as on a real site: every bot of the tour dials out. Export
# ARENA_ALLOW_PRIVATE_BOT_URLS=1 before starting it to register bots served over HTTP on this
# machine too. The session cookie works over plain HTTP (ARENA_COOKIE_SECURE=0): a local set-up,
# never expose it.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${ARENA_TOUR_DIR:-$REPO/.services/tour}"
PORT="${ARENA_TOUR_PORT:-8000}"
GATEWAY_PORT="${ARENA_TOUR_GATEWAY_PORT:-8765}"
ARENA="$REPO/.venv/bin/arena"
PY="$REPO/.venv/bin/python"
SITE="http://127.0.0.1:$PORT"
GATEWAY="ws://127.0.0.1:$GATEWAY_PORT/v1/bots"
#: the processes, in the order `stop` ends them: the worker first (a warm shutdown: its running
#: matches finish while the bots still answer), the site last
PROCESSES=(beat worker bot2 bot1 gateway site)
#: the sample bots: process name and sample bot
SAMPLES=("bot1 greedy" "bot2 heuristic")

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
    local kids kid
    for name in "${PROCESSES[@]}"; do
        if alive "$name"; then
            pid="$(cat "$STATE/$name.pid")"
            # arena worker's processes live in sessions of their own: found by their parent now
            kids="$(pgrep -P "$pid" 2>/dev/null || true)"
            kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
            kill -KILL -- "-$pid" 2>/dev/null || true
            for kid in $kids; do  # a warm shutdown waiting on a match that cannot end any more
                for _ in $(seq 1 20); do kill -0 "$kid" 2>/dev/null || break; sleep 0.25; done
                kill -KILL -- "-$kid" 2>/dev/null || kill -KILL "$kid" 2>/dev/null || true
            done
        fi
        rm -f "$STATE/$name.pid"
    done
    if [[ -f "$STATE/env" ]]; then
        # shellcheck disable=SC1091
        source "$STATE/env"
        ARENA_PG_PORT="$TOUR_PG_PORT" bash "$REPO/infra/postgres.sh" stop || true
        ARENA_REDIS_PORT="$TOUR_REDIS_PORT" bash "$REPO/infra/redis.sh" stop || true
        rm -f "$STATE/env"
        rm -rf "$STATE/data"  # the key of the stored secrets: nothing left to decrypt
    fi
    echo "tour.sh: stopped"
}

status() {
    local name
    for name in site worker beat gateway bot1 bot2; do
        if alive "$name"; then echo "$name: running (pid $(cat "$STATE/$name.pid"))"; else echo "$name: stopped"; fi
    done
}

port_free() {  # true if nothing listens on 127.0.0.1:$1
    ! { exec 9<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || { exec 9>&- 9<&-; return 1; }
}
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

api() {  # api METHOD PATH [JSON]: the API's JSON answer, as the organizer
    curl -sf -X "$1" "$SITE$2" -H "Authorization: Bearer $(cat "$STATE/organizer-token")" \
        ${3:+-H "Content-Type: application/json" --data "$3"}
}
field() {  # field NAME < JSON: one top-level field of a JSON object
    "$PY" -c 'import json, sys; v = json.load(sys.stdin)[sys.argv[1]]; print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$1"
}
bot_connected() { api GET "/api/v1/bots/$1" | field presence | grep -q '"connected": true'; }
bot_checked() {  # the check of bot $1 is over (ready, or failed)
    local s; s="$(api GET "/api/v1/bots/$1" | field status)"; [[ "$s" == ready || "$s" == failed ]]
}

start_samples() {  # register the sample bots as bots that connect, start them dialing out, check them
    local entry name sample bot id secret ids=()
    for entry in "${SAMPLES[@]}"; do
        read -r name sample <<<"$entry"
        bot="$(ARENA_API_URL="$SITE" ARENA_TOKEN="$(cat "$STATE/organizer-token")" "$ARENA" bots register "$sample" \
            --connect --ruleset million_doubt --ruleset trump_millionaire --ruleset jdf --json 2>>"$STATE/upgrade.log")" \
            || { stop >/dev/null; die "registering the sample bot $sample failed (see $STATE/upgrade.log)"; }
        id="$(field id <<<"$bot")"
        secret="$(field secret <<<"$bot")"
        # the secret goes to the bot through its environment, never on a command line
        ARENA_BOT_SECRET="$secret" spawn "$name" "$ARENA" bots connect --bot-id "$id" --gateway "$GATEWAY" "$sample"
        echo "$id" >"$STATE/$name.id"
        ids+=("$id")
    done
    for entry in "${SAMPLES[@]}"; do
        read -r name sample <<<"$entry"
        wait_for "$name" "the sample bot $sample (connecting to $GATEWAY)" bot_connected "$(cat "$STATE/$name.id")"
    done
    for id in "${ids[@]}"; do
        api POST "/api/v1/bots/$id/check" >/dev/null || { stop >/dev/null; die "the check of sample bot $id was refused"; }
    done
    for entry in "${SAMPLES[@]}"; do
        read -r name sample <<<"$entry"
        id="$(cat "$STATE/$name.id")"
        wait_for worker "the check of the sample bot $sample" bot_checked "$id"
        if [[ "$(api GET "/api/v1/bots/$id" | field status)" != ready ]]; then
            api GET "/api/v1/bots/$id" | field last_check >&2 || true
            stop >/dev/null
            die "the sample bot $sample failed its check (everything started is stopped again); see $STATE/*.log"
        fi
        # people may sit down against it at a table (docs/tables.md)
        api PATCH "/api/v1/bots/$id" '{"play_people": true}' >/dev/null || die "letting people play bot $id failed"
    done
}

start_ladder() {  # the open Million Doubt ladder, the two sample bots entered in it
    local id name
    id="$(ARENA_API_URL="$SITE" ARENA_TOKEN="$(cat "$STATE/organizer-token")" "$ARENA" ladder create --open \
        --ruleset million_doubt --name "Open Million Doubt" --time-bank 10 --increment 1 --cap 10 \
        --description "The tour's ladder: enter a ready bot of yours, watch it play the sample bots." \
        2>>"$STATE/upgrade.log")" || { stop >/dev/null; die "creating the ladder failed (see $STATE/upgrade.log)"; }
    echo "$id" >"$STATE/ladder.id"
    for name in bot1 bot2; do
        ARENA_API_URL="$SITE" ARENA_TOKEN="$(cat "$STATE/organizer-token")" "$ARENA" ladder enter "$id" \
            --bot "$(cat "$STATE/$name.id")" --max-concurrent 2 --max-sets-per-hour 120 \
            >/dev/null 2>>"$STATE/upgrade.log" \
            || { stop >/dev/null; die "entering sample bot $(cat "$STATE/$name.id") in the ladder failed"; }
    done
}

start() {
    alive site && { echo "tour.sh: already running (bash infra/tour.sh stop first)"; status; exit 0; }
    port_free "$PORT" || die "port $PORT is in use: choose another with ARENA_TOUR_PORT (the site)"
    port_free "$GATEWAY_PORT" || die "port $GATEWAY_PORT is in use: choose another with ARENA_TOUR_GATEWAY_PORT (the gateway)"
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
    export ARENA_COOKIE_SECURE=0 ARENA_DATA_DIR="$STATE/data" ARENA_GATEWAY_URL="$GATEWAY"
    # the ladder moves while the tour is looked at: a tick every 10 s, its official table every 60 s
    export ARENA_LADDER_TICK_S="${ARENA_LADDER_TICK_S:-10}" ARENA_LADDER_FIT_S="${ARENA_LADDER_FIT_S:-60}"
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
    spawn gateway "$ARENA" gateway --port "$GATEWAY_PORT"
    wait_for site "the site" curl -sf "$SITE/healthz"
    wait_for gateway "the gateway" curl -sf "http://127.0.0.1:$GATEWAY_PORT/health"
    wait_for worker "the worker" grep -q "ready\." "$STATE/worker.log"
    start_samples
    start_ladder
    cat <<EOF

Daifugo Arena is running (bash infra/tour.sh stop stops it):
  site             $SITE/ui/
  play a game      $SITE/ui/play (sign up first): learn the game against the sample bots
  sign up          $SITE/ui/signup
  gateway          $GATEWAY  (bots that dial out connect here)
  sample bots      #$(cat "$STATE/bot1.id") greedy, #$(cat "$STATE/bot2.id") heuristic: ready, dialing out (the organizer's; every rule set)
  ladder           $SITE/ui/ladders/$(cat "$STATE/ladder.id")  (open, Million Doubt: both sample bots entered; a tick every ${ARENA_LADDER_TICK_S} s)
  organizer token  $token
                   (sign in at $SITE/ui/login; also in $STATE/organizer-token)
  your own bot     register it at $SITE/ui/bots ("My bot connects to the arena"), then run
                   the command its page shows in a terminal, after: source $REPO/.venv/bin/activate
  API docs         $SITE/docs
  the CLI          export ARENA_API_URL=$SITE ARENA_GATEWAY_URL=$GATEWAY ARENA_TOKEN=<your token>
  logs             $STATE/{site,worker,beat,gateway,bot1,bot2}.log
EOF
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) die "usage: bash infra/tour.sh [start|status|stop]" ;;
esac
