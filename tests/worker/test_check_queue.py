"""The check queue is fair per client (issue 38), through a real worker, Redis, PostgreSQL and
HTTP bots on 127.0.0.1: a flood of checks whose bots hold every decision, from three accounts
of one address, and an honest contestant's check from another address asked after them.

Before: checks ran first come, first served: 66 such checks on 4 threads kept an honest check
``queued`` for the five minutes it was watched (about 50 minutes of queue). Now a check
delivery runs the queued check whose client runs the fewest (arena.lifecycle.claim_check):
the honest check starts as soon as one running check ends, ahead of the flood.
"""

from __future__ import annotations

import uuid

import pytest

from arena.db.models import BotCheck
from bots_sdk.samples import SAMPLE_BOTS
from tests.helpers import wait_until
from tests.worker.conftest import FINISH_TIMEOUT_S, SwitchBot

pytestmark = pytest.mark.services

FLOOD_ADDRESS, HONEST_ADDRESS = "198.51.100.7", "203.0.113.9"


def test_an_honest_check_waits_for_one_check_not_for_the_flood(arena, bots, celery_worker_factory, pg_database):
    worker = celery_worker_factory(
        database_url=pg_database,
        concurrency=2,
        pool="threads",
        queues=("arena.checks",),
        env={"ARENA_CHECK_TIME_LIMIT_S": "600"},
    )
    flood: list[tuple[int, SwitchBot]] = []
    for a in range(3):  # three accounts of one address, two checks each (the per-account cap)
        r = arena.client.post("/api/v1/accounts", json={"name": f"flood-{a}-{uuid.uuid4().hex[:4]}"})
        owner = {"Authorization": f"Bearer {r.json['token']}"}
        for k in range(2):
            holder = SwitchBot(SAMPLE_BOTS["greedy"](), mode="gate")  # holds every decision
            bots.append(holder)
            b = arena.client.post(
                "/api/v1/bots",
                json={"name": f"hold-{a}-{k}", "url": holder.url, "rulesets": ["million_doubt"]},
                headers=owner,
            )
            holder.set_secret(b.json["secret"])
            c = arena.client.post(
                f"/api/v1/bots/{b.json['id']}/check", headers=owner, environ_base={"REMOTE_ADDR": FLOOD_ADDRESS}
            )
            assert c.status_code == 202, c.json
            flood.append((c.json["id"], holder))

    def status(check_id: int) -> str:
        with arena.sessions() as s:
            check = s.get(BotCheck, check_id)
            assert check is not None
            return check.status

    wait_until(lambda: [status(c) for c, _ in flood].count("running") == 2, "both check threads held", 120)
    honest_bot = SwitchBot(SAMPLE_BOTS["greedy"]())
    bots.append(honest_bot)
    b = arena.client.post(
        "/api/v1/bots",
        json={"name": "honest", "url": honest_bot.url, "rulesets": ["million_doubt"]},
        headers=arena.owner,
    )
    honest_bot.set_secret(b.json["secret"])
    c = arena.client.post(
        f"/api/v1/bots/{b.json['id']}/check", headers=arena.owner, environ_base={"REMOTE_ADDR": HONEST_ADDRESS}
    )
    assert c.status_code == 202 and c.json["status"] == "queued", c.json
    honest = c.json["id"]
    with arena.sessions() as s:
        assert s.get(BotCheck, honest).client == HONEST_ADDRESS  # one notion of a client (arena.clients)
    # one running flood check ends: the next check to run is the honest one, not the flood's third
    first = next(cid for cid, _ in flood if status(cid) == "running")
    dict(flood)[first].gate.set()
    wait_until(lambda: status(first) not in ("queued", "running"), "the first flood check over", FINISH_TIMEOUT_S)
    wait_until(lambda: status(honest) not in ("queued",), "the honest check started", FINISH_TIMEOUT_S)
    queued = [cid for cid, _ in flood if status(cid) == "queued"]
    assert len(queued) == 4, [status(cid) for cid, _ in flood]  # before: the flood's next, the honest one last
    wait_until(lambda: status(honest) == "passed", "the honest check passed", FINISH_TIMEOUT_S)
    for _, holder in flood:
        holder.gate.set()
    wait_until(
        lambda: all(status(cid) in ("passed", "failed") for cid, _ in flood), "every flood check over", FINISH_TIMEOUT_S
    )
    assert worker.alive(), worker.log()
