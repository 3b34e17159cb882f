"""Pars without services (arena.par, docs/ranking.md): reproducible from the seeds, the same
for the same deal whoever played it, zero in expectation by construction, recorded in the
log and recomputed by ``arena logs verify``, which refuses a log whose pars were altered."""

from __future__ import annotations

import copy

import pytest

import engine
from arena import par
from arena.config import MAX_PAR_ROLLOUTS, ConfigError, Settings
from arena.matchlog import write_log
from arena.runner.match import run_match
from arena.runner.replay import ReplayError, replay, verify_logs
from arena.seeds import derive_seed
from bots_sdk.samples import SAMPLE_BOTS

LOCAL_RULES = {
    "eleven_back": True,
    "stairs_revolution": True,
    "number_lock": True,
    "five_skip": True,
    "seven_pass": True,
    "ten_discard": True,
}
SHORT = {
    "million_doubt": {},
    "trump_millionaire": {"target_score": 10},
    "jdf": {"sets": 1, "games_per_set": 2},
}


def _match(ruleset: str, bots: list[str], seed: int, options: dict | None = None, games: int = 2) -> dict:
    n = 2 if ruleset == "million_doubt" else 4
    players = [SAMPLE_BOTS[bots[i % len(bots)]](seed=seed + i) for i in range(n)]
    opts = SHORT[ruleset] if options is None else options
    return run_match(players, ruleset, opts, seed=seed, games=games, notices=False)


def _seats(ruleset: str) -> int:
    return 2 if ruleset == "million_doubt" else 4


@pytest.mark.parametrize("ruleset", ["million_doubt", "trump_millionaire", "jdf"])
def test_a_par_is_reproducible_and_sums_to_zero(ruleset):
    log = _match(ruleset, ["heuristic", "greedy"], 31)
    first = par.match_pars(log, 3)
    assert first == par.match_pars(copy.deepcopy(log), 3)  # the seeds alone decide it
    assert len(first) == len(log["games"])
    for p in first:
        assert len(p) == _seats(ruleset) and abs(sum(p)) < 1e-3  # luck is shared out, not made
        assert all(round(x, par.PAR_DECIMALS) == x for x in p)
    assert first != par.match_pars(log, 5)  # another rollout count: other rollouts


@pytest.mark.parametrize("ruleset", ["million_doubt", "trump_millionaire", "jdf"])
def test_the_same_deal_has_the_same_luck_whoever_plays_it(ruleset):
    """The first deal is dealt from the seed alone (its leader too): bots that play it
    differently get the same luck for it, seat by seat."""
    a = _match(ruleset, ["heuristic"], 77, games=1)
    b = _match(ruleset, ["random"], 77, games=1)
    ga, gb = a["games"][0], b["games"][0]
    assert ga["seed"] == gb["seed"] and ga["engine_log"]["actions"] != gb["engine_log"]["actions"]
    deals_a = par.chance_deals(ruleset, SHORT[ruleset], ga["seed"], ga["engine_log"]["actions"])
    deals_b = par.chance_deals(ruleset, SHORT[ruleset], gb["seed"], gb["engine_log"]["actions"])
    assert deals_a[0] == deals_b[0] and deals_a[0].state is None
    seed = derive_seed(ga["seed"], "par", 0)
    luck = par.deal_luck(ruleset, SHORT[ruleset], deals_a[0], seed, 4)
    assert luck == par.deal_luck(ruleset, SHORT[ruleset], deals_b[0], seed, 4)
    if ruleset == "million_doubt":  # one deal per game: the whole par is the deal's
        assert par.match_pars(a, 4) == par.match_pars(b, 4)


def test_later_deals_keep_the_position_play_made():
    """Trump Millionaire from its second deal on: the Millionaire, as play made it."""
    log = _match("trump_millionaire", ["heuristic", "greedy"], 5, {"target_score": 40}, games=1)
    gm = log["games"][0]
    deals = par.chance_deals("trump_millionaire", {"target_score": 40}, gm["seed"], gm["engine_log"]["actions"])
    winners = [d["winner"] for d in gm["result"]["deals"]]
    assert len(deals) == len(winners) >= 2
    assert deals[0].state is None
    for k in range(1, len(deals)):
        if not gm["result"]["deals"][k - 1]["void"]:
            assert deals[k].state == {"millionaire": winners[k - 1]} and deals[k].leader == winners[k - 1]


