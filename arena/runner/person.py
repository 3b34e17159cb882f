"""A person's seat at a table (docs/tables.md): a :class:`~arena.runner.players.Player` whose
decisions come from a browser, through Redis (:mod:`arena.tables` names every key and frame).

Each decision request (the bytes a bot in the seat would get) is published to the person's
channel and kept as the seat's pending request; the person's tries come back on the request's
answer list, pushed by the pages (which check that the try answers the pending request). Each
try is parsed as a bot's answer (:func:`arena.safejson.parse_answer`) and judged by the engine
(the runner's ``check``, :class:`~arena.runner.players.CheckedPlayer`): a refused try is
published with its reason and rule id and the person is asked on; the first accepted one is
the answer. The clock (TIME-2) runs from the request's publication to that answer, under the
person's own time rules; nobody answering (a closed tab) is a ``timeout`` at the bank's end,
and after ``max_faults`` of them the seat forfeits the rest of the match (FAULT-3): a worker
never waits longer than the banks allow.

When Redis fails during a decision, or answers again having lost the pending request (a
restart: the client reconnects without an error), the player tries again until the deadline
(asking again once Redis answers): the time Redis failed is the arena's, never taken from the person's bank
(:attr:`Outcome.arena_ms`), and no answer by the deadline after such a failure raises
:class:`TableUnavailable` (the arena's failure: the runner asks again, the person is not
charged).

:class:`PersonViews` publishes, after each decision of the match, each person's own
observation (:meth:`engine.Game.observation` of its seat, C-11) and the public clock of the
seat that acted: the page shows the table moving while others play.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

import redis

from arena import tables
from arena.faults import FaultCode, fault, plain
from arena.runner.players import NO_SLOT, AnswerCheck, ArenaFailure, Outcome, SlotUse
from arena.safejson import parse_answer

#: Longest single wait on the answer list, seconds.
SLICE_S = 1.0
#: Seconds the pending request outlives its deadline (a page that reloads late finds it gone).
PENDING_GRACE_S = 5
#: What a failing Redis raises.
REDIS_ERRORS = (redis.RedisError, OSError)


class TableUnavailable(ArenaFailure):
    """Redis failed during a person's decision and no answer came by its deadline: the arena's
    failure, not the person's (no fault is recorded; the match fails)."""

    def __init__(self, cause: BaseException):
        super().__init__(f"Redis failed during a person's decision and no answer came: {type(cause).__name__}")


class RedisLost(redis.ConnectionError):
    """Redis answers but lost the seat's pending request: it restarted empty (the client
    reconnected without an error)."""

    def __init__(self) -> None:
        super().__init__("Redis lost the pending request (restarted empty)")


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000))


