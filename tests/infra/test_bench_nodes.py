"""``bench/tournament_bench.py`` counts the match processes of the ``arena worker`` it starts:
not its check process (``NAME-checks@``) nor its par process (``NAME-pars@``), which answered
``celery inspect`` now and then and made the bench fail with "3 of 2 worker processes
answered" (issue 42)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _bench():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("tournament_bench", REPO / "bench" / "tournament_bench.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO / "bench"))


def test_only_the_match_processes_count() -> None:
    is_match_node = _bench().is_match_node
    nodes = [
        "tbench1a2b3c-1@127.0.0.1",
        "tbench1a2b3c-2@127.0.0.1",
        "tbench1a2b3c-checks@127.0.0.1",
        "tbench1a2b3c-pars@127.0.0.1",
        "tbench1a2b3c@127.0.0.1",  # one process, no launcher
        "tbench1a2b3cd-1@127.0.0.1",  # another worker whose name starts the same
        "tbench999999-1@127.0.0.1",
    ]
    assert [n for n in nodes if is_match_node(n, "tbench1a2b3c")] == nodes[:2] + [nodes[4]]
