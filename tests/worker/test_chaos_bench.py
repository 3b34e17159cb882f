"""The chaos bench in its short form (CI): workers SIGKILLed, Redis restarted empty, a
poison-pill bot; every match is stored exactly once and none is stuck. Its time figures are
printed, not asserted (bench/chaos_bench.py)."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import run_bench


@pytest.mark.services
def test_chaos_bench_short():
    lines, stderr = run_bench("chaos_bench.py", "--short")
    line = lines[-1]
    m = re.fullmatch(
        r"chaos: (\d+) matches, (\d+) stored once, (\d+) failed, (\d+) stuck, "
        r"finished in \d+ s \(bound \d+ s\)",
        line,
    )
    assert m, line
    matches, once, failed, stuck = map(int, m.groups())
    assert matches == 66 and once == 66 and failed == 0 and stuck == 0
    details = json.loads(stderr.strip().splitlines()[-1])
    assert details["chaos"]["kills"] >= 1 and details["chaos"]["redis_restarts"] == 1
    assert details["chaos"]["poison_faults"] > 0
