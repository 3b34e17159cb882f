"""bench/env_bench.py prints one line per rule set in the issue's exact form."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")

ROOT = Path(__file__).resolve().parents[3]


def test_the_bench_prints_one_line_per_rule_set() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "env_bench.py"), "--steps", "200", "--cycles", "50"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["env million_doubt", "env trump_millionaire", "env jdf"]
    for line in lines:
        assert re.fullmatch(r"env [a-z_]+: api_test passed, [1-9][0-9]* steps/s", line), line
