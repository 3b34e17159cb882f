"""The match runner in-process: seat plans, replay checks, and `arena play` for every rule set."""

from __future__ import annotations

import copy

import pytest
from click.testing import CliRunner

from arena.runner.match import MatchError, default_game_specs, run_match
from arena.runner.replay import ReplayError, replay
from arena.seeds import derive_seed
from bots_sdk.samples import GreedyBot, RandomBot
from daifugo_arena.cli import main


def test_default_million_doubt_games_are_each_dealt_afresh():
    specs = default_game_specs("million_doubt", 42, 4)
    assert len({s["seed"] for s in specs}) == 4  # no deal twice: a bot remembers nothing useful
    assert [s["seats"] for s in specs] == [[0, 1], [1, 0], [0, 1], [1, 0]]
    assert derive_seed(42, 0) == derive_seed(42, 0) != derive_seed(43, 0)


def test_same_seed_same_match():
    a = run_match([GreedyBot(), RandomBot(seed=1)], "million_doubt", seed=5, games=4, notices=False)
    b = run_match([GreedyBot(), RandomBot(seed=1)], "million_doubt", seed=5, games=4, notices=False)
    assert [g["engine_log"]["actions"] for g in a["games"]] == [g["engine_log"]["actions"] for g in b["games"]]
    assert a["result"] == b["result"]


def test_bad_parameters():
    with pytest.raises(MatchError, match="seats"):
        run_match([GreedyBot()], "million_doubt", game_specs=[{"seed": 1, "seats": [0, 1]}])
    with pytest.raises(MatchError, match="every player"):
        run_match([GreedyBot(), GreedyBot(), GreedyBot()], "million_doubt", games=2)


@pytest.fixture(scope="module")
def log():
    return run_match([GreedyBot(), RandomBot(seed=3)], "million_doubt", seed=1, games=2, notices=False)


def test_replay_checks(log):
    assert replay(log) == log["result"]
    bad = copy.deepcopy(log)
    bad["games"][1]["result"]["scores"] = {"0": 99, "1": -99}
    with pytest.raises(ReplayError, match="game 1"):
        replay(bad)
    bad = copy.deepcopy(log)
    bad["games"][0]["exchanges"][0]["bank_before_ms"] -= 1  # not the request that was sent
    with pytest.raises(ReplayError, match="request 0"):
        replay(bad)
    assert replay(bad, check_requests=False) == log["result"]
    bad = copy.deepcopy(log)
    bad["result"]["scores"] = [0, 0]
    with pytest.raises(ReplayError, match="match result"):
        replay(bad)
    bad = copy.deepcopy(log)
    bad["games"][0]["engine_log"]["actions"][0]["action"]["cards"] = ["JK"]
    with pytest.raises(ReplayError):
        replay(bad)


@pytest.mark.parametrize(
    "ruleset,args",
    [
        ("million_doubt", ["--games", "6", "random", "greedy"]),
        ("trump_millionaire", ["--games", "1", "--options", '{"target_score": 30}', "heuristic", "random"]),
        ("jdf", ["--games", "1", "--options", '{"sets": 1}', "heuristic", "greedy", "random", "random"]),
    ],
)
def test_arena_play_every_ruleset(ruleset, args, tmp_path):
    res = CliRunner().invoke(main, ["play", "-r", ruleset, "--seed", "3", "-q", "--logs", str(tmp_path), *args])
    assert res.exit_code == 0, res.output
    assert "win rate" in res.output
    if ruleset == "trump_millionaire":
        assert "seats filled by repeating" in res.output
    files = list(tmp_path.glob("match-*.json.gz"))
    assert files
    res = CliRunner().invoke(main, ["logs", "verify", str(tmp_path)])
    assert res.exit_code == 0 and f"{len(files)} verified, 0 failed" in res.output


def test_arena_play_bad_input():
    res = CliRunner().invoke(main, ["play", "nosuchbot", "random"])
    assert res.exit_code != 0 and "nosuchbot" in res.output
    res = CliRunner().invoke(main, ["play", "random", "random", "random"])
    assert res.exit_code != 0 and "seats 2" in res.output
    res = CliRunner().invoke(main, ["play", "--options", "[1]", "random"])
    assert res.exit_code != 0 and "--options" in res.output
