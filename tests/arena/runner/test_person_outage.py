"""A person's seat at a table when Redis dies mid-decision (docs/tables.md, arena/runner/person.py):
Redis gone for good is the arena's failure (``TableUnavailable``: no timeout charged to the
person); Redis back before the deadline, the request is asked again and the person's answer
taken. Each test runs its own redis-server and kills it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import redis

from arena import tables
from arena.runner.person import PersonPlayer, TableUnavailable
from tests.helpers import wait_until
from tests.worker.test_redis_restart import _start_redis, start_redis_on_a_free_port

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


class Seat:
    """A person's seat deciding in a thread, on a redis-server of its own (``restart`` it,
    ``kill`` it; stopped at the end whatever happens)."""

    def __init__(self, free_port: Callable[[], int]):
        self.port, self.proc = start_redis_on_a_free_port(free_port)
        self.client = _client(self.port)
        self.player = PersonPlayer(self.client, 1, 0, "ann")
        self.out: dict[str, Any] = {}
        self.thread = _decide(self.player, self.out)

    def pending(self) -> str | None:
        """The pending request's rid once the seat waits for the answer (blocked in BLPOP on
        this server): killed before, its request could be written again by the client's own
        retry, on the next server, with no outage to notice."""
        rid = _pending_rid(self.client, self.player, self.thread)
        wait_until(
            lambda: not self.thread.is_alive() or self.client.info("clients")["blocked_clients"] >= 1,
            "the seat waiting for the answer",
        )
        return rid

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def restart(self) -> None:
        self.kill()
        self.proc = _start_redis(self.port)  # empty: the pending request is gone


@pytest.fixture
def seat(free_port):
    s = Seat(free_port)
    yield s
    s.kill()
    s.thread.join()


def test_redis_gone_for_good_mid_decision_is_the_arenas_failure(seat):
    assert seat.pending()
    seat.kill()
    seat.thread.join()
    assert isinstance(seat.out.get("error"), TableUnavailable), seat.out  # no time-out charged to the person


def test_redis_back_before_the_deadline_asks_again_and_takes_the_answer(seat):
    assert seat.pending()
    seat.restart()
    rid = seat.pending()  # asked again
    assert rid is not None, seat.out
    assert tables.push_answer(seat.client, 1, 0, rid, b'{"type":"pass"}')
    seat.thread.join()
    assert "error" not in seat.out, seat.out
    outcome = seat.out["outcome"]
    assert outcome.action == {"type": "pass"} and outcome.fault is None
    assert outcome.arena_ms > 0  # the outage was the arena's time, not taken from the bank
