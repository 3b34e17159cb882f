"""Provably fair deals without services: the commitment's byte encoding, the seed chain, and
``arena logs verify`` rejecting logs whose deals do not follow from the revealed seed."""

from __future__ import annotations

import copy
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from arena import fairness
from arena.matchlog import write_log
from arena.runner.match import run_match
from arena.runner.replay import ReplayError, check_fairness, replay, verify_logs
from arena.schedule import build_schedule
from bots_sdk.samples import SAMPLE_BOTS

REPO = Path(__file__).resolve().parents[2]
SEED = 4_242_424_242
SALT = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
TID = 17


def _tournament_log(ruleset: str, index: int, attempt: int = 1, games: int = 2) -> dict:
    """A log as the worker writes it: match ``index`` of tournament TID seeded from SEED."""
    seed = fairness.attempt_seed(fairness.match_seed(SEED, TID, index), attempt)
    n = 2 if ruleset == "million_doubt" else 4
    options = (
        {"target_score": 10}
        if ruleset == "trump_millionaire"
        else ({"sets": 1, "games_per_set": 1} if ruleset == "jdf" else {})
    )
    return run_match(
        [SAMPLE_BOTS["heuristic"](seed=i) for i in range(n)],
        ruleset,
        options,
        seed=seed,
        games=games,
        notices=False,
        record_urls=False,
        fairness={
            "tournament_id": TID,
            "match_index": index,
            "attempt": attempt,
            "commitment": fairness.commitment(SEED, SALT),
        },
    )


def test_commitment_is_sha256_of_salt_then_seed_as_8_bytes_big_endian():
    # The documented encoding (docs/fairness.md), computed independently here.
    expected = hashlib.sha256(bytes.fromhex(SALT) + SEED.to_bytes(8, "big")).hexdigest()
    assert fairness.commitment(SEED, SALT) == expected
    assert fairness.commitment(0, SALT) == hashlib.sha256(bytes.fromhex(SALT) + b"\0" * 8).hexdigest()
    assert len(fairness.new_salt()) == 64 and fairness.new_salt() != fairness.new_salt()
    fairness.check_commitment(SEED, SALT, expected.upper())
    for bad in ((SEED + 1, SALT), (SEED, SALT[:-2] + "00")):
        with pytest.raises(fairness.FairnessError, match="commitment"):
            fairness.check_commitment(*bad, expected)
    for seed, salt in ((-1, SALT), (2**63, SALT), (True, SALT), (1, "zz"), (1, "00" * 31)):
        with pytest.raises(fairness.FairnessError):
            fairness.commitment(seed, salt)


def test_seed_chain_matches_the_documented_formula():
    def h(*parts):
        text = ":".join(str(p) for p in parts)
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1

    m = fairness.match_seed(SEED, TID, 5)
    assert m == h(SEED, "tournament", TID, "match", 5)
    assert fairness.attempt_seed(m, 2) == h(m, "attempt", 2)
    assert fairness.game_seed(7, 3) == h(7, 3)
    # the schedule stores exactly these match seeds, distinct for every match and tournament
    plan = build_schedule(4, [1, 2, 3, 4, 5], 2, SEED, tournament_id=TID)
    assert [x.seed for x in plan] == [fairness.match_seed(SEED, TID, x.index) for x in plan]
    assert len({x.seed for x in plan}) == len(plan)
    other = build_schedule(4, [1, 2, 3, 4, 5], 2, SEED, tournament_id=TID + 1)
    assert not {x.seed for x in plan} & {x.seed for x in other}


@pytest.mark.parametrize("ruleset", ["million_doubt", "trump_millionaire", "jdf"])
def test_a_tournament_log_follows_from_the_revealed_seed(ruleset):
    log = _tournament_log(ruleset, index=3, attempt=2)
    replay(log)
    check_fairness(log, SEED, SALT)
    with pytest.raises(ReplayError, match="commitment"):
        check_fairness(log, SEED + 1, SALT)
    # every game dealt afresh: no deal twice in a match (nor between attempts)
    first = _tournament_log(ruleset, index=3, attempt=1)
    seeds = [g["seed"] for g in log["games"]] + [g["seed"] for g in first["games"]]
    assert len(set(seeds)) == len(seeds)


