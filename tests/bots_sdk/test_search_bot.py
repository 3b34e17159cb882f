"""The ``search`` sample bot: legal answers in every decision kind, worlds the seat cannot tell
from the real one, the per-decision budget, and answers that depend on the request alone."""

from __future__ import annotations

import random

import pytest

import engine
from arena.runner.match import run_match
from bots_sdk.bot import Request
from bots_sdk.protocol import build_request
from bots_sdk.samples import SAMPLE_BOTS, HeuristicBot, RandomBot, SearchBot
from bots_sdk.samples.search import Rollout
from bots_sdk.samples.worlds import sample_world
from engine.timebank import TimeRules

LOCAL = {
    "eleven_back": True,
    "stairs_revolution": True,
    "number_lock": True,
    "five_skip": True,
    "seven_pass": True,
    "ten_discard": True,
}
KINDS = {
    "million_doubt": {"play", "doubt", "penalty"},
    "trump_millionaire": {"play", "exchange", "rate", "give", "discard"},
    "jdf": {"play", "give", "discard"},
}
SHOWN = (
    "hand",
    "hand_sizes",
    "field",
    "field_size",
    "trick_count",
    "last_player",
    "revolution",
    "jback",
    "suit_lock",
    "number_lock",
    "direction",
    "passed",
    "still_in",
    "decision",
    "decision_info",
    "to_act",
)


class FakeClock:
    """A clock that moves ``step`` seconds each time it is read."""

    def __init__(self, step: float = 0.001):
        self.now = 0.0
        self.step = step
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += self.step
        return self.now


class Recording(SearchBot):
    """SearchBot that records the decision kinds it was asked."""

    def __init__(self, seed: int | None = None):
        super().__init__(seed=seed, budget_ms=60_000, max_rollouts=12)
        self.kinds: set[str] = set()

    def decide(self, request):
        req = request if isinstance(request, Request) else Request(request)
        self.kinds.add(req.kind)
        return super().decide(req)


def _key(action: dict) -> str:
    return str(sorted((k, tuple(sorted(v)) if isinstance(v, list) else v) for k, v in action.items()))


def test_registered_as_a_sample_bot():
    assert SAMPLE_BOTS["search"] is SearchBot
    assert SAMPLE_BOTS["search"](seed=1).name == "search"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("ruleset", "options", "games"),
    [
        ("million_doubt", None, 6),
        ("trump_millionaire", {**LOCAL, "target_score": 25}, 1),
        ("jdf", {**LOCAL, "sets": 1, "games_per_set": 2}, 1),
    ],
)
def test_answers_legally_in_every_decision_kind(ruleset, options, games):
    kinds: set[str] = set()
    for seed in range(3):
        n = engine.RULESETS[ruleset].seats
        bots = [Recording(seed=seed)] + [RandomBot(seed=seed * 10 + s) for s in range(1, n)]
        log = run_match(bots, ruleset, options, seed=seed, games=games, notices=False)
        assert log["result"]["faults"][0] == 0
        kinds |= bots[0].kinds
        assert sum(bots[0].stats["fallbacks"].values()) == 0
        assert bots[0].stats["searched"] > 0
    assert kinds >= KINDS[ruleset]


def _requests(ruleset, options, seeds, bot=RandomBot):
    """(game, seat, request) at every decision of seeded games between ``bot`` players."""
    for seed in seeds:
        g = engine.new_game(ruleset, options, seed=seed)
        players = [bot(seed=seed * 10 + s) for s in range(g.seats)]
        while not g.over:
            d = g.decision()
            req = build_request(g, d.seat, match_id="m", game=0, time_rules=TimeRules(), remaining_ms=60_000)
            yield g, d.seat, req
            g.apply(d.seat, players[d.seat].decide(req))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("ruleset", "options", "seeds"),
    [
        ("million_doubt", None, range(12)),
        ("trump_millionaire", {"target_score": 30}, range(2)),
        ("trump_millionaire", {**LOCAL, "target_score": 30}, range(2)),
        ("jdf", {"sets": 1}, range(2)),
        ("jdf", {**LOCAL, "sets": 1}, range(2)),
    ],
)
def test_sampled_worlds_show_the_seat_what_the_request_shows(ruleset, options, seeds):
    rng = random.Random(7)
    checked = 0
    for _g, seat, req in _requests(ruleset, options, seeds):
        w = sample_world(Request(req), rng)
        seen = w.observation(seat)
        for k in SHOWN:
            assert seen[k] == req["observation"][k], k
        if req["legal_actions"] is not None:
            assert sorted(map(_key, w.legal_actions(seat))) == sorted(map(_key, req["legal_actions"]))
        checked += 1
    assert checked > 50


