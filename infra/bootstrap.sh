#!/usr/bin/env bash
# Create .venv (Python 3.11 or newer), install the project with its server, env, train and dev
# extras, and build the compiled engine in place (infra/build_engine.sh: mypyc; docs/engine.md).
#
# Idempotent and quick: pip runs only when pyproject.toml is newer than the
# stamp file .venv/.arena-installed (or the stamp is missing); the engine is compiled again
# only when its sources changed.
# Env: ARENA_PYTHON  interpreter used to create the venv (default: the first of python3.11,
#        python3.12, python3.13, python3 that is 3.11 or newer)
#      ARENA_FORCE_INSTALL=1  reinstall even if the stamp is fresh
#      ARENA_TORCH_INDEX  an extra index for torch (default: PyTorch's CPU wheels,
#        https://download.pytorch.org/whl/cpu; empty: the configured indexes only)
#      ARENA_ENGINE_BUILD=pure  no compiled engine (a machine without a C compiler); the
#        default, compiled, needs gcc (or $CC) and the Python headers
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
VENV="$REPO/.venv"
STAMP="$VENV/.arena-installed"

# the first of python3.11, python3.12, python3.13, python3 that is 3.11 or newer
find_python() {
    local candidate
    for candidate in python3.11 python3.12 python3.13 python3; do
        if command -v "$candidate" >/dev/null 2>&1 \
            && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

if [[ ! -x "$VENV/bin/python" ]]; then
    PY="${ARENA_PYTHON:-$(find_python || true)}"
    if [[ -z "$PY" ]] || ! command -v "$PY" >/dev/null 2>&1; then
        echo "bootstrap: no Python 3.11 or newer found (python3.11, python3.12, python3.13, python3);" \
            "install one, or set ARENA_PYTHON to its interpreter" >&2
        exit 1
    fi
    echo "bootstrap: creating $VENV with $PY" >&2
    "$PY" -m venv "$VENV"
fi

build_engine() {
    if [[ "${ARENA_ENGINE_BUILD:-compiled}" == compiled ]]; then
        bash "$REPO/infra/build_engine.sh"
    fi
}

if [[ "${ARENA_FORCE_INSTALL:-0}" != 1 && -f "$STAMP" && "$STAMP" -nt "$REPO/pyproject.toml" ]]; then
    build_engine
    exit 0
fi

echo "bootstrap: installing daifugo-arena[server,env,train,dev] into .venv" >&2
rm -f "$STAMP"
LOG="$VENV/pip-install.log"
# pip's and setuptools' chatter (build warnings) goes to $LOG; shown in full on failure.
# torch first, pinned (the train extra's), from its CPU index too: a bare resolution on PyPI
# takes a CUDA build of several GB.
TORCH_INDEX=()
if [[ -n "${ARENA_TORCH_INDEX-https://download.pytorch.org/whl/cpu}" ]]; then
    TORCH_INDEX=(--extra-index-url "${ARENA_TORCH_INDEX-https://download.pytorch.org/whl/cpu}")
fi
if ! { "$VENV/bin/python" -m pip install --disable-pip-version-check "${TORCH_INDEX[@]}" "torch==2.13.0" \
    && "$VENV/bin/python" -m pip install --disable-pip-version-check -e "$REPO[server,env,train,dev]"; } >"$LOG" 2>&1; then
    cat "$LOG" >&2
    echo "bootstrap: pip install failed (log: $LOG)" >&2
    exit 1
fi
"$VENV/bin/python" -m pip check >&2
touch "$STAMP"
build_engine
echo "bootstrap: done" >&2