class PersonPlayer:
    """The seat of a person (module docstring).

    Args:
        client: a Redis client (the match's thread uses it).
        match_id: the match id (database), which keys the seat's channel.
        player: the person's player index (``match_seats.seat``).
        name: display name in the log (the account's name).
    """

    kind = "person"

    def __init__(self, client: redis.Redis, match_id: int, player: int, name: str):
        self.client = client
        self.match_id = int(match_id)
        self.player = int(player)
        self.name = name
        self.url: str | None = None
        self.channel = tables.seat_channel(self.match_id, self.player)
        self.pending = tables.pending_key(self.match_id, self.player)

    def _publish(self, frame: dict[str, Any], keep: str | None = None) -> None:
        text = tables.dumps(frame)
        pipe = self.client.pipeline(transaction=False)
        if keep is not None:
            pipe.set(keep, text, ex=tables.KEEP_S)
        pipe.publish(self.channel, text)
        pipe.execute()

    def _say(self, frame: dict[str, Any], keep: str | None = None) -> None:
        """Publish ``frame``; a Redis failure is only logged by its absence (the page reloads)."""
        try:
            self._publish(frame, keep)
        except REDIS_ERRORS:
            pass

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        """As a bot: every answer is final (no engine check)."""
        return self.decide_checked(body, timeout_s, lambda _action: None)

    def decide_checked(self, body: bytes, timeout_s: float, check: AnswerCheck) -> Outcome:
        """Ask the person (module docstring); never raises but :class:`TableUnavailable`."""
        start = time.monotonic()
        deadline = start + max(timeout_s, 0.0)
        rid = secrets.token_hex(12)
        frame = tables.dumps(
            {
                "type": "request",
                "rid": rid,
                "deadline_ms": int((time.time() + max(timeout_s, 0.0)) * 1000),
                "request": json.loads(body),
            }
        )
        answers = tables.answer_key(rid)
        outage: BaseException | None = None  # Redis is failing now
        failed: BaseException | None = None  # Redis failed during this decision
        down_since = seen = 0.0
        arena_s = 0.0  # seconds Redis was failing: the arena's time, never the person's bank
        try:
            self._ask(rid, frame, max(timeout_s, 0.0))
        except REDIS_ERRORS as exc:
            outage = failed = exc
            down_since = start
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                if failed is not None:  # the page may have lost the request: asked again
                    raise TableUnavailable(failed)
                self._close_request(rid, {"type": "timeout", "rid": rid})
                return Outcome(None, "timeout", fault(FaultCode.NO_ANSWER), "", _ms(time.monotonic() - start), None)
            try:
                if outage is not None:  # Redis came back: ask again (the page may have missed it)
                    self._ask(rid, frame, left)
                    outage = None
                    arena_s += time.monotonic() - down_since
                seen = time.monotonic()
                got = self.client.blpop([answers], timeout=max(0.001, min(SLICE_S, left)))
                if got is None and not self._still_asked(rid):
                    raise RedisLost()
            except REDIS_ERRORS as exc:
                if outage is None:  # a restart that lost the request: since the last time it was there
                    down_since = seen if isinstance(exc, RedisLost) else time.monotonic()
                outage = failed = exc
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
                continue
            if got is None:
                continue
            raw = got[1]
            action, why = parse_answer(raw if isinstance(raw, bytes) else str(raw).encode("utf-8"))
            refusal = (plain(why), "ACT") if action is None else check(action)
            if refusal is not None:
                self._refused(rid, {"type": "refused", "rid": rid, "reason": refusal[0], "rule": refusal[1]})
                continue
            elapsed = _ms(time.monotonic() - start)
            self._close_request(rid, {"type": "accepted", "rid": rid, "elapsed_ms": elapsed})
            return Outcome(action, None, None, "", elapsed, None, arena_ms=min(elapsed, _ms(arena_s)))

    def _still_asked(self, rid: str) -> bool:
        """Whether the seat's pending request is still ``rid`` (a Redis restarted empty, which
        the client reconnects to without an error, lost it)."""
        raw = self.client.hget(self.pending, "rid")
        return (raw.decode() if isinstance(raw, bytes) else raw) == rid

    def _ask(self, rid: str, frame: str, timeout_s: float) -> None:
        pipe = self.client.pipeline(transaction=False)
        pipe.delete(self.pending)
        pipe.hset(self.pending, mapping={"rid": rid, "frame": frame})
        pipe.expire(self.pending, int(timeout_s) + PENDING_GRACE_S)
        pipe.publish(self.channel, frame)
        pipe.execute()

    def _refused(self, rid: str, frame: dict[str, Any]) -> None:
        """Publish a refusal and keep it with the pending request (a page that polls reads it)."""
        text = tables.dumps(frame)
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.hset(self.pending, "refused", text)
            pipe.publish(self.channel, text)
            pipe.execute()
        except REDIS_ERRORS:
            pass

    def _close_request(self, rid: str, frame: dict[str, Any]) -> None:
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.delete(self.pending, tables.answer_key(rid))
            pipe.publish(self.channel, tables.dumps(frame))
            pipe.execute()
        except REDIS_ERRORS:
            pass  # the pending request expires by itself

    def notify(self, body: bytes) -> SlotUse:
        """A match start or end notice, to the page; never raises."""
        self._say({"type": "notice", "notice": json.loads(body)}, tables.notice_key(self.match_id, self.player))
        return NO_SLOT

    def view(self, frame: dict[str, Any]) -> None:
        """Publish a ``view`` frame (:class:`PersonViews`); never raises."""
        self._say(frame, tables.view_key(self.match_id, self.player))

    def close(self) -> None:
        self._say({"type": "over"})


class PersonViews:
    """The ``on_step`` observer publishing each person's own view after every decision
    (module docstring). ``persons``: player index -> its :class:`PersonPlayer`; ``seats``: the
    player of each seat, per game of the match (the game specs')."""

    def __init__(self, persons: Mapping[int, PersonPlayer], seats: Sequence[Sequence[int]]):
        self.persons = dict(persons)
        self.seats = [list(s) for s in seats]

    def step(self, game_index: int, g: Any, exchange: Mapping[str, Any]) -> None:
        seats = self.seats[game_index] if game_index < len(self.seats) else []
        acted = {
            "seat": exchange.get("seat"),
            "kind": exchange.get("kind"),
            "bank_after_ms": exchange.get("bank_after_ms"),
        }
        for player, person in self.persons.items():
            if player not in seats:
                continue
            seat = seats.index(player)
            person.view(
                {
                    "type": "view",
                    "game": game_index,
                    "seat": seat,
                    "seats": seats,
                    "observation": g.observation(seat),
                    "acted": acted,
                }
            )
