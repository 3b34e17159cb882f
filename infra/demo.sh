#!/usr/bin/env bash
# README command 1: set up .venv (infra/bootstrap.sh: Python 3.11 + pip install) and run
# `arena demo` on embedded defaults: four sample bots over HTTP on 127.0.0.1, the REST API,
# SQLite and in-process matches; standings, logs in ./demo-output/logs, replay page address.
#
#   bash infra/demo.sh                                  # Million Doubt
#   bash infra/demo.sh --ruleset trump_millionaire      # or jdf; --out DIR; --serve --port N
#   bash infra/demo.sh --connect                        # the bots dial out through a gateway
#                                                       # (needs redis-server, or --redis-url URL)
#
# Arguments go to `arena demo` (see `.venv/bin/arena demo --help`); relative --out paths are
# taken from the current directory.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/infra/bootstrap.sh"
exec "$REPO/.venv/bin/arena" demo "$@"
