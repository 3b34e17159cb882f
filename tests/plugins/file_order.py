"""Longest test files first: the order pytest-xdist hands files to its workers.

``infra/test.sh`` runs the full suite with ``--dist loadfile --no-loadscope-reorder``: each xdist
worker takes the next file in collection order as it finishes one. Files are collected here in
order of their measured seconds, longest first (``tests/file_durations.json``, a file's summed
setup, call and teardown times), so no long file is started near the end while the other
workers sit idle. Tests keep their order inside a file; a file not measured yet comes last.

Measuring: ``ARENA_STORE_FILE_DURATIONS=1 bash infra/test.sh`` writes the run's seconds per file
to ``tests/file_durations.json`` at the end of a run with no failure (commit it when the suite's
files change much).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parents[1] / "file_durations.json"
#: Set to 1: write the run's seconds per file to :data:`DURATIONS` at the end.
STORE_VAR = "ARENA_STORE_FILE_DURATIONS"

_seconds: defaultdict[str, float] = defaultdict(float)


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _measured() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Reorder ``items``: files by measured seconds, longest first, then the others in their
    collection order; a stable sort, so every xdist worker collects the same order."""
    seconds = _measured()
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(_file(item.nodeid), len(first_seen))
    items.sort(key=lambda item: (-seconds.get(_file(item.nodeid), 0.0), first_seen[_file(item.nodeid)]))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get(STORE_VAR) == "1":
        _seconds[_file(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get(STORE_VAR) != "1" or os.environ.get("PYTEST_XDIST_WORKER") or exitstatus != 0:
        return
    ordered = dict(sorted(((f, round(s, 1)) for f, s in _seconds.items()), key=lambda fs: (-fs[1], fs[0])))
    DURATIONS.write_text(json.dumps(ordered, indent=0) + "\n")
