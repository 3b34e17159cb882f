"""Play until settled: the sequential test (arena.sequential), its formula and its error rates
measured by seeded simulations of tournaments (docs/ranking.md, "Play until settled").

The simulated games: Million Doubt-like two-seat games (zero-sum: the winner scores k, the
loser -k, k from 1 to 7, or 11 for a burst one time in ten; the stronger bot wins with
probability p) and four-seat tables (normal scores with a standard deviation of 20 around
each entrant's strength, made zero-sum per game)."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable

import pytest

from arena import sequential as sq
from arena.status import StopReason

Round = Callable[[random.Random], list[list[tuple[int, float]]]]

#: Mean |score| of a simulated Million Doubt game: 0.9 * 4 + 0.1 * 11.
MD_MEAN_POINTS = 4.7


def md_win_probability(difference: float) -> float:
    """The win probability giving the stronger bot ``difference`` points per game more than
    the other (its mean is difference/2, the other's -difference/2)."""
    return 0.5 + difference / (4 * MD_MEAN_POINTS)


def md_rounds(n: int, games: int, p_first: float = 0.5) -> Round:
    """A round robin of ``n`` bots (ids 1..n), ``games`` games per pair; bot 1 wins each of
    its games with ``p_first``, the other pairs are even."""

    def play(rng: random.Random) -> list[list[tuple[int, float]]]:
        out = []
        for a, b in itertools.combinations(range(1, n + 1), 2):
            p = p_first if a == 1 else 0.5
            for _ in range(games):
                k = 11 if rng.random() < 0.1 else rng.randint(1, 7)
                s = k if rng.random() < p else -k
                out.append([(a, float(s)), (b, float(-s))])
        return out

    return play


def table_rounds(strengths: dict[int, float], games: int = 4, sd: float = 20.0) -> Round:
    """One four-seat table of ``strengths`` (entrant -> mean points), ``games`` games a round."""

    def play(rng: random.Random) -> list[list[tuple[int, float]]]:
        out = []
        for _ in range(games):
            xs = {e: mu + rng.gauss(0, sd) for e, mu in strengths.items()}
            mean = sum(xs.values()) / len(xs)
            out.append([(e, x - mean) for e, x in xs.items()])
        return out

    return play


def run(play: Round, rule: sq.SettleRule, rng: random.Random) -> tuple[StopReason, int, sq.Verdict]:
    """One tournament played until settled: (why it stopped, rounds played, last verdict)."""
    games: list[list[tuple[int, float]]] = []
    for rounds in range(1, rule.max_rounds + 1):
        games += play(rng)
        verdict = sq.evaluate(games, rule)
        reason = sq.decide(verdict, rounds, rule)
        if reason is not None:
            return reason, rounds, verdict
    raise AssertionError("decide stops at max_rounds")


def rates(play: Round, rule: sq.SettleRule, n: int, seed: int) -> tuple[float, float, float]:
    """Over ``n`` seeded tournaments: the share stopped settled, the share settled with bot 1
    (the true best, if any) not the leader, and the mean rounds played."""
    rng = random.Random(seed)
    settled = wrong = rounds = 0
    for _ in range(n):
        reason, r, verdict = run(play, rule, rng)
        rounds += r
        if reason is StopReason.SETTLED:
            settled += 1
            wrong += verdict.leader != 1
    return settled / n, wrong / n, rounds / n


# -- the formula ------------------------------------------------------------------------------
def test_bounds_are_walds_and_the_llr_is_the_normal_gsprt():
    rule = sq.SettleRule(max_rounds=5, delta=2.0, min_games=2)
    assert rule.upper == pytest.approx(math.log(19)) and rule.lower == pytest.approx(-math.log(19))
    # A beats B in three games of 3, 5, 1 points: d = 6, residuals by hand.
    games = [[("A", 3.0), ("B", -3.0)], [("A", 5.0), ("B", -5.0)], [("A", 1.0), ("B", -1.0)]]
    v = sq.evaluate(games, rule)
    m = 3.0
    e = [(x - m) / 3 - (-x + m) / 3 for x in (3.0, 5.0, 1.0)]
    var = sum(x * x for x in e) * 3 / 2
    assert (v.leader, v.runner_up, v.games) == ("A", "B", 3)
    assert v.difference == pytest.approx(6.0) and v.se == pytest.approx(math.sqrt(var))
    assert v.llr == pytest.approx((6.0**2 - (6.0 - 2.0) ** 2) / (2 * var))
    assert v.settled == (v.llr >= rule.upper)
    # a third entrant below them, never with the top two, does not change their statistic
    assert sq.evaluate([*games, [("C", -9.0)]], rule).difference == pytest.approx(6.0)


def test_the_test_waits_for_min_games_and_ties_go_to_the_lower_id():
    rule = sq.SettleRule(max_rounds=3, delta=1.0)  # min_games 20
    blowout = [[(1, 9.0 + i % 3), (2, -9.0 - i % 3)] for i in range(sq.MIN_GAMES - 1)]
    early = sq.evaluate(blowout, rule)
    assert early.llr > 10 * rule.upper and not early.settled
    assert sq.evaluate([*blowout, [(1, 9.0), (2, -9.0)]], rule).settled
    tie = sq.evaluate([[(5, 0.0), (3, 0.0), ("house-1", 0.0)]], rule)
    assert (tie.leader, tie.runner_up, tie.llr) == (3, 5, -sq.LLR_CLAMP)  # V = 0: the numerator's sign
    alone = sq.evaluate([[(4, 1.0)]], rule)
    assert (alone.leader, alone.runner_up, alone.settled) == (4, None, False)


def test_decide_stops_settled_or_at_max_rounds():
    rule = sq.SettleRule(max_rounds=3, delta=1.0)
    verdict = sq.Verdict(False, 0.0, rule.lower, rule.upper, 1, 2, 0.0, 1.0, 30, False)
    assert [sq.decide(verdict, r, rule) for r in (1, 2, 3)] == [None, None, StopReason.MAX_ROUNDS]
    won = sq.Verdict(True, 5.0, rule.lower, rule.upper, 1, 2, 3.0, 1.0, 30, False)
    assert sq.decide(won, 1, rule) is StopReason.SETTLED
    for bad in (
        {"max_rounds": 0, "delta": 1},
        {"max_rounds": 2, "delta": 0},
        {"max_rounds": 2, "delta": 1, "alpha": 0},
    ):
        with pytest.raises(ValueError):
            sq.SettleRule.from_dict(bad)
    assert sq.SettleRule.from_dict(rule.to_dict()) == rule


def test_adjusted_scores_only_when_every_game_has_a_par():
    results = [((1, 2), [{"scores": [3.0, -3.0], "par": [1.0, -1.0]}, {"scores": [-2.0, 2.0], "par": [0.5, -0.5]}])]
    games, adjusted = sq.game_values(results)
    assert adjusted and games == [[(1, 2.0), (2, -2.0)], [(1, -2.5), (2, 2.5)]]
    mixed = [*results, (("house-1", 1), [{"scores": [1.0, -1.0]}])]
    games, adjusted = sq.game_values(mixed)
    assert not adjusted and games[0] == [(1, 3.0), (2, -3.0)] and games[2] == [("house-1", 1.0), (1, -1.0)]
    assert sq.game_values([((1, 2), [{"scores": [1, -1], "par": [0.0]}])])[1] is False  # a par per seat, or none
    assert sq.game_values([]) == ([], False)
    assert sq.default_delta("trump_millionaire", {"target_score": 50}) == 5.0
    assert sq.default_delta("million_doubt", {}) == sq.default_delta("jdf", {}) == 1.0


# -- error rates, by simulation ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "play", "delta", "max_rounds"),
    [
        ("2 bots, 10 games a round", md_rounds(2, 10), 1.0, 10),
        ("4 bots, round robin of 2 games a pair", md_rounds(4, 2), 1.0, 8),
        ("4 entrants at one 4-seat table", table_rounds({1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0}), 10.0, 10),
    ],
)
def test_equal_top_two_are_rarely_called_settled(name, play, delta, max_rounds):
    """Alpha: with the top two of equal strength, "settled" in at most alpha of tournaments
    (the data picks which leads: both directions count)."""
    rule = sq.SettleRule(max_rounds=max_rounds, delta=delta)
    settled, _wrong, rounds = rates(play, rule, 300, seed=20261210)
    assert settled <= rule.alpha, (name, settled)
    assert rounds > 0.95 * max_rounds  # nearly all play every round


