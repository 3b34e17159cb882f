#!/usr/bin/env bash
# THE test command: bash infra/test.sh [--fast] [pytest args...]
#
#   bash infra/test.sh            # everything (CI): PostgreSQL, Redis, workers, Chromium
#   bash infra/test.sh --fast     # the inner loop (under a minute): no service at all
#
# Full run:
# 1. infra/bootstrap.sh (.venv with the project and its dev extras; quick when done)
# 2. starts a throwaway PostgreSQL 15 and one throwaway Redis per pytest-xdist worker
#    (infra/postgres.sh, infra/redis.sh)
# 3. exports ARENA_TEST_DATABASE_URL, ARENA_TEST_BROKER_URL (the first Redis),
#    ARENA_TEST_BROKER_URLS (all of them, one per xdist worker), ARENA_ALLOW_PRIVATE_BOT_URLS=1;
#    installs the starters' toolchains (infra/starters.sh: apt-get as root when missing, npm ci;
#    a starter whose toolchain is missing has its tests skipped, saying so, except under CI=true)
# 4. runs .venv/bin/python -m pytest -n ARENA_TEST_WORKERS --dist loadfile --no-loadscope-reorder
#    "$@" (files longest first: tests/plugins/file_order.py); stops every
#    service on every exit path. Ctrl-C, SIGTERM or SIGHUP (a `timeout`, a cancelled CI job)
#    interrupt pytest at once: every test's processes are stopped by their finalizers
#    (tests/children.py), then the services.
# --fast: no PostgreSQL, Redis, worker or browser: runs
#    pytest -n 2 -m "not services and not browser and not slow" with the quick Hypothesis
#    profile (ARENA_HYPOTHESIS_PROFILE=quick); modules marked as a whole are not even imported
#    (ARENA_TEST_FAST=1, tests/conftest.py); a -m of yours comes after and wins. It runs the
#    engine build that is there (ARENA_ENGINE=auto: the compiled one when fresh).
# The full run asks for the compiled engine (ARENA_ENGINE=compiled, the service's build: an
#    import error everywhere if bootstrap could not build it); tests/engine/test_other_build.py
#    runs the engine's, the search bot's, the pars', the runner's and the env's tests again on
#    the pure engine. ARENA_ENGINE_BUILD=pure (no compiler) runs everything on the pure one.
# Either way the last line printed is pytest's summary line. Pytest's exit code 5 (no tests
# collected) is turned into a failure (exit 1).
#
# Env: ARENA_FAST_WORKERS  pytest-xdist workers of --fast (default 2; 0: one process).
#      ARENA_TEST_WORKERS  pytest-xdist workers of the full run (default 4: the tests mostly
#        wait on real workers and bots, so more workers than cores pay); 0 runs in one process.
#        When your args hold -n/--numprocesses, yours is used as it is.
#      ARENA_STORE_FILE_DURATIONS=1  a green run writes its seconds per test file to
#        tests/file_durations.json (the order files are handed out in: tests/plugins/file_order.py).
#      ARENA_PG_PORT (default 54329), ARENA_REDIS_PORT (default 63799, the first Redis): when
#        one is unset and its default port is taken (another run on this machine), a free port
#        is used; the other Redis servers always take free ports.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

bash infra/bootstrap.sh

FAST=0
if [[ "${1:-}" == "--fast" ]]; then
    FAST=1
    shift
fi

collected_none() {  # pytest's exit code 5 is a failure here
    echo "test.sh: pytest collected no tests: failing" >&2
}

# Bytecode caches are written (__pycache__/, gitignored): without them every run, and every
# CLI or worker process a test starts, compiles the project and rewrites the tests again.
unset PYTHONDONTWRITEBYTECODE

# Temporary files (SQLite databases, logs, tmp_path) on tmpfs when there is one: a SQLite
# commit is then no disk flush. Removed on exit.
RUN_TMP=""
if [[ -d /dev/shm && -w /dev/shm ]]; then
    RUN_TMP="$(mktemp -d /dev/shm/arena-tests.XXXXXX)"
    chmod 755 "$RUN_TMP"  # PostgreSQL (another user) makes its folders below
fi
remove_run_tmp() {
    if [[ -n "$RUN_TMP" ]]; then rm -rf "$RUN_TMP"; fi
}

if [[ $FAST -eq 1 ]]; then
    export ARENA_HYPOTHESIS_PROFILE="${ARENA_HYPOTHESIS_PROFILE:-quick}"
    export ARENA_ALLOW_PRIVATE_BOT_URLS=1 ARENA_TEST_FAST=1
    unset ARENA_TEST_DATABASE_URL ARENA_TEST_BROKER_URL ARENA_TEST_BROKER_URLS
    trap remove_run_tmp EXIT
    set +e
    TMPDIR="${RUN_TMP:-${TMPDIR:-/tmp}}" .venv/bin/python -m pytest -n "${ARENA_FAST_WORKERS:-2}" -p no:schemathesis -m "not services and not browser and not slow" "$@"
    rc=$?
    set -e
    if [[ $rc -eq 5 ]]; then collected_none; rc=1; fi
    exit "$rc"
fi

