"""bench/env_bench.py prints the issue's exact line per rule set (``env <ruleset>: N steps/s``),
after the load it ran under and PettingZoo's api_test."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow  # the bench in a process of its own (api_test: tests/bots_sdk/env/test_env.py, fast)
def test_the_bench_prints_one_line_per_rule_set() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "env_bench.py"), "--seconds", "0.05", "--rounds", "1", "--cycles", "20"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert re.fullmatch(
        r"env_bench: load average [0-9.]+ before, [0-9.]+ after, \d+ cores; pinned to CPU \d+; .*", lines[0]
    )
    assert lines[1:4] == [f"api_test {rs}: passed" for rs in ("million_doubt", "trump_millionaire", "jdf")]
    main = [line for line in lines[4:] if " with the pure engine" not in line]
    assert [line.split(":")[0] for line in main] == ["env million_doubt", "env trump_millionaire", "env jdf"]
    for line in main:
        assert re.fullmatch(r"env [a-z_]+: [1-9][0-9]* steps/s", line), line