@pytest.mark.parametrize("ruleset", ["trump_millionaire", "jdf"])
def test_luck_is_zero_on_average_over_the_hands_of_a_deal(ruleset):
    """The zero-mean property, exactly: a deal and its hands rotated among the seats are
    equally likely; over those rotations every seat's luck adds up to zero (common random
    numbers make it exact), whatever the position."""
    opts = {"target_score": 40} if ruleset == "trump_millionaire" else SHORT[ruleset]
    log = _match(ruleset, ["heuristic", "greedy"], 12, opts, games=1)
    gm = log["games"][0]
    deals = par.chance_deals(ruleset, opts, gm["seed"], gm["engine_log"]["actions"])
    deal = next(d for d in deals if d.state is not None)
    n = len(deal.hands)
    total = [0.0] * n
    for j in range(n):
        rotated = par.Deal(
            tuple(deal.hands[(s + j) % n] for s in range(n)), deal.aside, deal.leader, deal.state, deal.bonus
        )
        for s, x in enumerate(par.deal_luck(ruleset, opts, rotated, 99, 3)):
            total[s] += x
    assert all(abs(t) < 1e-9 for t in total)


@pytest.mark.parametrize("ruleset", ["trump_millionaire", "jdf"])
def test_local_rules_and_both_baselines_play_out(ruleset):
    opts = {**SHORT[ruleset], **LOCAL_RULES}
    log = _match(ruleset, ["heuristic", "random"], 8, opts, games=1)
    for baseline in par.BASELINES:
        (p,) = par.match_pars(log, 2, baseline)
        assert len(p) == 4 and abs(sum(p)) < 1e-3


def test_players_get_the_par_of_their_seat():
    """Million Doubt swaps the seats every other game: a player's par follows its seat."""
    log = _match("million_doubt", ["heuristic", "greedy"], 3, games=2)
    pars = par.match_pars(log, 2)
    assert log["games"][1]["seats"] == [1, 0]
    assert par.player_pars(log["games"][1], pars[1]) == [pars[1][1], pars[1][0]]
    assert par.player_pars(log["games"][0], pars[0]) == pars[0]


def test_bad_requests_are_refused():
    log = _match("million_doubt", ["greedy"], 4, games=1)
    gm = log["games"][0]
    with pytest.raises(par.ParError, match="at least one rollout"):
        par.game_par("million_doubt", {}, gm["seed"], 2, rollouts=0)
    with pytest.raises(par.ParError, match="unknown par baseline"):
        par.game_par("million_doubt", {}, gm["seed"], 2, rollouts=1, baseline="oracle")
    with pytest.raises(par.ParError, match="has 2 seats"):
        par.game_par("million_doubt", {}, gm["seed"], 4, rollouts=1)
    bad = copy.deepcopy(gm["engine_log"]["actions"])
    bad[0] = {"seat": bad[0]["seat"], "action": {"type": "play", "cards": ["JK", "JK", "JK"]}}
    with pytest.raises(par.ParError, match="does not replay"):
        par.game_par("million_doubt", {}, gm["seed"], 2, rollouts=1, actions=bad)
    fixed = copy.deepcopy(log)
    fixed["games"][0]["seed"] = None
    with pytest.raises(par.ParError, match="not dealt from a seed"):
        par.match_pars(fixed, 1)


def test_every_rule_set_has_a_weight_fixed_in_advance():
    assert set(par.WEIGHTS) == set(engine.RULESETS)
    assert all(0 <= par.weight_of(r) <= 1 for r in engine.RULESETS)


@pytest.mark.parametrize("ruleset", ["million_doubt", "trump_millionaire", "jdf"])
def test_the_par_is_the_weighted_luck(ruleset):
    """The stored par is the weight times the deals' luck (rounded once), so it still sums to
    zero over the seats; weight 0 plays no rollout and gives 0 to every seat."""
    log = _match(ruleset, ["heuristic", "greedy"], 41, games=1)
    (full,) = par.match_pars(log, 2, weight=1.0)
    (half,) = par.match_pars(log, 2, weight=0.5)
    assert all(abs(h - 0.5 * f) <= 1e-4 for h, f in zip(half, full)) and half != full
    assert abs(sum(half)) < 1e-3
    assert par.match_pars(log, 2) == par.match_pars(log, 2, weight=par.weight_of(ruleset))
    gm = log["games"][0]
    seats = len(gm["seats"])
    assert par.game_par(ruleset, SHORT[ruleset], gm["seed"], seats, rollouts=1, weight=0) == [0.0] * seats
    bad = copy.deepcopy(gm["engine_log"]["actions"])
    bad[0] = {"seat": bad[0]["seat"], "action": {"type": "play", "cards": ["JK", "JK", "JK"]}}
    with pytest.raises(par.ParError, match="does not replay"):  # weight 0 still replays the log
        par.game_par(ruleset, SHORT[ruleset], gm["seed"], seats, rollouts=1, actions=bad, weight=0)
    for w in (-0.1, 1.5, True, "1"):
        with pytest.raises(par.ParError, match="weight must be a number from 0 to 1"):
            par.game_par(ruleset, SHORT[ruleset], gm["seed"], seats, rollouts=1, weight=w)