def test_a_copy_without_log_plays_on_like_a_full_copy():
    for ruleset, options in (("million_doubt", None), ("trump_millionaire", LOCAL), ("jdf", LOCAL)):
        for g, seat, req in _requests(ruleset, options, [3]):
            if len(g.actions) < 12:
                continue
            w = sample_world(Request(req), random.Random(1))
            a, b = w.copy(log=False), w.copy()
            Rollout(random.Random(5)).run(a)
            Rollout(random.Random(5)).run(b)
            assert a.unit_result() == b.unit_result()
            assert (a.hands, a.discards, a.actions, a.events) == (b.hands, b.discards, [], [])
            assert len(b.actions) > len(w.actions) and len(b.events) > len(w.events)
            assert w.decision().seat == seat  # the original is untouched
            break


def _md_request(remaining_ms: int = 60_000) -> dict:
    setup = {
        "hands": {"0": ["3S", "5H", "7D", "9C", "JH", "KS", "2D"], "1": ["4S", "6H", "8D", "TC", "QH", "AS", "JK"]}
    }
    g = engine.from_setup("million_doubt", None, setup)
    return build_request(g, 0, match_id="m", game=0, time_rules=TimeRules(), remaining_ms=remaining_ms)


def test_the_search_stops_on_the_clock():
    counts = []
    for budget in (5, 20, 40):
        clock = FakeClock(0.001)
        bot = SearchBot(seed=1, budget_ms=budget, clock=clock)
        bot.decide(_md_request())
        counts.append(bot.stats["last_rollouts"])
        # one clock read per world: at most budget worlds of every candidate
        assert bot.stats["last_rollouts"] <= budget * 8
    assert 0 < counts[0] < counts[1] < counts[2]


def test_the_search_keeps_to_a_share_of_the_time_bank():
    clock = FakeClock(0.001)
    bot = SearchBot(seed=1, budget_ms=10_000, bank_fraction=0.05, clock=clock)
    bot.decide(_md_request(remaining_ms=200))  # 5% of 200 ms: 10 ms, 10 reads of the clock
    assert 0 < bot.stats["last_rollouts"]
    assert clock.reads <= 12
    bot.decide(_md_request(remaining_ms=0))
    assert bot.stats["last_rollouts"] == 0


def test_max_rollouts_bounds_the_search():
    bot = SearchBot(seed=1, budget_ms=60_000, max_rollouts=30)
    bot.decide(_md_request())
    assert 0 < bot.stats["last_rollouts"] <= 30


def test_one_legal_answer_is_given_at_once():
    setup = {"hands": {"0": ["3S"], "1": ["4S", "JK"], "2": ["5S"], "3": ["6S"]}, "leader": 1}
    g = engine.from_setup("trump_millionaire", None, setup)
    g.apply(1, {"type": "play", "cards": ["JK"]})  # seat 2 can only pass
    req = build_request(g, 2, match_id="m", game=0, time_rules=TimeRules(), remaining_ms=60_000)
    assert req["legal_actions"] == [{"type": "pass"}]
    clock = FakeClock()
    bot = SearchBot(seed=1, clock=clock)
    assert bot.decide(req) == {"type": "pass"}
    assert bot.stats["last_rollouts"] == 0


def test_the_answer_depends_on_the_request_alone():
    """Two tables that differ only in cards seat 0 cannot see give seat 0 the same request,
    and the bot (same seed, rollouts bounded by count) the same answer."""
    mine = ["3S", "4H", "5D", "7C", "9H", "JD", "QS", "KH", "AC", "2S"]
    others = [["3H", "4D", "5C", "6S", "8H", "9D", "TC", "JS", "QH", "KD"],
              ["3D", "4C", "5S", "6H", "7D", "8C", "TS", "JH", "QD", "KC"],
              ["3C", "4S", "5H", "6D", "7S", "9C", "TH", "JC", "QC", "KS"]]  # fmt: skip
    answers = []
    for perm in ((0, 1, 2), (2, 0, 1)):
        hands = {"0": mine, **{str(s + 1): others[perm[s]] for s in range(3)}}
        g = engine.from_setup("trump_millionaire", None, {"hands": hands, "leader": 0})
        req = build_request(g, 0, match_id="m", game=0, time_rules=TimeRules(), remaining_ms=60_000)
        answers.append((req, SearchBot(seed=3, budget_ms=60_000, max_rollouts=40).decide(req)))
    assert answers[0][0] == answers[1][0]
    assert answers[0][1] == answers[1][1]


def test_an_unrebuildable_request_is_answered_as_heuristic():
    req = _md_request()
    req["observation"]["hand_sizes"] = [7, 60]  # more hidden cards than the deck holds
    bot = SearchBot(seed=2, budget_ms=60_000, max_rollouts=20)
    assert bot.decide(req) == HeuristicBot(seed=2).decide(req)
    assert sum(bot.stats["fallbacks"].values()) == 1


def test_the_clock_is_read_between_rollouts_not_only_between_worlds():
    # The attacker's request: a tiny time bank. Each clock read moves 4 ms; the budget is 5 ms:
    # the deadline passes inside the first world, whose other rollouts must not be played.
    clock = FakeClock(0.004)
    bot = SearchBot(seed=1, budget_ms=5, clock=clock)
    bot.decide(_md_request())
    assert bot.stats["last_rollouts"] <= 1
