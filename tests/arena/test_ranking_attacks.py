"""Attacks on the rankings' statistics with degenerate and small data (issue 28).

* A dishonest organizer who wants "Ranking settled" on the page plays short Million Doubt
  tournaments: a game's score is a small integer (a win of 1, 2, 3... points), so two games
  won by the same margin have no spread at all, an interval of width 0, and the t test calls
  the difference significant. Between IDENTICAL bots that happened in 13% of 2-game duels and
  9% of 4-game ones (the promise is 5%). The exact rates are computed below by enumerating
  every outcome of a Million Doubt-like score distribution (measured on greedy against greedy,
  2,000 games); then a seeded simulation checks the rate at the floor.
* A failing par task writes a par that is not a number: the sequential test of "play until
  settled" must neither take it for a par nor call anything settled from a NaN.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from arena.ranking import MatchRecord, compute_report, game_par
from arena.sequential import MIN_GAMES, SettleRule, evaluate, game_values
from arena.significance import MIN_TEST_GAMES, Moments, SharedSums, difference

#: |game score| of the winner of a Million Doubt game between two greedy sample bots (MD-17),
#: and how often each came up in 2,000 games (the loser scores the opposite).
MD_MARGINS = {1: 641, 2: 648, 3: 398, 4: 231, 5: 67, 6: 14}


def _md_outcomes() -> list[tuple[float, float]]:
    """Seat a's score in one game between identical bots, with its probability."""
    total = 2 * sum(MD_MARGINS.values())
    return [(float(s * k), w / total) for k, w in MD_MARGINS.items() for s in (1, -1)]


def _called_different(xs: tuple[float, ...]) -> bool:
    a, b, shared = Moments(), Moments(), SharedSums()
    for x in xs:
        a.add(x)
        b.add(-x)
        shared.add(x, -x)
    return difference(a, b, shared).significant


def exact_false_rate(games: int) -> float:
    """P(two identical bots of a Million Doubt duel of ``games`` games are called different)."""
    outcomes = _md_outcomes()
    rate = 0.0
    for combo in itertools.product(outcomes, repeat=games):
        if _called_different(tuple(x for x, _ in combo)):
            rate += math.prod(p for _, p in combo)
    return rate


@pytest.mark.parametrize("games", [2, 3, 4])
def test_identical_bots_of_a_short_duel_are_not_called_different(games):
    """Before: 13.2% at 2 games (every game won by the same margin: no spread), 9.5% at 3,
    9.7% at 4. A difference now needs MIN_TEST_GAMES games from each of the two."""
    assert exact_false_rate(games) <= 0.05


def test_at_the_floor_identical_bots_are_called_different_about_5_percent_of_the_time():
    rng = random.Random(28)
    outcomes = _md_outcomes()
    values, weights = [x for x, _ in outcomes], [p for _, p in outcomes]
    runs = 4000
    hits = sum(_called_different(tuple(rng.choices(values, weights, k=MIN_TEST_GAMES))) for _ in range(runs))
    assert hits / runs <= 0.065, hits / runs


def test_two_games_won_by_the_same_margin_settle_nothing():
    """The organizer's 2-game duel: bot 1 won both games by 1 point."""
    games = [{"scores": [1.0, -1.0], "places": [1, 2]}, {"scores": [1.0, -1.0], "places": [1, 2]}]
    rep = compute_report([MatchRecord(0, (1, 2), [2.0, -2.0], [1, 2], [0, 0], games)], entrants=[1, 2])
    (n,) = rep.neighbours
    assert (n.difference, n.ci95) == (2.0, 0.0)
    assert not n.significant and not rep.settled and not rep.top_settled
    # the same margin game after game, over enough games: a real difference, and settled
    many = games * (MIN_TEST_GAMES // 2)
    rep = compute_report([MatchRecord(0, (1, 2), [0.0, 0.0], [1, 2], [0, 0], many)], entrants=[1, 2])
    assert rep.neighbours[0].significant and rep.settled


# ----------------------------------------------------------------------------- a par that is not a number
BAD_PARS = ([1.0], [1.0, None], [1.0, float("nan")], [float("inf"), 0.0], [True, 1.0], "x", None)


def test_a_broken_par_never_stops_a_tournament_settled():
    """A failing machine: the par task of one game wrote NaN (0 rollouts averaged, say). Before,
    the sequential test took the game as adjusted, every mean and variance became NaN, and the
    clamp turned the NaN log-likelihood ratio into +1e6: "settled" between two equal bots."""
    rule = SettleRule(max_rounds=10, delta=1.0)
    for bad in BAD_PARS:
        results = []
        for i in range(2 * MIN_GAMES):
            x = 1.0 if i % 2 == 0 else -1.0
            results.append(((1, 2), [{"scores": [x, -x], "places": [1, 2], "par": [0.0, 0.0]}]))
        results[3][1][0]["par"] = bad
        games, adjusted = game_values(results)
        verdict = evaluate(games, rule, adjusted=adjusted)
        assert not adjusted and not verdict.settled and math.isfinite(verdict.llr), (bad, verdict)
        # the standings read the same par the same way: no par for that game
        assert game_par(results[3][1][0], 2) is None


def test_a_nan_score_gives_a_finite_verdict_that_settles_nothing():
    games = [[(1, float("nan")), (2, 0.0)]] + [[(1, 1.0), (2, -1.0)]] * (2 * MIN_GAMES)
    verdict = evaluate(games, SettleRule(max_rounds=10, delta=1.0))
    assert not verdict.settled and math.isfinite(verdict.llr)


# ----------------------------------------------------------------------------- house seats at the top
def _table_games(rounds: int, seed: int) -> list[list[tuple[int | str, float]]]:
    """JDF-like tables of two participants (bots 1 and 2) and two house seats of one sample bot,
    stronger than both: the house seats score alike, bot 1 is clearly ahead of bot 2."""
    rng = random.Random(seed)
    games = []
    for _ in range(rounds * 4):
        h1, h2, a = rng.gauss(10.0, 3.0), rng.gauss(10.0, 3.0), rng.gauss(2.0, 3.0)
        games.append([(1, a), (2, -(h1 + h2 + a)), ("house-1", h1), ("house-2", h2)])
    return games


def test_identical_house_seats_at_the_top_do_not_decide_play_until_settled():
    """Rounds with house bots: the organizer asks whether the top of its participants is
    settled. Before, the two house seats (one sample bot, equal by construction) were the
    leader and the runner-up: the test compared them, never settled, and the tournament played
    every round up to max_rounds while bot 1 was far ahead of bot 2."""
    rule = SettleRule(max_rounds=10, delta=1.0)
    verdict = evaluate(_table_games(rounds=10, seed=1), rule)
    assert (verdict.leader, verdict.runner_up) == (1, 2)
    assert verdict.settled
    # one participant: it against the best house seat
    solo = [[(1, 5.0 + (i % 3)), ("house-1", 9.0), ("house-2", -14.0 - (i % 3))] for i in range(MIN_GAMES)]
    v = evaluate(solo, rule)
    assert (v.leader, v.runner_up) == ("house-1", 1)
