"""The chaos bench in its short form (CI): workers SIGKILLed, Redis restarted empty, a
poison-pill bot; every match is stored exactly once and none is stuck. Its time figures are
printed, not asserted (bench/chaos_bench.py)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests import children

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.services
def test_chaos_bench_short():
    done = children.run(
        [sys.executable, str(REPO / "bench" / "chaos_bench.py"), "--short"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = done.stdout.strip().splitlines()[-1]
    print(line)
    m = re.fullmatch(
        r"chaos: (\d+) matches, (\d+) stored once, (\d+) failed, (\d+) stuck, "
        r"finished in \d+ s \(bound \d+ s\)",
        line,
    )
    assert m, line
    matches, once, failed, stuck = map(int, m.groups())
    assert matches == 66 and once == 66 and failed == 0 and stuck == 0
    details = json.loads(done.stderr.strip().splitlines()[-1])
    assert details["chaos"]["kills"] >= 1 and details["chaos"]["redis_restarts"] == 1
    assert details["chaos"]["poison_faults"] > 0
