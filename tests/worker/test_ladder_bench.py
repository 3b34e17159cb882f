"""bench/ladder_bench.py in its short form (CI): it starts its own PostgreSQL, Redis, worker,
beat and bots, and prints the issue's lines. Its figures are printed, not asserted (a tiny
run on a shared machine means nothing); what it counted is checked against its details."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import run_bench

pytestmark = [pytest.mark.services, pytest.mark.slow]

NUMBER = r"(\d+(?:\.\d+)?)"


def test_the_ladder_bench_prints_the_issues_lines() -> None:
    lines, stderr = run_bench("ladder_bench.py", "--short")
    assert len(lines) == 5, lines
    assert re.fullmatch(r"ladder order million_doubt: sets >?\d+, baseline >?\d+", lines[0]), lines[0]
    assert re.fullmatch(r"ladder tick 1000 bots: \d+ ms", lines[1]), lines[1]
    assert re.fullmatch(rf"ladder rate set: {NUMBER} ms median", lines[2]), lines[2]
    assert re.fullmatch(r"ladder page 1000000 games: \d+ ms", lines[3]), lines[3]
    flow = re.fullmatch(r"ladder sets/min with 2 workers: (\d+), lower bound (\d+)", lines[4])
    assert flow, lines[4]
    details = json.loads(stderr.strip().splitlines()[-1])
    order = details["order_million_doubt"]
    assert order["pool_sets"] == 66 * 2 and set(order["pool_check"]) == {f"{k + 1}>{k}" for k in range(11)}
    assert details["tick_and_rate_before_load"]["rated"] == details["tick_and_rate_before_load"]["sets_formed"] > 0
    assert details["tick_and_rate_after_load"]["stored_sets"] > details["bulk_load"]["sets"] == 1000
    assert details["page"]["api_rows"] > 0
    assert details["throughput"]["sets_in_window"] > 0 and int(flow.group(2)) > 0
