"""Every seat's bank in each decision request (``banks_ms``, issue 29 point 2), without services:
the request builder, the runner's figures, the schema, the SDK's view, and replay (which rebuilds
the banks from the log, and still verifies logs written before requests carried them)."""

from __future__ import annotations

import hashlib
import json
import time

import pytest

import engine
from arena.runner.match import run_match
from arena.runner.replay import ReplayError, replay
from bots_sdk import protocol
from bots_sdk.bot import Request
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules

RULES = TimeRules(initial_ms=5_000, increment_ms=0, cap_ms=5_000)


class Thinker(SAMPLE_BOTS["random"]):
    """A random bot that takes a millisecond or two a decision (with no increment, banks fall)."""

    def decide(self, request):
        time.sleep(0.001)
        return super().decide(request)


def test_the_request_holds_every_seats_bank():
    g = engine.new_game("jdf", {}, 3)
    d = g.decision()
    req = protocol.build_request(
        g, d.seat, match_id="m", game=0, time_rules=RULES, remaining_ms=4_321, banks_ms=[1, 2, 3, 4]
    )
    expected = [1, 2, 3, 4]
    expected[d.seat] = 4_321  # the asked seat's bank is its remaining_ms, always
    assert req["banks_ms"] == expected and list(req)[-2:] == ["time", "banks_ms"]
    protocol.validate("decision-request", json.loads(protocol.dumps(req)))
    assert Request(req).banks_ms == expected
    # no figures given: nobody else has spent time yet
    plain = protocol.build_request(g, d.seat, match_id="m", game=0, time_rules=RULES, remaining_ms=4_321)
    assert plain["banks_ms"] == [4_321 if s == d.seat else 5_000 for s in range(4)]
    with pytest.raises(ValueError, match="banks_ms has 2 entries for 4 seats"):
        protocol.build_request(g, d.seat, match_id="m", game=0, time_rules=RULES, remaining_ms=1, banks_ms=[1, 2])


@pytest.mark.parametrize(
    ("ruleset", "players", "options"),
    [
        ("million_doubt", 2, None),
        ("trump_millionaire", 4, {"target_score": 20}),
        ("jdf", 4, {"sets": 1, "games_per_set": 2}),
    ],
)
def test_each_request_carries_the_banks_the_exchanges_left(ruleset, players, options):
    """Played by the runner: every request's ``banks_ms`` is, for each seat, the bank after that
    seat's last exchange in the same deal or game (the live view's ``bank_after_ms``), the
    initial bank after a reset; and replay rebuilds exactly those requests."""
    log = run_match(
        [Thinker(seed=i) for i in range(players)],
        ruleset,
        options,
        seed=5,
        games=2,
        time_rules=RULES,
        log_requests=True,
    )
    moved = resets = 0
    for gm in log["games"]:
        shown, unit = [RULES.initial_ms] * players, 0
        for ex in gm["exchanges"]:
            if ex["unit"] != unit:  # a new deal (TM) or game (JDF): banks reset (TIME-1)
                shown, unit = [RULES.initial_ms] * players, ex["unit"]
                resets += 1
            assert ex["request"]["banks_ms"] == shown
            assert shown[ex["seat"]] == ex["bank_before_ms"]
            moved += len(set(shown)) > 1
            shown[ex["seat"]] = ex["bank_after_ms"]
    assert moved > 10
    assert resets > 0 or ruleset == "million_doubt"  # (a Million Doubt game is its own unit)
    replay(log)


def _rehash(log, edit) -> None:
    for gm in log["games"]:
        for ex in gm["exchanges"]:
            edit(ex["request"])
            ex["request_sha256"] = hashlib.sha256(protocol.dumps(ex["request"])).hexdigest()


def test_replay_verifies_logs_written_before_requests_carried_the_banks():
    log = run_match([Thinker(seed=i) for i in range(2)], "million_doubt", None, seed=9, games=2, time_rules=RULES)
    log = json.loads(json.dumps(log))
    # the same match as an older arena logged it: requests without banks_ms
    old = run_match(
        [Thinker(seed=i) for i in range(2)], "million_doubt", None, seed=9, games=2, time_rules=RULES, log_requests=True
    )
    _rehash(old, lambda req: req.pop("banks_ms"))
    replay(old)
    # a log claiming clocks other than those its exchanges left does not verify
    forged = run_match(
        [Thinker(seed=i) for i in range(2)], "million_doubt", None, seed=9, games=2, time_rules=RULES, log_requests=True
    )
    _rehash(forged, lambda req: req["banks_ms"].__setitem__(1 - req["seat"], 4_999))
    with pytest.raises(ReplayError, match="rebuilt from the engine differs"):
        replay(forged)
    # one shape per log: a log mixing both does not verify either
    mixed = run_match(
        [Thinker(seed=i) for i in range(2)], "million_doubt", None, seed=9, games=2, time_rules=RULES, log_requests=True
    )
    first = mixed["games"][0]["exchanges"][0]["request"]
    first.pop("banks_ms")
    mixed["games"][0]["exchanges"][0]["request_sha256"] = hashlib.sha256(protocol.dumps(first)).hexdigest()
    with pytest.raises(ReplayError, match="rebuilt from the engine differs"):
        replay(mixed)
    replay(log)
