"""One engine game of a :class:`arena.runner.match.Match`: the per-decision loop.

:class:`GamePlay` plays one game spec of a match: it asks each seat's player for every decision
with the seat's bank as the deadline (TIME-1..3), judges the answer (FAULT-1..3: its fault kind,
code and parameters, :mod:`arena.faults`), applies it to the engine, and records the exchanges,
faults and ``arena_faults`` of the game; a request the arena itself failed is asked again (up to
:data:`MAX_ARENA_RETRIES` times) before the match stops (:class:`ArenaUnavailable`). The match's
state (players, barred players, fault counts, slot totals, observers) stays on the
:class:`~arena.runner.match.Match`; the module docstring of :mod:`arena.runner.match` gives the
whole contract.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import TYPE_CHECKING, Any

import engine
from arena import limits
from arena.faults import Fault, FaultCode, fault, plain, refused
from arena.matchlog import ArenaFaultRecord, Exchange, FaultRecord, GameRecord
from arena.runner.answers import check_action, safe_text
from arena.runner.players import RECEIVED_LOG_CHARS, ArenaFailure, Outcome, PlayerWithdrawn, Refusal, SlotUse
from bots_sdk import protocol
from engine.timebank import TimeBank

if TYPE_CHECKING:
    from arena.runner.match import GameSpec, Match

#: Safety stop: more decisions than this in one engine game is an engine bug, not a match
#: (the API bounds options so that no accepted match comes near it: arena.limits).
MAX_DECISIONS_PER_GAME = limits.MAX_DECISIONS_PER_GAME
#: Most times one decision is asked again after the arena failed it (then the match stops).
MAX_ARENA_RETRIES = 10
#: Faults that may be the arena's own failure rather than the bot's (no answer came).
NO_ANSWER_FAULTS = frozenset({"timeout", "connection_error"})


class ArenaUnavailable(ArenaFailure):
    """The arena could not get a decision through (its own failure, asked again
    :data:`MAX_ARENA_RETRIES` times), or its health says the match must stop (this worker lost
    the match's lease, or stays cut off): the match stops unscored, to be played again."""


def json_normal(value: Any) -> Any:
    """JSON-normal form (int keys become strings, tuples lists)."""
    return json.loads(protocol.dumps(value))


class GamePlay:
    """One engine game of a :class:`Match`: its engine game, the seats' banks, its exchanges
    and faults so far."""

    def __init__(self, match: Match, index: int, spec: GameSpec):
        self.match = match
        self.index = index
        self.spec = spec
        self.seats: list[int] = list(spec["seats"])
        ruleset = match.config.ruleset
        if spec.get("setup") is not None:
            self.game = engine.from_setup(ruleset, match.options, spec["setup"])
        else:
            self.game = engine.new_game(ruleset, match.options, spec["seed"])
        self.banks = [TimeBank(match.rules_of(p)) for p in self.seats]
        self.unit = self.game.unit_index
        self.exchanges: list[Exchange] = []
        self.faults: list[FaultRecord] = []
        self.arena_faults: list[ArenaFaultRecord] = []
        self.started = time.time()

    def run(self) -> GameRecord:
        """Play the game to its end; returns its record (the match's ``games[i]``).

        Raises:
            ArenaUnavailable: the arena failed a request too often, or its health says stop.
            RuntimeError: the engine did not end or move (an engine bug)."""
        g = self.game
        self._bar_seats()
        steps = 0
        while not g.over:
            steps += 1
            if steps > MAX_DECISIONS_PER_GAME:
                raise RuntimeError(
                    f"game {self.index} did not end after {MAX_DECISIONS_PER_GAME} decisions (engine bug)"
                )
            if g.unit_index != self.unit:  # a new deal (TM) / game (JDF): banks reset (TIME-1)
                self.unit = g.unit_index
                for b in self.banks:
                    b.reset()
                self._bar_seats()
                continue
            d = g.decision()
            assert d is not None  # the game is not over
            player = self.seats[d.seat]
            if player not in self.match.barred and self.match.withdraw_if_deleted(player):
                self._bar_seats()  # its bot was deleted during the match: no request from now on
                continue
            if player in self.match.barred:
                self._forfeit_barred(d)
                continue
            try:
                self._ask(d)
            except PlayerWithdrawn:  # found with the request's slot: nothing was sent
                self.match.bar_withdrawn(player)
                self._bar_seats()
        record: GameRecord = {
            "index": self.index,
            "seed": self.spec.get("seed"),
            "seats": self.seats,
            "engine_log": json_normal(g.log()),
            "exchanges": self.exchanges,
            "faults": self.faults,
            "result": json_normal(g.result()),
            "started_at": self.started,
            "finished_at": time.time(),
        }
        if self.arena_faults:  # after "faults" (a log without them keeps the bytes of before)
            items = list(record.items())
            items.insert(6, ("arena_faults", self.arena_faults))
            record = dict(items)  # type: ignore[assignment]
        return record

    def _bar_seats(self) -> None:
        g, barred = self.game, self.match.barred
        for seat, p in enumerate(self.seats):
            if p in barred and not g.over and g.still_in[seat]:
                g.forfeit(seat, barred[p])

    def _forfeit_barred(self, d: engine.Decision) -> None:
        g = self.game
        before = (d.seat, d.kind, len(g.actions))
        g.forfeit(d.seat, self.match.barred[self.seats[d.seat]])
        after = g.decision()
        if after is not None and (after.seat, after.kind) == before[:2] and len(g.actions) == before[2]:
            raise RuntimeError("engine did not move after a forfeit (engine bug)")

    def _judge(self, seat: int, out: Outcome, before_ms: int) -> tuple[str | None, Fault | None]:
        """The fault of an answer (its kind and its code with parameters), or ``(None, None)``
        once applied."""
        if out.fault is not None:
            reason: object = out.reason
            if isinstance(reason, Fault):
                return out.fault, reason
            return out.fault, fault(FaultCode.RELAYED, detail=str(reason or ""))  # a player's bare English
        if _charged(out) > before_ms:
            return "timeout", fault(FaultCode.OWN_TIME_OVER_BANK, ms=_charged(out), bank=before_ms)
        action = out.action
        why = check_action(action)
        if why is not None or action is None:
            return "invalid_action", why or fault(FaultCode.ACTION_NOT_OBJECT, "ACT")
        try:
            self.game.apply(seat, action)
        except engine.InvalidAction as e:
            return "invalid_action", refused(e.code, e.params, e.rule)
        return None, None

    def _ask(self, d: engine.Decision) -> None:
        match, g = self.match, self.game
        player_index = self.seats[d.seat]
        bank = self.banks[d.seat]
        before_ms = bank.remaining_ms
        req = protocol.build_request(
            g,
            d.seat,
            match_id=match.match_id,
            game=self.index,
            time_rules=match.rules_of(player_index),
            remaining_ms=before_ms,
            banks_ms=[b.remaining_ms for b in self.banks],
        )
        body = protocol.dumps(req)
        out, sent_at = self._request(d.seat, player_index, body, before_ms)
        kind, why = self._judge(d.seat, out, before_ms)
        if kind is None:
            bank.spend(_charged(out))
            after_ms = bank.remaining_ms
        else:
            after_ms = max(0, before_ms - _charged(out))
            bank.remaining_ms = after_ms
        ex: Exchange = {
            "n": len(self.exchanges),
            "seat": d.seat,
            "player": player_index,
            "kind": d.kind,
            "unit": req["unit"],
            "sent_at": round(sent_at, 6),
            "elapsed_ms": out.elapsed_ms,
            "bank_before_ms": before_ms,
            "bank_after_ms": after_ms,
            "request_sha256": hashlib.sha256(body).hexdigest(),
            "request_bytes": len(body),
            "status": out.status,
            "response": out.action,  # parsed from JSON by the player: already JSON-normal
            "fault": kind,
        }
        if match.config.log_requests:
            ex["request"] = req
        self._record_slot(ex, player_index, out.slot)
        if out.arena_ms >= 1:
            ex["arena_ms"] = out.arena_ms
        self.exchanges.append(ex)
        if kind is not None and why is not None:
            self._fault(d.seat, player_index, ex, out, kind, why)
        if match.observers.on_decision:
            match.observers.on_decision(ex)
        if match.observers.on_step:
            match.observers.on_step(self.index, g, ex)

    def refusal(self, seat: int, action: Any) -> Refusal | None:
        """What the engine says of ``action`` as ``seat``'s answer now, without applying it:
        ``(reason, rule id)`` (C-12; ``ACT`` for a malformed action), or None when accepted."""
        why = check_action(action)
        if why:
            return plain(why), "ACT"
        try:
            self.game.check(seat, action)
        except engine.InvalidAction as e:
            return e.reason, e.rule
        return None

    def _request(self, seat: int, player_index: int, body: bytes, before_ms: int) -> tuple[Outcome, float]:
        """Ask ``player_index`` the decision (``body``) with ``before_ms`` of bank; a request
        the arena failed (module docstring) is recorded in :attr:`arena_faults` and asked
        again, with the same bank. Returns the outcome and when its request was sent (Unix s).

        Raises:
            ArenaUnavailable: the arena failed it :data:`MAX_ARENA_RETRIES` times more, or
                :attr:`Observers.health` says stop."""
        match = self.match
        health = match.observers.health
        again = 0
        while True:
            if health is not None and (stop := health.abort()):
                raise ArenaUnavailable(stop)
            sent_at, started = time.time(), time.monotonic()
            cause: ArenaFailure | None = None
            try:
                checked = match.checked[player_index]
                if checked is None:
                    out = match.players[player_index].decide(body, before_ms / 1000)
                else:  # a person: its tries are judged by the engine before it answers (module docstring)
                    out = checked(body, before_ms / 1000, lambda action: self.refusal(seat, action))
                why = out.arena
            except ArenaFailure as exc:
                out, why, cause = Outcome(None, None, None, "", 0, None), str(exc) or type(exc).__name__, exc
            ended = time.monotonic()
            if not why and out.fault in NO_ANSWER_FAULTS and health is not None:
                why = health.fault(started, ended)
            if not why:
                return out, sent_at
            self.arena_faults.append(
                {
                    "game": self.index,
                    "n": len(self.exchanges),
                    "seat": seat,
                    "player": player_index,
                    "detail": safe_text(why, RECEIVED_LOG_CHARS),
                    "sent_at": round(sent_at, 6),
                    "elapsed_ms": int(round((ended - started) * 1000)),
                }
            )
            again += 1
            if again > MAX_ARENA_RETRIES:
                raise ArenaUnavailable(f"asked {again} times, the arena failed each: {why}") from cause
            if health is not None and not health.wait():
                raise ArenaUnavailable(f"the worker stayed unwell: {why}") from cause

    def _record_slot(self, ex: Exchange, player_index: int, slot: SlotUse) -> None:
        self.match.slot_totals[player_index].add(slot)
        if slot.wait_s >= 0.001:
            ex["slot_wait_ms"] = round(slot.wait_s * 1000, 1)
        if slot.bypassed:
            ex["slot_bypassed"] = True

    def _fault(self, seat: int, player_index: int, ex: Exchange, out: Outcome, kind: str, why: Fault) -> None:
        """Record a fault; the engine forfeits the decision (FAULT-2), the player every later
        one at its ``max_faults``-th (FAULT-3)."""
        match = self.match
        action = out.action
        received = out.received
        if not received:
            received = safe_text(json.dumps(action), RECEIVED_LOG_CHARS) if action is not None else ""
        self.faults.append(
            {
                "game": self.index,
                "n": ex["n"],
                "seat": seat,
                "player": player_index,
                "kind": kind,
                "code": why.code,
                "params": dict(why.params),
                "rule": why.rule,
                "detail": safe_text(why.text(), RECEIVED_LOG_CHARS),
                "received": received,
                "elapsed_ms": out.elapsed_ms,
            }
        )
        match.faults_by_player[player_index] += 1
        self.game.forfeit(seat, kind)  # FAULT-2
        if match.faults_by_player[player_index] >= match.config.max_faults:  # FAULT-3
            match.barred.setdefault(player_index, "max_faults")
            self._bar_seats()


def _charged(out: Outcome) -> int:
    """Milliseconds of an outcome taken from the bank: its time less the arena's (TIME-2)."""
    return max(0, out.elapsed_ms - out.arena_ms)


__all__ = ["GamePlay", "ArenaUnavailable", "MAX_ARENA_RETRIES", "MAX_DECISIONS_PER_GAME", "json_normal"]
