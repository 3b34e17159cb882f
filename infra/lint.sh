#!/usr/bin/env bash
# The static gates, in the order CI runs them before the tests (.ci/run):
#   lint-imports  the layer contract of pyproject.toml ([tool.importlinter])
#   ruff format   the one code format (--check: fails on any file it would change)
#   ruff check    lint and import order ([tool.ruff])
#   private names no module takes another module's private name (infra/private_imports.py)
#   dead code     no function, method or class nothing uses (infra/dead_code.py: vulture)
#   mypy          types: strict on engine/ and bots_sdk/, clean on the rest ([tool.mypy])
#   mypy --strict bots_sdk  the SDK as a contestant's type checker sees it (its own cache)
#   ruleset_gate  no module outside the rule-set descriptors branches on a rule set
#                 (infra/ruleset_gate.py; docs/architecture.md, "How to add a rule set")
# Uses .venv (infra/bootstrap.sh makes it). Exit status: the first gate that fails.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
bash infra/bootstrap.sh
echo "lint.sh: lint-imports" >&2
.venv/bin/lint-imports --no-cache
echo "lint.sh: ruff format --check" >&2
.venv/bin/ruff format --check .
echo "lint.sh: ruff check" >&2
.venv/bin/ruff check .
echo "lint.sh: private names" >&2
.venv/bin/python infra/private_imports.py
echo "lint.sh: dead code" >&2
.venv/bin/python infra/dead_code.py
echo "lint.sh: mypy" >&2
.venv/bin/mypy
echo "lint.sh: mypy --strict bots_sdk" >&2
.venv/bin/mypy --strict --cache-dir .mypy_cache/strict bots_sdk
echo "lint.sh: ruleset_gate" >&2
.venv/bin/python infra/ruleset_gate.py
