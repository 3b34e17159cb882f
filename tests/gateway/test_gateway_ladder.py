"""A ladder with bots that dial out (docs/ladder.md): real gateway, worker, beat, Redis,
PostgreSQL; two bots that connect (``arena bots connect``) and one HTTP bot. A bot that dials
out is seated while it holds a connection; once its process is gone it is not seated any more
(no set formed for it, the table says it is offline) while the others play on."""

from __future__ import annotations

import pytest

from arena.queue import LADDER_QUEUE, PRIORITY_QUEUE, QUEUE
from tests.gateway.conftest import FINISH_TIMEOUT_S, DialStack
from tests.helpers import wait_until

pytestmark = [pytest.mark.services, pytest.mark.slow]

RS = "million_doubt"
BEAT_ENV = {"ARENA_LADDER_TICK_S": "1", "ARENA_LADDER_PROBE_S": "5", "ARENA_REAPER_INTERVAL_S": "2"}


def test_bots_that_dial_out_are_seated_while_connected(dial_stack, celery_worker_factory, beat_factory) -> None:
    stack: DialStack = dial_stack(gateways=1)
    gateway = {"ARENA_GATEWAY_URL": stack.gateways[0].url}
    celery_worker_factory(
        broker_url=stack.broker,
        database_url=stack.db,
        pool="threads",
        concurrency=6,
        queues=(PRIORITY_QUEUE, QUEUE, LADDER_QUEUE),
        env=gateway,
    )
    r = stack.http.post(
        "/ladders",
        json={
            "name": "dial",
            "ruleset": RS,
            "open": True,
            "time_rules": {"initial": 5.0, "increment": 1.0, "cap": 5.0},
            "config": {"fill_with_house_bots": False, "pair_free_sets": 1000},
        },
        headers=stack.org,
    )
    assert r.status_code == 201, r.text
    ladder = r.json()["id"]
    entrants = []
    procs = {}
    for name in ("laptop", "lab"):
        owner = stack.account(name)
        bot = stack.register(owner, name, RS)
        procs[bot["id"]] = stack.connect_bot(bot["id"], bot["secret"], [stack.gateways[0].url], pool=1)
        stack.connections(owner, bot["id"], 1)
        assert stack.check(owner, bot["id"])["status"] == "passed"
        entrants.append((owner, bot["id"]))
    owner = stack.account("server")
    http_bot = stack.http_bot(owner, "greedy", 1, RS)
    assert stack.check(owner, http_bot)["status"] == "passed"
    entrants.append((owner, http_bot))
    for owner, bot in entrants:
        r = stack.http.post(f"/ladders/{ladder}/entries", json={"bot_id": bot, "max_sets_per_hour": 120}, headers=owner)
        assert r.status_code == 201, r.text
    beat_factory(database_url=stack.db, broker_url=stack.broker, env={**BEAT_ENV, **gateway})

    def table() -> dict[int, dict]:
        return {row["bot_id"]: row for row in stack.http.get(f"/ladders/{ladder}").json()["rows"] if row["bot_id"]}

    wait_until(lambda: all(r["sets"] >= 3 for r in table().values()), "every bot rated in 3 sets", FINISH_TIMEOUT_S)
    assert all(r["online"] for r in table().values())
    gone = entrants[0][1]
    procs[gone].stop()
    wait_until(lambda: not table()[gone]["online"], "the bot that left shown offline", FINISH_TIMEOUT_S)
    sets_then = table()[gone]["sets"]
    others = {b: table()[b]["sets"] for _, b in entrants[1:]}
    wait_until(
        lambda: all(table()[b]["sets"] >= n + 2 for b, n in others.items()), "the others play on", FINISH_TIMEOUT_S
    )
    playing = stack.http.get(f"/ladders/{ladder}/sets", params={"playing": "true"}).json()
    entry_gone = table()[gone]["entry_id"]
    assert all(entry_gone not in s["entries"] for s in playing)
    assert table()[gone]["sets"] <= sets_then + 1  # at most the set it was in when it left