@pytest.mark.slow
def test_verify_rejects_logs_whose_deals_do_not_follow_from_the_seed(tmp_path):
    good = _tournament_log("million_doubt", index=0)
    # 1. A log played in full from another seed, claiming to be match 1: replays, but is not fair.
    forged = _tournament_log("million_doubt", index=9)
    forged["fairness"]["match_index"] = 1
    # 2. The right match seed on top, but the games were dealt from other seeds.
    swapped = copy.deepcopy(good)
    swapped["fairness"]["match_index"] = 2
    swapped["seed"] = fairness.attempt_seed(fairness.match_seed(SEED, TID, 2), 1)
    # 3. Recorded deal events that differ from the engine's deal of the seed.
    dealt = copy.deepcopy(_tournament_log("million_doubt", index=3))
    events = dealt["games"][0]["engine_log"]["events"]
    deal = next(e for e in events if "hands" in e or "hand" in e)
    key = "hands" if "hands" in deal else "hand"
    deal[key] = copy.deepcopy(deal[key])
    if isinstance(deal[key], dict):
        k0, k1 = sorted(deal[key])[:2]
        deal[key][k0], deal[key][k1] = deal[key][k1], deal[key][k0]
    else:
        deal[key] = list(reversed(deal[key]))
    # 4. A deal from an explicit setup instead of the seed.
    setup = copy.deepcopy(_tournament_log("million_doubt", index=4))
    setup["games"][0]["engine_log"]["setup"] = {"hands": {}}
    for name, log in (("good", good), ("forged", forged), ("swapped", swapped), ("dealt", dealt), ("setup", setup)):
        write_log(log, tmp_path / f"{name}.json")
    replay(forged)
    replay(swapped)  # each is a consistent replay: only the seed chain exposes them
    ok, failures = verify_logs([tmp_path], seed=SEED, salt=SALT)
    reasons = {Path(p).stem: why for p, why in failures}
    assert ok == 1 and set(reasons) == {"forged", "swapped", "dealt", "setup"}, failures
    assert "match seed does not follow" in reasons["forged"]
    assert "do not follow from the revealed seed" in reasons["swapped"]
    assert "events" in reasons["dealt"] or "differ" in reasons["dealt"]
    # Without the revealed seed only the replay checks run: the forged logs pass them.
    ok, failures = verify_logs([tmp_path / "forged.json", tmp_path / "swapped.json"])
    assert ok == 2 and not failures
    # The command line: exit status 1, one FAILED line per bad log; a good folder passes.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "daifugo_arena.cli",
            "logs",
            "verify",
            str(tmp_path),
            "--seed",
            str(SEED),
            "--salt",
            SALT,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout.count("FAILED") == 4, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "1 verified, 4 failed"
    wrong = subprocess.run(
        [
            sys.executable,
            "-m",
            "daifugo_arena.cli",
            "logs",
            "verify",
            str(tmp_path / "good.json"),
            "--seed",
            str(SEED + 1),
            "--salt",
            SALT,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wrong.returncode == 1 and "commitment" in wrong.stdout
    right = subprocess.run(
        [
            sys.executable,
            "-m",
            "daifugo_arena.cli",
            "logs",
            "verify",
            str(tmp_path / "good.json"),
            "--seed",
            str(SEED),
            "--salt",
            SALT,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert right.returncode == 0 and right.stdout.strip().endswith("1 verified, 0 failed"), right.stdout


def test_two_logs_of_one_match_are_refused(tmp_path):
    write_log(_tournament_log("million_doubt", index=0, attempt=1), tmp_path / "a.json")
    write_log(_tournament_log("million_doubt", index=0, attempt=2), tmp_path / "b.json")
    ok, failures = verify_logs([tmp_path], seed=SEED, salt=SALT)
    assert ok == 1 and len(failures) == 1 and "second log of match index 0" in failures[0][1]


def test_logs_kept_without_urls_blank_them_from_fault_details():
    log = run_match(
        ["http://127.0.0.1:9/decide", SAMPLE_BOTS["random"](seed=1)],
        "million_doubt",
        seed=3,
        games=1,
        notices=False,
        record_urls=False,
        time_rules=None,
        max_faults=1,
    )
    assert [p["url"] for p in log["players"]] == [None, None]
    assert log["faults"] and "127.0.0.1:9" not in str(log)
