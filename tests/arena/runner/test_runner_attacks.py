"""A cheating bot and a failing player against the runner's new shape (Match, the Player
protocol, the typed log records, arena.runner.redact): an answer reaches only the
``response`` of its exchange, and a log kept without URLs names no seat's endpoint."""

from __future__ import annotations

import json

from arena.faults import FaultCode, fault
from arena.matchlog import Exchange, FaultRecord, encode
from arena.runner.match import Match, MatchConfig
from arena.runner.players import NO_SLOT, LocalPlayer, Outcome, SlotUse
from arena.runner.redact import URL_BLANK
from arena.runner.replay import replay
from bots_sdk.samples import SAMPLE_BOTS

FORGED = {"slot_wait_ms": 0.0, "slot_bypassed": False, "player": 1, "seat": 1, "fault": None, "n": 0}


class Forger:
    """Plays as the greedy sample bot, adding the log's own field names to every other answer."""

    def __init__(self):
        self.bot = SAMPLE_BOTS["greedy"](seed=5)
        self.name = "forger"
        self.calls = 0

    def decide(self, request):
        self.calls += 1
        action = self.bot.decide(request)
        return {**action, **FORGED} if self.calls % 2 else action

    def notice(self, message):
        return None


def test_an_answer_never_reaches_the_fields_of_its_exchange_or_fault():
    log = Match(
        [LocalPlayer(Forger()), LocalPlayer(SAMPLE_BOTS["greedy"](seed=6))],
        MatchConfig("million_doubt", seed=21, games=1, match_id="forge", max_faults=1000),
    ).play()
    assert replay(log) == log["result"]
    exchanges = [ex for g in log["games"] for ex in g["exchanges"]]
    mine = [ex for ex in exchanges if ex["player"] == 0]
    forged = [ex for ex in mine if ex["fault"] is not None]
    assert forged and all(ex["fault"] == "invalid_action" for ex in forged)
    for ex in exchanges:
        assert set(ex) <= set(Exchange.__annotations__)
        assert "slot_wait_ms" not in ex and "slot_bypassed" not in ex  # in-process: no slot
    assert [ex["n"] for ex in exchanges] == list(range(len(exchanges)))
    assert {ex["seat"] for ex in mine} == {log["games"][0]["seats"].index(0)}
    for f in log["faults"]:
        assert set(f) == set(FaultRecord.__annotations__)
        assert f["player"] == 0 and f["kind"] == "invalid_action"
        assert json.loads(f["received"]).keys() >= FORGED.keys()  # the answer is kept as text only
    assert encode(log)


class LeakyRemote:
    """A remote seat whose errors (as httpx and the URL policy write them) quote its URL, its
    host as resolved and, in what it answered, the other seat's URL it learned somehow."""

    kind = "http"

    def __init__(self, url: str, other: str):
        self.name, self.url, self.other = "leaky", url, other

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        words = f"{self.url} ({self.url.split('//')[1].split(':')[0].upper()} is 198.51.100.4)"
        detail = fault(FaultCode.CONNECTION_FAILED, exc="ConnectError", why=words)
        return Outcome(None, "connection_error", detail, f"<html>{self.url} {self.other}</html>", 1, None, NO_SLOT)

    def notify(self, body: bytes) -> SlotUse:
        return NO_SLOT

    def close(self) -> None:
        return None


class Quiet(LocalPlayer):
    kind = "http"

    def __init__(self, url: str):
        super().__init__(SAMPLE_BOTS["greedy"](seed=1), "quiet")
        self.url = url


def test_a_log_without_urls_names_no_seat_endpoint_nor_address():
    a, b = "http://alice-secret.example:8123/decide", "http://bob-hidden.example:9/x"
    log = Match(
        [LeakyRemote(a, b), Quiet(b)],
        MatchConfig("million_doubt", seed=3, games=2, match_id="leak", max_faults=2, record_urls=False),
    ).play()
    text = encode(log).decode()
    assert log["faults"] and all(URL_BLANK in f["detail"] and URL_BLANK in f["received"] for f in log["faults"])
    # the port with its colon: a bare "8123" also turns up in a timing such as 0.81234 ms
    for needle in ("alice-secret", "ALICE-SECRET", "bob-hidden", ":8123", "198.51.100.4"):
        assert needle not in text, needle
    assert [p["url"] for p in log["players"]] == [None, None]
