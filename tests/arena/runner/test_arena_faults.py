"""Whose fault is a wait (docs/protocol.md): a request the arena itself failed is never the
bot's fault nor its time. The runner asks the decision again with the bank it had, records the
arena's failure as the arena's (``arena_faults``), takes only the bot's own time from the bank,
and stops the match (ArenaUnavailable) when the arena stays down or the worker lost its lease."""

from __future__ import annotations

from typing import Any

import pytest

from arena.faults import FaultCode, fault
from arena.runner.gameplay import MAX_ARENA_RETRIES, ArenaUnavailable
from arena.runner.match import Match, MatchConfig, Observers
from arena.runner.players import ArenaFailure, LocalPlayer, Outcome
from arena.runner.replay import replay
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules

RULES = TimeRules.from_seconds(2, 1, 2)


class Flaky:
    """A greedy bot behind a player whose requests numbered in ``failing`` fail on the arena's
    side: ``how`` "raise" (ArenaFailure), "outcome" (Outcome.arena) or "timeout" (a time-out
    the health judges); ``arena_ms``: an answer's time the arena was unavailable."""

    kind = "local"

    def __init__(self, failing: set[int], how: str = "raise", arena_ms: int = 0, elapsed_ms: int = 0):
        self.inner = LocalPlayer(SAMPLE_BOTS["greedy"](seed=3), "flaky#1")
        self.name, self.url = "flaky#1", None
        self.failing, self.how, self.arena_ms, self.elapsed_ms = failing, how, arena_ms, elapsed_ms
        self.asked = 0
        self.bodies: list[bytes] = []

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        n = self.asked
        self.asked += 1
        self.bodies.append(body)
        if n in self.failing:
            if self.how == "raise":
                raise ArenaFailure("the relay failed")
            if self.how == "outcome":
                return Outcome(
                    None,
                    "connection_error",
                    fault(FaultCode.CONNECTION_FAILED, exc="OSError", why="ENETUNREACH"),
                    "",
                    3,
                    None,
                    arena="the worker's network",
                )
            return Outcome(None, "timeout", fault(FaultCode.NO_ANSWER), "", int(timeout_s * 1000), None)
        out = self.inner.decide(body, timeout_s)
        return out._replace(elapsed_ms=out.elapsed_ms + self.elapsed_ms, arena_ms=self.arena_ms)

    def notify(self, body: bytes) -> Any:
        return self.inner.notify(body)

    def close(self) -> None:
        pass


class Health:
    def __init__(self, sick: bool = True, lost_after: int | None = None, recovers: bool = True):
        self.sick, self.lost_after, self.recovers = sick, lost_after, recovers
        self.asked = self.waits = 0

    def abort(self) -> str:
        self.asked += 1
        return "lease lost" if self.lost_after is not None and self.asked > self.lost_after else ""

    def fault(self, started: float, ended: float) -> str:
        return "the worker's heartbeat failed" if self.sick else ""

    def wait(self) -> bool:
        self.waits += 1
        return self.recovers


def play(flaky: Flaky, health: Health | None = None) -> dict:
    config = MatchConfig("million_doubt", {}, seed=11, games=2, time_rules=RULES)
    players = [flaky, LocalPlayer(SAMPLE_BOTS["random"](seed=4), "random#2")]
    return Match(players, config, Observers(health=health)).play()


@pytest.mark.parametrize("how", ["raise", "outcome", "timeout"])
def test_a_request_the_arena_failed_is_asked_again_with_the_same_bank(how: str) -> None:
    flaky = Flaky({0, 1, 5}, how)
    log = play(flaky, Health() if how == "timeout" else None)
    assert log["faults"] == [] and log["result"]["faults"] == [0, 0]
    arena = [f for g in log["games"] for f in g.get("arena_faults", [])]
    assert len(arena) == 3 and {f["player"] for f in arena} == {0}
    assert flaky.bodies[0] == flaky.bodies[1] == flaky.bodies[2]  # the same request, asked again
    first = log["games"][0]["exchanges"][0]
    assert first["n"] == 0 and first["bank_before_ms"] == RULES.initial_ms and first["fault"] is None
    assert log["games"][0]["arena_faults"][0]["n"] == 0
    assert list(log["games"][0]) == [
        "index", "seed", "seats", "engine_log", "exchanges", "faults", "arena_faults", "result",
        "started_at", "finished_at",
    ]  # fmt: skip
    replay(log)  # the log still replays and verifies


def test_a_bot_time_out_while_the_worker_is_well_is_the_bots_fault() -> None:
    log = play(Flaky({0}, "timeout"), Health(sick=False))
    assert [f["kind"] for f in log["faults"]][:1] == ["timeout"]
    assert all("arena_faults" not in g for g in log["games"])


def test_only_the_bots_own_time_is_taken_from_its_bank() -> None:
    """An answer that took 2.5 s, 2.2 s of it the arena's: 0.3 s of the bot's 2 s bank (no
    time-out), and the log says how much was the arena's."""
    log = play(Flaky(set(), arena_ms=2200, elapsed_ms=2500))
    assert log["faults"] == []
    ex = log["games"][0]["exchanges"][0]
    assert ex["arena_ms"] == 2200 and ex["elapsed_ms"] >= 2500
    assert ex["bank_before_ms"] - ex["bank_after_ms"] + RULES.increment_ms >= ex["elapsed_ms"] - 2200 - 1
    assert ex["bank_after_ms"] > ex["bank_before_ms"] - 1000
    replay(log)


def test_the_match_stops_when_the_arena_stays_down() -> None:
    flaky = Flaky(set(range(100)), "raise")
    with pytest.raises(ArenaUnavailable):
        play(flaky)
    assert flaky.asked == MAX_ARENA_RETRIES + 1
    with pytest.raises(ArenaUnavailable, match="stayed unwell"):
        play(Flaky({0}, "outcome"), Health(recovers=False))


def test_a_worker_that_lost_its_lease_stops_before_its_next_request() -> None:
    flaky, health = Flaky(set()), Health(sick=False, lost_after=3)
    with pytest.raises(ArenaUnavailable, match="lease lost"):
        play(flaky, health)
    assert health.asked == 4 and 1 <= flaky.asked < 4  # three requests (of both seats), no fourth
