"""Worked examples of protocol v1 (used by docs/protocol.md; regenerate, never hand-edit:
``python -m bots_sdk.examples --write docs/protocol.md``; a test checks they match).

``python -m bots_sdk.examples`` prints them as JSON: Million Doubt, JDF, and the start of a
Trump Millionaire deal (exchange, rate, and a play under TM-5). Each example is a real decision request
built by :func:`bots_sdk.protocol.build_request` from a seeded game, with the answer of a
sample bot, the signature headers for the secret ``"example-secret"`` at a fixed time, and
the request exactly as sent (compact JSON).
"""

from __future__ import annotations

import json
from typing import Any

import engine
from bots_sdk import protocol
from bots_sdk.bot import Bot
from bots_sdk.samples import GreedyBot, HeuristicBot, RandomBot
from engine.cards import JOKER, parse_cards
from engine.timebank import TimeRules
from engine.trump_millionaire import forbidden_finish

SECRET = "example-secret"
TIMESTAMP = 1_800_000_000
RULES = TimeRules()
#: Longest line of the pretty-printed examples in docs/protocol.md (characters).
PRETTY_WIDTH = 96


def _example(
    g: engine.Game,
    seat: int,
    remaining_ms: int,
    bot: Bot,
    match_id: str,
    game: int = 0,
    banks_ms: list[int] | None = None,
) -> dict[str, Any]:
    """``banks_ms``: every seat's bank (the asked seat's is ``remaining_ms``); None: the others
    have not answered yet in this deal or game."""
    req = protocol.build_request(
        g, seat, match_id=match_id, game=game, time_rules=RULES, remaining_ms=remaining_ms, banks_ms=banks_ms
    )
    body = protocol.dumps(req)
    headers = protocol.sign(SECRET, body, now=TIMESTAMP)
    answer = bot.decide(json.loads(body))
    return {"headers": headers, "request": json.loads(body), "response": answer}


def million_doubt_turn() -> dict[str, Any]:
    """A play decision facing the opponent's play with a face-down card (let through)."""
    for seed in range(1, 500):
        g = engine.new_game("million_doubt", {}, seed)
        bots = [RandomBot(seed=seed), RandomBot(seed=seed + 1, bluff_rate=0.5, doubt_rate=0.0)]
        while not g.over:
            d = g.decision()
            assert d is not None
            obs = g.observation(d.seat)
            if (
                d.kind == "play"
                and obs["field"]
                and len(obs["history"]) >= 6
                and any(isinstance(p.get("face_down"), int) for p in obs["field"])
            ):
                return _example(g, d.seat, 51_230, GreedyBot(), "example-md-1", banks_ms=[51_230, 47_910])
            req = json.loads(
                protocol.dumps(
                    protocol.build_request(g, d.seat, match_id="x", game=0, time_rules=RULES, remaining_ms=1)
                )
            )
            g.apply(d.seat, bots[d.seat].decide(req))
    raise RuntimeError("no example found")


def jdf_turn() -> dict[str, Any]:
    """A play decision following a play in the first game of a JDF match."""
    g = engine.new_game("jdf", {}, 7)
    bot = GreedyBot()
    while True:
        d = g.decision()
        assert d is not None
        obs = g.observation(d.seat)
        if d.kind == "play" and len(obs["field"]) >= 2:
            return _example(g, d.seat, 58_400, GreedyBot(), "example-jdf-1", banks_ms=[55_120, 60_000, 58_400, 57_300])
        req = json.loads(
            protocol.dumps(protocol.build_request(g, d.seat, match_id="x", game=0, time_rules=RULES, remaining_ms=1))
        )
        g.apply(d.seat, bot.decide(req))


def _request_now(g: engine.Game) -> dict[str, Any]:
    d = g.decision()
    assert d is not None
    req = protocol.build_request(g, d.seat, match_id="x", game=0, time_rules=RULES, remaining_ms=1)
    request: dict[str, Any] = json.loads(protocol.dumps(req))
    return request


