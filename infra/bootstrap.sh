#!/usr/bin/env bash
# Create .venv (Python 3.11 or newer) and install the project with its server, env and dev extras.
#
# Idempotent and quick: pip runs only when pyproject.toml is newer than the
# stamp file .venv/.arena-installed (or the stamp is missing).
# Env: ARENA_PYTHON  interpreter used to create the venv (default: python3.11; 3.11 or newer)
#      ARENA_FORCE_INSTALL=1  reinstall even if the stamp is fresh
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PY="${ARENA_PYTHON:-python3.11}"
VENV="$REPO/.venv"
STAMP="$VENV/.arena-installed"

if [[ ! -x "$VENV/bin/python" ]]; then
    if ! command -v "$PY" >/dev/null 2>&1; then
        echo "bootstrap: $PY not found; install Python 3.11, or set ARENA_PYTHON to a newer one (python3.12...)" >&2
        exit 1
    fi
    echo "bootstrap: creating $VENV with $PY" >&2
    "$PY" -m venv "$VENV"
fi

if [[ "${ARENA_FORCE_INSTALL:-0}" != 1 && -f "$STAMP" && "$STAMP" -nt "$REPO/pyproject.toml" ]]; then
    exit 0
fi

echo "bootstrap: installing daifugo-arena[server,env,dev] into .venv" >&2
rm -f "$STAMP"
LOG="$VENV/pip-install.log"
# pip's and setuptools' chatter (build warnings) goes to $LOG; shown in full on failure.
if ! "$VENV/bin/python" -m pip install --disable-pip-version-check -e "$REPO[server,env,dev]" >"$LOG" 2>&1; then
    cat "$LOG" >&2
    echo "bootstrap: pip install failed (log: $LOG)" >&2
    exit 1
fi
"$VENV/bin/python" -m pip check >&2
touch "$STAMP"
echo "bootstrap: done" >&2
