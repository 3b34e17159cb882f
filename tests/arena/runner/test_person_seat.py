"""The runner's side of a person's seat (docs/tables.md), pure: a player that tries answers
first (:class:`arena.runner.players.CheckedPlayer`) is told the engine's refusal with its rule id
and asked on, its time running; only the answer it gives is an exchange; a person's own time
rules (``player_time_rules``) are its bank, its requests' ``time`` and the log's, and
``arena logs verify`` replays them (and refuses a log whose person's rules were changed)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from arena.runner.match import run_match
from arena.runner.players import NO_SLOT, Outcome
from arena.runner.replay import ReplayError, replay
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules
from tests.tables_play import choose

PERSON = TimeRules(300_000, 30_000, 300_000)
BOTS = TimeRules(5_000, 1_000, 5_000)


class Trier:
    """A person who first tries an answer the engine refuses (a pass when leading, a card it
    does not hold), then answers with :func:`choose`; records every refusal and request."""

    kind, name, url = "person", "ann", None

    def __init__(self) -> None:
        self.refusals: list[tuple[str, str]] = []
        self.requests: list[dict[str, Any]] = []

    def decide(self, body: bytes, timeout_s: float) -> Outcome:  # a bot's path: never used here
        raise AssertionError("a checked player is asked through decide_checked")

    def decide_checked(self, body: bytes, timeout_s: float, check) -> Outcome:
        req = json.loads(body)
        self.requests.append(req)
        for wrong in ({"type": "pass"}, {"type": "play", "cards": ["ZZ"]}, {"type": "play", "cards": []}):
            refusal = check(wrong)
            if refusal is not None:
                self.refusals.append(refusal)
        answer = choose(req)
        assert check(answer) is None, answer
        return Outcome(answer, None, "", "", 3, None)

    def notify(self, body: bytes):
        return NO_SLOT

    def close(self) -> None:
        return None


@pytest.mark.parametrize(
    ("ruleset", "options"),
    [("million_doubt", {}), ("trump_millionaire", {"target_score": 15}), ("jdf", {"sets": 1, "games_per_set": 2})],
)
def test_a_person_tries_answers_and_plays_under_its_own_time_rules(ruleset, options):
    person = Trier()
    n = 2 if ruleset == "million_doubt" else 4
    players = [person] + [SAMPLE_BOTS["greedy"](seed=i) for i in range(1, n)]
    log = run_match(players, ruleset, options, seed=11, games=2, time_rules=BOTS, player_time_rules={0: PERSON})
    assert person.refusals, "no try was refused"
    rules = {rule for _reason, rule in person.refusals}
    assert "ACT" in rules  # a card that is no card
    assert all(reason and rule for reason, rule in person.refusals)
    # only answers are exchanges: as many of the person's as requests it got, none a fault
    mine = [ex for gm in log["games"] for ex in gm["exchanges"] if ex["player"] == 0]
    assert len(mine) == len(person.requests) and all(ex["fault"] is None for ex in mine)
    # its requests carry its own time rules; the bots' carry theirs
    assert {r["time"]["initial_ms"] for r in person.requests} == {PERSON.initial_ms}
    assert max(ex["bank_before_ms"] for ex in mine) == PERSON.initial_ms
    bots = [ex for gm in log["games"] for ex in gm["exchanges"] if ex["player"] != 0]
    assert max(ex["bank_before_ms"] for ex in bots) <= BOTS.cap_ms
    assert log["player_time_rules"] == {"0": {"initial_ms": 300_000, "increment_ms": 30_000, "cap_ms": 300_000}}
    assert list(log).index("player_time_rules") == list(log).index("time_rules") + 1
    # the log replays, requests and banks included; with the person's rules changed, it does not
    replay(log)
    forged = copy.deepcopy(log)
    forged["player_time_rules"]["0"]["initial_ms"] = 60_000
    with pytest.raises(ReplayError, match="request"):
        replay(forged)
    forged = copy.deepcopy(log)
    del forged["player_time_rules"]
    with pytest.raises(ReplayError, match="request"):
        replay(forged)


def test_without_people_a_log_is_as_before():
    log = run_match([SAMPLE_BOTS["greedy"](), SAMPLE_BOTS["random"](seed=1)], "million_doubt", seed=3, games=1)
    assert "player_time_rules" not in log
    replay(log)
