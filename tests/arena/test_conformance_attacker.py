"""The bot check plays against a cheating contestant: nothing a bot is sent in the check lets
it learn another seat's hidden cards (C-11). The random run's seed must not reach the bot
(from it ``engine.new_game`` rebuilds every hand), and the first request after an opening
shows the bot exactly the engine's view of its seat. Real HTTP bots on 127.0.0.1."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import engine
from arena.conformance import PROBES, conformance_game
from arena.conformance.games import _runs
from bots_sdk.bot import Request
from bots_sdk.samples import SAMPLE_BOTS
from tests.fakes import FakeBot

GreedyBot = type(SAMPLE_BOTS["greedy"]())
SEED = 424242424242


class Spy(GreedyBot):  # type: ignore[misc, valid-type]
    """Greedy, recording every decision request it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []

    def decide(self, request: Any) -> dict:
        req = request if isinstance(request, Request) else Request(request)
        self.requests.append(req.raw)
        return super().decide(request)


def _spy_check(ruleset: str) -> tuple[dict, list[dict[str, Any]]]:
    spy = Spy()
    server = FakeBot(spy)
    try:
        out = conformance_game(server.url, ruleset, seed=SEED, allow_private=True)
    finally:
        server.close()
    return out, spy.requests


@pytest.mark.parametrize("ruleset", ["million_doubt", "jdf"])
def test_the_check_never_sends_the_bot_its_seed(ruleset: str) -> None:
    out, requests = _spy_check(ruleset)
    assert out["ok"] is True, out
    assert requests
    for raw in requests:
        assert str(SEED) not in json.dumps(raw), raw["match_id"]
        assert re.fullmatch(r"arena-[0-9]+", raw["match_id"]), raw["match_id"]  # as a tournament's


def _by_probe(ruleset: str, requests: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The bot's requests per run of the check (its runs are played in the order of _runs)."""
    ids = list(dict.fromkeys(r["match_id"] for r in requests))
    names = [p.name for p in _runs(ruleset)]
    assert len(ids) == len(names), (ids, names)
    return {name: [r for r in requests if r["match_id"] == mid] for name, mid in zip(names, ids)}


@pytest.mark.parametrize("ruleset", ["million_doubt", "trump_millionaire", "jdf"])
def test_after_an_opening_the_bot_sees_the_engines_view_of_its_seat(ruleset: str) -> None:
    out, requests = _spy_check(ruleset)
    assert out["ok"] is True, out
    for probe in PROBES[ruleset]:
        if not probe.opening:
            continue
        g = engine.from_setup(ruleset, probe.options, probe.setup)
        for seat, action in probe.opening:
            g.apply(seat, action)
        first = _by_probe(ruleset, requests)[probe.name][0]
        assert first["observation"] == json.loads(json.dumps(g.observation(0))), probe.name
        others = {c for s in range(1, g.seats) for c in g.observation(s)["hand"]} - set(g.observation(0)["hand"])
        assert not others & set(json.dumps(first["observation"]["history"]).split('"')), probe.name
