"""Issue 42, point 2, for a bot that dials out (a laptop that went to sleep): a real gateway,
worker, Redis and PostgreSQL; the bot is ``arena bots connect`` in a process of its own.

Its connection gone, a start says it is not connected and changes nothing; a start that waits
keeps the tournament ``created`` (polled by the worker) until the bot connects again, then it
starts and is played out with the bot's games answered (no fault)."""

from __future__ import annotations

import pytest

from arena.roll_call import NOT_CONNECTED
from tests.gateway.conftest import FINISH_TIMEOUT_S, DialStack
from tests.helpers import wait_until

pytestmark = [pytest.mark.services, pytest.mark.slow]

TIME_RULES = {"initial": 5.0, "increment": 1.0, "cap": 5.0}


def test_a_start_waits_for_a_bot_that_dials_out_to_connect_again(dial_stack) -> None:
    stack: DialStack = dial_stack(gateways=1)
    owner = stack.account("laptop-owner")
    bot = stack.register(owner, "laptop", "million_doubt")
    proc = stack.connect_bot(bot["id"], bot["secret"], [stack.gateways[0].url], pool=1)
    stack.connections(owner, bot["id"], 1)
    assert stack.check(owner, bot["id"])["status"] == "passed"
    rival_owner = stack.account("rival")
    rival = stack.http_bot(rival_owner, "greedy", 1, "million_doubt")
    assert stack.check(rival_owner, rival)["status"] == "passed"

    proc.stop()  # the laptop sleeps: its connection closes
    stack.connections(owner, bot["id"], 0)
    body = {"ruleset": "million_doubt", "participants": [bot["id"], rival], "time_rules": TIME_RULES}
    r = stack.http.post("/tournaments", json=body, headers=stack.org)
    assert r.status_code == 201, r.text
    tid = r.json()["id"]

    asked = stack.http.post(f"/tournaments/{tid}/start", headers=stack.org)
    assert asked.status_code == 409, asked.text
    offline = asked.json()["details"]["offline"]
    assert [(a["bot_id"], a["reason"], a["transport"]) for a in offline] == [(bot["id"], NOT_CONNECTED, "connect")]

    waiting = stack.http.post(
        f"/tournaments/{tid}/start", params={"if_offline": "wait", "wait_s": 900}, headers=stack.org
    )
    assert waiting.status_code == 202, waiting.text
    assert waiting.json()["status"] == "created" and waiting.json()["waiting_until"]
    first = stack.http.get(f"/tournaments/{tid}", headers=stack.org).json()["roll_call"]["checked_at"]
    wait_until(
        lambda: stack.http.get(f"/tournaments/{tid}", headers=stack.org).json()["roll_call"]["checked_at"] != first,
        "a poll of the waiting start",
        FINISH_TIMEOUT_S,
    )
    assert stack.http.get(f"/tournaments/{tid}", headers=stack.org).json()["status"] == "created"

    again = stack.connect_bot(bot["id"], bot["secret"], [stack.gateways[0].url], pool=1)  # it wakes up
    final = stack.wait_finished(tid) if _started(stack, tid) else None
    assert final is not None and final["status"] == "finished", final
    assert final["roll_call"]["offline"] == []  # everyone was online when it started
    (match,) = stack.matches(tid)
    seat = next(s["seat"] for s in match["seats"] if s["bot_id"] == bot["id"])
    assert match["result"]["faults"][seat] == 0  # it played its games
    assert again.alive(), again.log()


def _started(stack: DialStack, tid: int) -> bool:
    return bool(
        wait_until(
            lambda: stack.http.get(f"/tournaments/{tid}", headers=stack.org).json()["status"] != "created",
            "the start once the bot is back",
            FINISH_TIMEOUT_S,
        )
    )
