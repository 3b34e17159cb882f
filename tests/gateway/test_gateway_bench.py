"""bench/gateway_bench.py in its short form (CI): it starts its own services, one real gateway
and the bots, and prints the issue's three lines. Its figures are printed, not asserted (a
tiny run on a shared machine means nothing); the decisions it counted were all answered."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import run_bench

pytestmark = [pytest.mark.services, pytest.mark.slow]

NUMBER = r"(\d+(?:\.\d+)?)"


def test_the_gateway_bench_prints_the_issues_three_lines() -> None:
    lines, stderr = run_bench("gateway_bench.py", "--short", timeout_s=600)
    assert len(lines) == 3, lines
    assert re.fullmatch(
        rf"gateway round trip: {NUMBER} ms median, {NUMBER} ms p99; http: {NUMBER} ms median, {NUMBER} ms p99",
        lines[0],
    ), lines[0]
    assert re.fullmatch(r"gateway decisions/s: [1-9]\d*", lines[1]), lines[1]
    idle = re.fullmatch(rf"gateway idle connections (\d+): (\d+) MB, {NUMBER} % cpu", lines[2])
    assert idle, lines[2]
    details = json.loads(stderr.strip().splitlines()[-1])
    assert int(idle.group(1)) == details["idle"]["connections"] == details["config"]["idle"]
    assert details["round_trip"]["gateway"]["samples"] == details["round_trip"]["http"]["samples"] > 0
    assert details["throughput"]["decisions"] > 0 and details["throughput"]["gateway_cpu_share"] > 0
