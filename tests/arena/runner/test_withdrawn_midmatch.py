"""A player withdrawn while its match plays (its bot deleted: ``Observers.withdrawn``, issue 29
point 5), in the runner alone: from the decision where the answer turns True it is asked
nothing more, its seats forfeit (reason ``withdrawn``) in this game and every later one, it
gets no end notice, and the log replays. The Redis side and a real worker:
tests/worker/test_deleted_bot.py."""

from __future__ import annotations

import pytest

from arena.runner.match import WITHDRAWN, Match, MatchConfig, Observers
from arena.runner.replay import replay
from bots_sdk.samples import SAMPLE_BOTS


class Counting(SAMPLE_BOTS["random"]):
    def __init__(self, seed: int):
        super().__init__(seed=seed)
        self.decisions = self.notices = 0

    def decide(self, request):
        self.decisions += 1
        return super().decide(request)

    def notice(self, message):
        self.notices += 1
        return super().notice(message)


@pytest.mark.parametrize(("ruleset", "players"), [("million_doubt", 2), ("jdf", 4)])
def test_a_player_withdrawn_mid_match_is_asked_nothing_more(ruleset, players):
    bots = [Counting(seed=i) for i in range(players)]
    victim, after = 1, 7
    asked: list[int] = []

    def withdrawn(player: int) -> bool:
        asked.append(player)
        return player == victim and bots[victim].decisions >= after

    log = Match(bots, MatchConfig(ruleset, {}, seed=4, games=4), Observers(withdrawn=withdrawn)).play()
    assert bots[victim].decisions == after  # nothing after the flag
    assert bots[victim].notices == 1  # the start notice; no end notice
    assert all(b.notices == 2 for i, b in enumerate(bots) if i != victim)
    forfeits = [
        a
        for g in log["games"]
        for a in g["engine_log"]["actions"]
        if a.get("forfeit") == WITHDRAWN and g["seats"][a["seat"]] == victim
    ]
    assert forfeits  # its seat forfeits, in this game and the later ones
    exchanges = [ex for g in log["games"] for ex in g["exchanges"] if ex["player"] == victim]
    assert len(exchanges) == after and all(ex["fault"] is None for ex in exchanges)
    assert log["faults"] == []  # a withdrawal is no fault of an answer
    replay(log)
    # asked before the start notice, before each of its requests, and the once that withdrew
    # it: barred from then on, never asked again (nor before the end notices)
    assert asked.count(victim) == 1 + after + 1
    assert log["result"] is not None


def test_no_question_no_change():
    """Without ``withdrawn`` (eager mode, a local ``arena play``) a match plays as before."""
    bots = [Counting(seed=i) for i in range(2)]
    log = Match(bots, MatchConfig("million_doubt", {}, seed=4, games=2)).play()
    assert all(a.get("forfeit") is None for g in log["games"] for a in g["engine_log"]["actions"])
    assert all(b.notices == 2 for b in bots)