def test_verify_recomputes_weighted_pars_and_keeps_old_logs_verifying():
    log = _match("million_doubt", ["heuristic", "greedy"], 23, games=2)
    weighted = par.with_pars(log, par.match_pars(log, 2, weight=0.4), 2, weight=0.4)
    assert weighted["par"] == {"baseline": par.BASELINE, "rollouts": 2, "weight": 0.4}
    assert par.check_pars(weighted) == 2
    replay(weighted)
    # a log written before weights: no "weight" in its record, pars of weight 1
    old = par.with_pars(log, par.match_pars(log, 2, weight=1.0), 2, weight=1.0)
    del old["par"]["weight"]
    assert par.check_pars(old) == 2
    other_w = copy.deepcopy(weighted)
    other_w["par"]["weight"] = 0.5  # the record no longer matches the pars
    with pytest.raises(par.ParError, match="game 0: recorded par"):
        par.check_pars(other_w)
    unweighted = copy.deepcopy(weighted)
    del unweighted["par"]["weight"]  # read as weight 1: the pars of 0.4 differ
    with pytest.raises(par.ParError, match="game 0: recorded par"):
        par.check_pars(unweighted)
    for bad in (2, -1, "0.4", None):
        hostile = copy.deepcopy(weighted)
        hostile["par"]["weight"] = bad
        with pytest.raises(par.ParError, match="par weight must be a number from 0 to 1"):
            par.check_pars(hostile)
    for odd in (float("nan"), float("inf"), True):  # a hand-edited log (json.loads reads NaN)
        hostile = copy.deepcopy(weighted)
        hostile["games"][1]["par"][0] = odd
        with pytest.raises(par.ParError, match="game 1: recorded par"):
            par.check_pars(hostile)


def test_verify_recomputes_the_pars_and_refuses_altered_ones(tmp_path):
    log = _match("trump_millionaire", ["heuristic", "greedy"], 21, games=1)
    with_pars = par.with_pars(log, par.match_pars(log, 2, weight=1.0), 2, weight=1.0)
    assert with_pars["par"] == {"baseline": par.BASELINE, "rollouts": 2, "weight": 1.0}
    assert "par" not in log and "par" not in log["games"][0]  # a copy
    assert par.check_pars(with_pars) == 1 and par.check_pars(log) == 0
    replay(with_pars)
    write_log(with_pars, tmp_path / "good.json")
    nudged = copy.deepcopy(with_pars)
    nudged["games"][0]["par"][0] += 0.5
    nudged["games"][0]["par"][1] -= 0.5  # still sums to zero
    write_log(nudged, tmp_path / "nudged.json")
    other_k = copy.deepcopy(with_pars)
    other_k["par"]["rollouts"] = 3  # the record no longer matches the pars
    write_log(other_k, tmp_path / "other_k.json")
    endless = copy.deepcopy(with_pars)
    endless["par"]["rollouts"] = 10**9  # a hostile log cannot make the verifier work for ever
    with pytest.raises(par.ParError, match="rollouts must be 1 to 1024"):
        par.check_pars(endless)
    orphan = copy.deepcopy(with_pars)
    del orphan["par"]
    write_log(orphan, tmp_path / "orphan.json")
    with pytest.raises(ReplayError, match="pars: game 0: recorded par"):
        replay(nudged)
    assert replay(nudged, check_pars=False) == replay(with_pars)
    ok, failures = verify_logs([tmp_path])
    assert ok == 1
    assert sorted((p.rsplit("/", 1)[1], "pars:" in r) for p, r in failures) == [
        ("nudged.json", True),
        ("orphan.json", True),
        ("other_k.json", True),
    ]
    assert verify_logs([tmp_path], check_pars=False)[0] == 4


def test_par_rollouts_setting():
    assert MAX_PAR_ROLLOUTS == par.MAX_ROLLOUTS
    assert Settings.from_env({}).par_rollouts == 16
    assert Settings.from_env({"ARENA_PAR_ROLLOUTS": "0"}).par_rollouts == 0
    assert Settings.from_env({"ARENA_PAR_ROLLOUTS": " 64 "}).par_rollouts == 64
    for bad in ("-1", "1025", "many", "1.5"):
        with pytest.raises(ConfigError, match="ARENA_PAR_ROLLOUTS must be a whole number from 0 to 1024"):
            Settings.from_env({"ARENA_PAR_ROLLOUTS": bad})
