#!/usr/bin/env bash
# THE test command: bash infra/test.sh [pytest args...]
#
# 1. infra/bootstrap.sh (.venv with the project and its dev extras; quick when done)
# 2. starts throwaway PostgreSQL 15 and Redis (infra/postgres.sh, infra/redis.sh)
# 3. exports ARENA_TEST_DATABASE_URL, ARENA_TEST_BROKER_URL, ARENA_ALLOW_PRIVATE_BOT_URLS=1
# 4. runs .venv/bin/python -m pytest "$@"; stops both services on every exit path.
# Pytest's exit code 5 (no tests collected) is turned into a failure (exit 1).
#
# Ports: ARENA_PG_PORT (default 54329) and ARENA_REDIS_PORT (default 63799); when one is
# unset and its default port is taken (another run on this machine), a free port is used.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

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

bash infra/bootstrap.sh

cleanup() {
    local rc=$?
    bash infra/redis.sh stop || true
    bash infra/postgres.sh stop || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ARENA_TEST_DATABASE_URL="$(bash infra/postgres.sh start)"
ARENA_TEST_BROKER_URL="$(bash infra/redis.sh start)"
export ARENA_TEST_DATABASE_URL ARENA_TEST_BROKER_URL
export ARENA_ALLOW_PRIVATE_BOT_URLS=1
echo "test.sh: PostgreSQL $ARENA_TEST_DATABASE_URL, Redis $ARENA_TEST_BROKER_URL" >&2

set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [[ $rc -eq 5 ]]; then
    echo "test.sh: pytest collected no tests: failing" >&2
    rc=1
fi
exit "$rc"
