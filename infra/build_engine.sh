#!/usr/bin/env bash
# Build the compiled engine in place: engine/*.so beside the sources (mypyc; docs/engine.md,
# "Two builds"). Quick when it is already built from the current sources.
#
#   bash infra/build_engine.sh           # build when missing or stale
#   bash infra/build_engine.sh --force   # build anyway
#
# Needs .venv (infra/bootstrap.sh: its dev extra brings mypy and setuptools), a C compiler and
# the Python headers. The pure engine stays: ARENA_ENGINE=pure runs it (engine/_build.py).
# About 15 CPU-seconds. As root on Debian (CI), a missing gcc is installed with apt-get.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PY="$REPO/.venv/bin/python"

fresh() {  # the compiled modules are there and built from these sources
    (cd /tmp && ARENA_ENGINE=auto "$PY" -W error::RuntimeWarning -c \
        'import engine, sys; sys.exit(0 if engine.BUILD == "compiled" else 1)') >/dev/null 2>&1
}

if [[ "${1:-}" != "--force" ]] && fresh; then
    exit 0
fi
if ! command -v "${CC:-cc}" >/dev/null 2>&1; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then  # CI: root, Debian
        echo "build_engine: installing gcc with apt-get" >&2
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev; } \
            >"${TMPDIR:-/tmp}/arena-apt-gcc.log" 2>&1 \
            || { cat "${TMPDIR:-/tmp}/arena-apt-gcc.log" >&2; echo "build_engine: apt-get install gcc failed" >&2; exit 1; }
    else
        echo "build_engine: no C compiler (${CC:-cc}): install one (sudo apt-get install gcc), or run the pure engine (ARENA_ENGINE_BUILD=pure)" >&2
        exit 1
    fi
fi
echo "build_engine: compiling the engine with mypyc (about 15 CPU-seconds)" >&2
LOG="$REPO/.venv/build-engine.log"
# the editable install builds the extensions in place; --no-build-isolation: the venv's own
# setuptools and mypy (the dev extra), no download
if ! ARENA_ENGINE_BUILD=compiled "$PY" -m pip install --disable-pip-version-check --no-deps \
    --no-build-isolation -e "$REPO" >"$LOG" 2>&1; then
    cat "$LOG" >&2
    echo "build_engine: the build failed (log: $LOG)" >&2
    exit 1
fi
if ! fresh; then
    echo "build_engine: built, but the compiled engine does not load (ARENA_ENGINE=compiled to see why)" >&2
    exit 1
fi
echo "build_engine: done" >&2