def test_a_larger_alpha_settles_equal_bots_more_often_but_still_below_it():
    play = md_rounds(2, 10)
    strict, _, _ = rates(play, sq.SettleRule(max_rounds=10, delta=1.0), 300, seed=7)
    loose, _, _ = rates(play, sq.SettleRule(max_rounds=10, delta=1.0, alpha=0.2), 300, seed=7)
    assert strict <= loose <= 0.2 and loose > 0


def test_a_strong_bot_against_a_weak_one_settles_in_a_few_rounds():
    """heuristic against random in Million Doubt wins about 0.92 of its games (docs/performance.md):
    settled by round 3 of 10 games (20 games at least: MIN_GAMES), never later than round 4."""
    settled, wrong, rounds = rates(md_rounds(2, 10, p_first=0.92), sq.SettleRule(max_rounds=10, delta=1.0), 200, seed=3)
    assert settled == 1.0 and wrong == 0.0 and rounds <= 3.0


@pytest.mark.parametrize(
    ("name", "play", "delta", "least"),
    [
        ("2 bots, 3 delta apart", md_rounds(2, 10, p_first=md_win_probability(3.0)), 1.0, 0.95),
        ("4-seat table, leader 3 delta ahead", table_rounds({1: 30.0, 2: 0.0, 3: 0.0, 4: 0.0}), 10.0, 0.95),
    ],
)
def test_a_real_lead_settles_before_max_rounds_with_the_right_leader(name, play, delta, least):
    """Power: a leader ahead by three times delta is found settled within 30 rounds in at
    least ``least`` of tournaments, and the settled leader is the true one."""
    settled, wrong, _rounds = rates(play, sq.SettleRule(max_rounds=30, delta=delta), 200, seed=11)
    assert settled >= least and wrong == 0.0, (name, settled, wrong)
