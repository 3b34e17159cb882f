"""bench/decision_path_bench.py in its short form (CI): it starts its own Redis and bot process
and prints one line per way of sending a decision request (issue 41, point 6). Its figures are
printed, not asserted (a tiny run on a shared machine means nothing); every request was timed
and answered."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import run_bench

pytestmark = [pytest.mark.services, pytest.mark.slow]

WAYS = ("bare client", "bare transport", "arena player", "arena player with its cap", "cap script alone")


def test_the_decision_path_bench_prints_each_way_and_the_scripts_share() -> None:
    lines, stderr = run_bench("decision_path_bench.py", "--blocks", "1", timeout_s=300)
    assert [line.split(":")[0] for line in lines] == [*WAYS, "cap script in the path"]
    for line in lines[:-1]:
        assert re.fullmatch(r"[a-z ]+: \d+\.\d{3} ms", line) and float(line.split()[-2]) > 0, line
    assert re.fullmatch(r"cap script in the path: -?\d+\.\d{3} ms", lines[-1]), lines[-1]
    details = json.loads(stderr.strip().splitlines()[-1])
    assert details["requests_each_way"] == {way: 100 for way in WAYS}
