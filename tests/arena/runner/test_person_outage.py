"""A person's seat at a table when Redis dies mid-decision (docs/tables.md, arena/runner/person.py):
Redis gone for good is the arena's failure (``TableUnavailable``: no timeout charged to the
person); Redis back before the deadline, the request is asked again and the person's answer
taken. Each test runs its own redis-server and kills it."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import redis

from arena import tables
from arena.runner.person import PersonPlayer, TableUnavailable
from tests.worker.test_redis_restart import _start_redis

pytestmark = pytest.mark.services

#: The person's bank for the decision, seconds (the product's parameter, not a test bound).
BANK_S = 4.0
REQUEST = b'{"type":"decide","legal":[]}'


def _client(port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, socket_connect_timeout=5)


def _decide(player: PersonPlayer, out: dict[str, Any]) -> threading.Thread:
    def run() -> None:
        try:
            out["outcome"] = player.decide_checked(REQUEST, BANK_S, lambda _a: None)
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _pending_rid(client: redis.Redis, player: PersonPlayer, thread: threading.Thread) -> str | None:
    """The rid of the seat's pending request, once it is asked (None if the player ended first)."""
    while thread.is_alive():
        try:
            rid = client.hget(player.pending, "rid")
        except redis.RedisError:
            rid = None
        if rid:
            return rid.decode()
        thread.join(0.02)
    return None


def test_redis_gone_for_good_mid_decision_is_the_arenas_failure(free_port):
    port = free_port()
    proc = _start_redis(port)
    client = _client(port)
    player = PersonPlayer(client, 1, 0, "ann")
    out: dict[str, Any] = {}
    t = _decide(player, out)
    try:
        assert _pending_rid(client, player, t)
    finally:
        proc.kill()
        proc.wait()
    t.join()
    assert isinstance(out.get("error"), TableUnavailable), out  # not a time-out charged to the person


def test_redis_back_before_the_deadline_asks_again_and_takes_the_answer(free_port):
    port = free_port()
    proc = _start_redis(port)
    client = _client(port)
    player = PersonPlayer(client, 1, 0, "ann")
    out: dict[str, Any] = {}
    t = _decide(player, out)
    try:
        assert _pending_rid(client, player, t)
        proc.kill()
        proc.wait()
        proc = _start_redis(port)  # empty: the pending request is gone
        rid = _pending_rid(client, player, t)  # asked again
        assert rid is not None, out
        assert tables.push_answer(client, 1, 0, rid, b'{"type":"pass"}')
        t.join()
    finally:
        proc.kill()
        proc.wait()
    assert "error" not in out, out
    outcome = out["outcome"]
    assert outcome.action == {"type": "pass"} and outcome.fault is None
    assert outcome.arena_ms > 0  # the outage was the arena's time, not taken from the bank
