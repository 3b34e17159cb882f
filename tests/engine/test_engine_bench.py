"""bench/engine_bench.py prints the issue's exact line per rule set:
``<ruleset>: N decisions/s (pure P, compiled C)`` (the compiled figure only where it is built)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # the bench in a process of its own: the full lane (the engine's tests: the fast one)
def test_the_bench_prints_one_line_per_rule_set() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "engine_bench.py"), "--seconds", "0.05", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    head, *lines = run.stdout.splitlines()
    assert head.startswith("engine_bench: load average ") and "games without log" in head
    assert [line.split(":")[0] for line in lines] == ["million_doubt", "trump_millionaire", "jdf"]
    for line in lines:
        m = re.fullmatch(
            r"[a-z_]+: ([1-9][0-9]*) decisions/s \(pure ([1-9][0-9]*)(?:, compiled ([1-9][0-9]*))?\)", line
        )
        assert m is not None, line
        assert m.group(1) == (m.group(3) or m.group(2))  # the compiled figure where it is built
