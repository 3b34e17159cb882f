"""The neighbours' significance test (arena.significance) and the standings report built on it
(arena.standings): what it reduces to, its false-positive rate on identical bots, the order's
basis (raw or adjusted), the settled verdicts, and one rating update per game."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from openskill.models import PlackettLuce

from arena.ranking import MatchRecord, compute_report, game_par, game_ranks, rate_games
from arena.significance import MIN_TEST_GAMES, Moments, SharedSums, difference, t975


def _moments(xs) -> Moments:
    m = Moments()
    for x in xs:
        m.add(x)
    return m


def _shared(xs, ys) -> SharedSums:
    s = SharedSums()
    for x, y in zip(xs, ys):
        s.add(x, y)
    return s


def test_with_every_game_shared_it_is_the_paired_t_test():
    rng = random.Random(3)
    xs = [rng.gauss(1.0, 2.0) for _ in range(40)]
    ys = [0.5 * x + rng.gauss(0.0, 1.0) for x in xs]
    d = difference(_moments(xs), _moments(ys), _shared(xs, ys))
    diffs = [x - y for x, y in zip(xs, ys)]
    paired_half = t975(39) * statistics.stdev(diffs) / math.sqrt(40)
    assert math.isclose(d.difference, statistics.mean(diffs), rel_tol=1e-12)
    assert math.isclose(d.ci95, paired_half, rel_tol=1e-9)
    assert d.shared_games == 40


def test_without_a_shared_game_it_is_the_unequal_variance_test_with_conservative_df():
    rng = random.Random(4)
    xs = [rng.gauss(0.0, 1.0) for _ in range(30)]
    ys = [rng.gauss(0.0, 3.0) for _ in range(12)]
    d = difference(_moments(xs), _moments(ys))
    se = math.sqrt(statistics.variance(xs) / 30 + statistics.variance(ys) / 12)
    assert math.isclose(d.ci95, t975(11) * se, rel_tol=1e-9)
    assert d.shared_games == 0


def test_a_zero_sum_duel_doubles_the_variance_welch_would_miss():
    """Two bots of a Million Doubt duel: y = -x in every game, so m_a - m_b = 2 m_a and its
    variance is 4 s^2/n, twice what a test that takes them for independent samples says."""
    xs = [3.0, -1.0, 2.0, -4.0, 5.0, 1.0, -2.0, 0.5]
    ys = [-x for x in xs]
    d = difference(_moments(xs), _moments(ys), _shared(xs, ys))
    s2 = statistics.variance(xs)
    assert math.isclose(d.ci95, t975(7) * math.sqrt(4 * s2 / 8), rel_tol=1e-9)
    welch = t975(7) * math.sqrt(2 * s2 / 8)
    assert math.isclose(d.ci95 / welch, math.sqrt(2), rel_tol=1e-9)


def test_too_few_games_and_exact_ties_are_never_significant():
    assert difference(_moments([1.0]), _moments([0.0, 1.0])).ci95 is None
    assert not difference(_moments([1.0]), _moments([0.0, 1.0])).significant
    same = _moments([1.0] * MIN_TEST_GAMES)
    assert not difference(same, _moments([1.0] * MIN_TEST_GAMES)).significant
    # no spread at all and a real gap: significant from MIN_TEST_GAMES games each, not before
    assert difference(same, _moments([0.0] * MIN_TEST_GAMES)).significant
    short = difference(_moments([1.0] * 3), _moments([0.0] * 3))
    assert short.ci95 == 0.0 and not short.significant
    # the page says "too few games" rather than "not significant" for such a gap
    assert short.too_few_games and not difference(same, _moments([0.0] * MIN_TEST_GAMES)).too_few_games
    assert difference(_moments([1.0]), _moments([0.0, 1.0])).too_few_games


def _identical_rate(seats: int, games: int, runs: int, seed: int, *, paired: bool) -> float:
    """How often two of ``seats`` identical bots (constant-sum scores, every game at one
    table) are called significantly different."""
    rng = random.Random(seed)
    hits = 0
    for _ in range(runs):
        a, b, shared = Moments(), Moments(), SharedSums()
        for _g in range(games):
            raw = [rng.gauss(0.0, 1.0) for _ in range(seats)]
            mean = sum(raw) / seats
            x, y = raw[0] - mean, raw[1] - mean
            a.add(x)
            b.add(y)
            shared.add(x, y)
        hits += difference(a, b, shared if paired else None).significant
    return hits / runs


@pytest.mark.parametrize("seats", [2, 4])
def test_identical_bots_are_called_different_about_5_percent_of_the_time(seats):
    """The false-positive rate the test promises, measured; ignoring the shared games (the
    two-sample test) calls identical bots different far more often: 2 seats, about 17%
    (its standard error is sqrt(2) too small); 4 seats, about 9% (sqrt(4/3))."""
    paired = _identical_rate(seats, games=40, runs=3000, seed=seats, paired=True)
    unpaired = _identical_rate(seats, games=40, runs=3000, seed=seats, paired=False)
    assert 0.03 <= paired <= 0.065, paired
    assert unpaired > (0.14 if seats == 2 else 0.075), unpaired


def test_par_is_used_only_when_complete_and_ranks_follow_the_adjusted_score():
    g = {"scores": [10.0, -10.0], "places": [1, 2], "par": [15.0, -15.0]}
    assert game_par(g, 2) == [15.0, -15.0]
    assert game_ranks(g, 2) == [2, 1]  # won, but by less than its cards were worth
    assert game_ranks({"scores": [10.0, -10.0], "places": [1, 2]}, 2) == [1, 2]
    for bad in ([1.0], [1.0, None], [1.0, float("nan")], [True, 1.0], "x", None):
        assert game_par({"scores": [1, 2], "places": [1, 2], "par": bad}, 2) is None
    four = {"scores": [3, 1, -1, -3], "places": [1, 2, 3, 4], "par": [1, 1, -1, -1]}
    assert game_ranks(four, 4) == [1, 2, 2, 4]  # adjusted 2, 0, 0, -2: equal ones tie
    assert game_ranks({**four, "par": [0.1 + 0.2, 0.3, 0, 0], "scores": [0.3, 0.1 + 0.2, 0, 0]}, 4) == [1, 1, 1, 1]


def test_one_rating_update_per_game_with_the_match_drift_spread_over_its_games():
    model = PlackettLuce()
    games = [
        {"scores": [1.0, -1.0], "places": [1, 2]},
        {"scores": [-2.0, 2.0], "places": [2, 1], "par": [-3.0, 3.0]},  # adjusted +1 / -1: seat 0 first
        {"scores": [2.0, -2.0], "places": [1, 2]},
    ]
    got = rate_games(model, [model.rating(), model.rating()], games)
    want = [model.rating(), model.rating()]
    for ranks in ([1, 2], [1, 2], [1, 2]):
        want = [t[0] for t in model.rate([[r] for r in want], ranks=ranks, tau=model.tau / math.sqrt(3))]
    assert [(r.mu, r.sigma) for r in got] == [(r.mu, r.sigma) for r in want]
    assert got[0].mu > 25 > got[1].mu


def _duel(index: int, a, b, x: float, par: float | None = None) -> MatchRecord:
    g: dict = {"scores": [x, -x], "places": [1, 2] if x > 0 else [2, 1] if x < 0 else [1, 1]}
    if par is not None:
        g["par"] = [par, -par]
    return MatchRecord(index, (a, b), [x, -x], g["places"], [0, 0], [g])


def test_report_orders_by_adjusted_means_only_when_every_game_has_a_par():
    # bot 1 scores more, but its cards were worth much more: adjusted, bot 2 is better
    recs = [_duel(i, 1, 2, 2.0 + (i % 3), par=4.0 + (i % 2)) for i in range(10)]
    rep = compute_report(recs, entrants=[1, 2])
    assert rep.order_by == "adjusted" and (rep.games, rep.games_with_par) == (10, 10)
    assert [r.entrant for r in rep.rows] == [2, 1]
    assert rep.rows[0].adjusted_mean == pytest.approx(-statistics.mean(x - p for x, p in _pairs(recs)))
    assert rep.rows[0].par_games == 10
    # one game without a par: raw order, and the adjusted mean covers the 10 with a par
    rep = compute_report([*recs, _duel(10, 1, 2, 1.0)], entrants=[1, 2])
    assert rep.order_by == "raw" and (rep.games, rep.games_with_par) == (11, 10)
    assert [r.entrant for r in rep.rows] == [1, 2]
    assert rep.rows[0].par_games == 10 and rep.rows[0].games == 11


def _pairs(recs):
    for r in recs:
        g = r.games[0]
        yield g["scores"][0], g["par"][0]


def test_settled_needs_every_neighbour_significant_and_everyone_played():
    rng = random.Random(9)
    recs, index = [], 0
    strength = {1: 3.0, 2: 0.0, 3: -3.0}
    for _round in range(15):
        for a, b in ((1, 2), (1, 3), (2, 3)):
            x = strength[a] - strength[b] + rng.gauss(0.0, 0.5)
            recs.append(_duel(index, a, b, x))
            index += 1
    rep = compute_report(recs, entrants=[1, 2, 3])
    assert [r.entrant for r in rep.rows] == [1, 2, 3]
    assert [(n.upper_rank, n.lower_rank) for n in rep.neighbours] == [(1, 2), (2, 3)]
    assert all(n.significant for n in rep.neighbours)
    assert rep.settled and rep.top_settled
    # a participant who has not played: nothing is settled
    rep = compute_report(recs, entrants=[1, 2, 3, 4])
    assert not rep.settled and not rep.top_settled and rep.rows[-1].rank == 0
    # two identical bots at the bottom: first place settled, the ranking not
    strength[3] = 0.0
    recs = []
    for _round in range(15):
        for a, b in ((1, 2), (1, 3), (2, 3)):
            recs.append(_duel(len(recs), a, b, strength[a] - strength[b] + rng.gauss(0.0, 0.5)))
    rep = compute_report(recs, entrants=[1, 2, 3])
    assert rep.top_settled and not rep.settled
    assert [n.significant for n in rep.neighbours] == [True, False]
    d = rep.to_dict()
    assert d["settled"] is False and d["top_settled"] is True and d["neighbours"][1]["significant"] is False
    assert set(d["neighbours"][0]) == {
        "upper_rank",
        "lower_rank",
        "difference",
        "ci95",
        "shared_games",
        "significant",
        "too_few_games",
    }


def test_fold_state_round_trips_and_other_versions_are_refolded():
    from arena.ranking import StandingsFold

    recs = [_duel(i, 1, "house-1", (-1) ** i * (i + 1.0), par=0.5) for i in range(6)]
    fold = StandingsFold()
    for r in recs[:3]:
        fold.add(r)
    again = StandingsFold.from_state(fold.state())
    assert again is not None
    for r in recs[3:]:
        fold.add(r)
        again.add(r)
    assert again.report().to_dict() == fold.report().to_dict() == compute_report(recs).to_dict()
    assert StandingsFold.from_state({"rows": []}) is None  # a state of the first version