def _forbidden_last_card(obs: dict[str, Any]) -> bool:
    """TM-5: the seat holds one card, and it may not be the last (joker, 8, 2; 3 in revolution)."""
    hand = parse_cards(obs["hand"])
    nat = [c for c in hand if c != JOKER]
    return len(hand) == 1 and forbidden_finish(nat, len(hand) - len(nat), obs["revolution"])


def trump_millionaire_deal() -> dict[str, Any]:
    """The second deal of a Trump Millionaire game: the Millionaire's ``exchange`` (TM-3,
    accepted: a weak hand), its ``rate``, and later in the deal a ``play`` decision of a seat
    whose one card may not be the last (TM-5: only ``pass`` is listed). Keys
    ``trump_millionaire_exchange``, ``trump_millionaire_rate``, ``trump_millionaire_play``."""
    for seed in range(1, 500):
        g = engine.new_game("trump_millionaire", {}, seed)
        bots = [HeuristicBot(seed=seed + s) for s in range(4)]
        d = g.decision()
        while d is not None and d.kind != "exchange":
            g.apply(d.seat, bots[d.seat].decide(_request_now(g)))
            d = g.decision()
        if d is None or not bots[d.seat].decide(_request_now(g))["accept"]:
            continue
        out = {}
        for kind, remaining_ms in (("exchange", 60_000), ("rate", 59_730)):
            d = g.decision()
            assert d is not None and d.kind == kind, (d, kind)
            out[f"trump_millionaire_{kind}"] = ex = _example(g, d.seat, remaining_ms, bots[d.seat], "example-tm-1")
            g.apply(d.seat, ex["response"])
        while d is not None and g.unit_index == 1:
            obs = g.observation(d.seat)
            if d.kind == "play" and obs["field"] and _forbidden_last_card(obs):
                out["trump_millionaire_play"] = _example(
                    g, d.seat, 41_120, bots[d.seat], "example-tm-1", banks_ms=[52_480, 38_950, 60_000, 47_300]
                )
                return out
            g.apply(d.seat, bots[d.seat].decide(_request_now(g)))
            d = g.decision()
    raise RuntimeError("no example found")


def all_examples() -> dict[str, Any]:
    return {"million_doubt": million_doubt_turn(), "jdf": jdf_turn(), **trump_millionaire_deal()}


def _pretty(value: Any, indent: int = 0, key: str = "") -> str:
    """JSON indented by 2, each object or list on one line when it fits in PRETTY_WIDTH
    (``key``: the ``"key": `` text before it on its line)."""
    flat = json.dumps(value)
    if not isinstance(value, (dict, list)) or not value or indent + len(key) + len(flat) <= PRETTY_WIDTH:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {_pretty(v, indent + 2, json.dumps(k) + ': ')}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    return "[\n" + ",\n".join(pad + _pretty(v, indent + 2) for v in value) + "\n" + " " * indent + "]"


def _block(ex: dict[str, Any]) -> str:
    headers = "\n".join(f"{k}: {v}" for k, v in ex["headers"].items())
    return (
        "Headers (secret `example-secret`, time 1800000000):\n\n```http\n"
        f"POST /bot HTTP/1.1\n{headers}\n```\n\n"
        "Request body (pretty-printed here; on the wire it is compact JSON, and the signature "
        "is computed over those exact bytes):\n\n```json\n"
        f"{_pretty(ex['request'])}\n```\n\n"
        f"Response (`200`, `Content-Type: application/json`):\n\n```json\n"
        f"{json.dumps(ex['response'])}\n```\n"
    )


def render(text: str, examples: dict[str, Any] | None = None) -> str:
    """``text`` with every ``<!-- example:NAME -->...<!-- /example -->`` block regenerated."""
    examples = examples or all_examples()
    for name, ex in examples.items():
        start, end = f"<!-- example:{name} -->", "<!-- /example -->"
        i = text.index(start) + len(start)
        j = text.index(end, i)
        text = text[:i] + "\n" + _block(ex) + text[j:]
    return text


if __name__ == "__main__":  # pragma: no cover
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        from pathlib import Path

        path = Path(sys.argv[2])
        path.write_text(render(path.read_text()))
    else:
        print(json.dumps(all_examples(), indent=2))