port_free() {  # true if nothing listens on 127.0.0.1:$1
    ! { exec 9<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || { exec 9>&- 9<&-; return 1; }
}
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
if [[ -z "${ARENA_PG_PORT:-}" ]]; then
    ARENA_PG_PORT=54329; port_free "$ARENA_PG_PORT" || ARENA_PG_PORT="$(free_port)"
fi
if [[ -z "${ARENA_REDIS_PORT:-}" ]]; then
    ARENA_REDIS_PORT=63799; port_free "$ARENA_REDIS_PORT" || ARENA_REDIS_PORT="$(free_port)"
fi
export ARENA_PG_PORT ARENA_REDIS_PORT
if [[ "${ARENA_ENGINE_BUILD:-compiled}" == compiled ]]; then
    export ARENA_ENGINE="${ARENA_ENGINE:-compiled}"
else
    export ARENA_ENGINE="${ARENA_ENGINE:-pure}"
fi

WORKERS="${ARENA_TEST_WORKERS:-4}"
XDIST=()
for arg in "$@"; do
    case "$arg" in -n | -n[0-9]* | --numprocesses | --numprocesses=*) WORKERS=given ;; esac
done
if [[ "$WORKERS" == given ]]; then
    WORKERS=4  # yours is used; one Redis each for up to 4 workers
elif [[ "$WORKERS" -gt 0 ]]; then
    # one file per worker at a time, longest first (tests/plugins/file_order.py)
    XDIST=(-n "$WORKERS" --dist loadfile --no-loadscope-reorder)
fi

REDIS_PORTS=("$ARENA_REDIS_PORT")
for ((i = 1; i < WORKERS; i++)); do
    REDIS_PORTS+=("$(free_port)")
done

cleanup() {
    local rc=$?
    local port
    for port in "${REDIS_PORTS[@]}"; do
        ARENA_REDIS_PORT="$port" bash infra/redis.sh stop || true
    done
    bash infra/postgres.sh stop || true
    remove_run_tmp
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# the starters' tests need their toolchains (Java, C++, Go, Node and its ws package)
bash infra/starters.sh || echo "test.sh: a starter's toolchain is missing: its tests skip (fail under CI=true)" >&2

# A free port may be taken between the check and the server's start (another run on this
# machine starting at the same moment): then the server is started again on another one.
start_pg() {
    local attempt
    for attempt in 1 2 3; do
        bash infra/postgres.sh start && return 0
        bash infra/postgres.sh stop || true
        ARENA_PG_PORT="$(free_port)"
        echo "test.sh: PostgreSQL did not start (attempt $attempt); trying port $ARENA_PG_PORT" >&2
    done
    return 1
}
ARENA_TEST_DATABASE_URL="$(start_pg)"
ARENA_PG_PORT="${ARENA_TEST_DATABASE_URL##*:}"
ARENA_PG_PORT="${ARENA_PG_PORT%%/*}"  # the port it runs on, for cleanup
ARENA_TEST_BROKER_URLS=""
for i in "${!REDIS_PORTS[@]}"; do
    for attempt in 1 2 3; do
        url="$(ARENA_REDIS_PORT="${REDIS_PORTS[$i]}" bash infra/redis.sh start)" && break
        ARENA_REDIS_PORT="${REDIS_PORTS[$i]}" bash infra/redis.sh stop || true
        REDIS_PORTS[i]="$(free_port)"
        url=""
        echo "test.sh: Redis did not start (attempt $attempt); trying port ${REDIS_PORTS[$i]}" >&2
    done
    [[ -n "$url" ]] || exit 1
    ARENA_TEST_BROKER_URLS+="$url "
done
ARENA_TEST_BROKER_URL="${ARENA_TEST_BROKER_URLS%% *}"
export ARENA_TEST_DATABASE_URL ARENA_TEST_BROKER_URL ARENA_TEST_BROKER_URLS
export ARENA_ALLOW_PRIVATE_BOT_URLS=1
echo "test.sh: PostgreSQL $ARENA_TEST_DATABASE_URL, Redis $ARENA_TEST_BROKER_URLS" >&2

set +e
if [[ -t 0 ]]; then
    # at a terminal: Ctrl-C reaches pytest and its xdist workers itself, --pdb reads the terminal
    TMPDIR="${RUN_TMP:-${TMPDIR:-/tmp}}" .venv/bin/python -m pytest "${XDIST[@]}" "$@"
    rc=$?
else
    # elsewhere (CI, `timeout`, a script): pytest in a process group of its own, and a signal
    # to this script passed on to that whole group at once (pytest and its xdist workers turn
    # SIGTERM into an interruption that runs every fixture's finalizer: tests/children.py), not
    # after pytest has finished; then the services above are stopped
    set -m
    TMPDIR="${RUN_TMP:-${TMPDIR:-/tmp}}" .venv/bin/python -m pytest "${XDIST[@]}" "$@" &
    PYTEST_PID=$!
    set +m
    trap 'kill -TERM -- "-$PYTEST_PID" 2>/dev/null; signalled=130' INT
    trap 'kill -TERM -- "-$PYTEST_PID" 2>/dev/null; signalled=143' TERM HUP
    signalled=0
    wait "$PYTEST_PID"
    rc=$?
    while kill -0 "$PYTEST_PID" 2>/dev/null; do  # a signal ended the wait: wait for pytest's end
        wait "$PYTEST_PID"
        rc=$?
    done
    if [[ $signalled -ne 0 ]]; then rc=$signalled; fi
fi
set -e
if [[ $rc -eq 5 ]]; then collected_none; rc=1; fi
exit "$rc"
