"""Worked examples of protocol v1 (used by docs/protocol.md; regenerate, never hand-edit).

``python -m bots_sdk.examples`` prints them as JSON. Each example is a real decision request
built by :func:`bots_sdk.protocol.build_request` from a seeded game, with the answer of a
sample bot, the signature headers for the secret ``"example-secret"`` at a fixed time, and
the request exactly as sent (compact JSON).
"""

from __future__ import annotations

import json

import engine
from bots_sdk import protocol
from bots_sdk.samples import GreedyBot, RandomBot
from engine.timebank import TimeRules

SECRET = "example-secret"
TIMESTAMP = 1_800_000_000
RULES = TimeRules()


def _example(g, seat, remaining_ms, bot, match_id, game=0) -> dict:
    req = protocol.build_request(g, seat, match_id=match_id, game=game, time_rules=RULES, remaining_ms=remaining_ms)
    body = protocol.dumps(req)
    headers = protocol.sign(SECRET, body, now=TIMESTAMP)
    answer = bot.decide(json.loads(body))
    return {"headers": headers, "request": json.loads(body), "response": answer}


def million_doubt_turn() -> dict:
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
                return _example(g, d.seat, 51_230, GreedyBot(), "example-md-1")
            req = json.loads(
                protocol.dumps(
                    protocol.build_request(g, d.seat, match_id="x", game=0, time_rules=RULES, remaining_ms=1)
                )
            )
            g.apply(d.seat, bots[d.seat].decide(req))
    raise RuntimeError("no example found")


def jdf_turn() -> dict:
    """A play decision following a play in the first game of a JDF match."""
    g = engine.new_game("jdf", {}, 7)
    bot = GreedyBot()
    while True:
        d = g.decision()
        assert d is not None
        obs = g.observation(d.seat)
        if d.kind == "play" and len(obs["field"]) >= 2:
            return _example(g, d.seat, 58_400, GreedyBot(), "example-jdf-1")
        req = json.loads(
            protocol.dumps(protocol.build_request(g, d.seat, match_id="x", game=0, time_rules=RULES, remaining_ms=1))
        )
        g.apply(d.seat, bot.decide(req))


def all_examples() -> dict:
    return {"million_doubt": million_doubt_turn(), "jdf": jdf_turn()}


def _block(ex: dict) -> str:
    headers = "\n".join(f"{k}: {v}" for k, v in ex["headers"].items())
    return (
        "Headers (secret `example-secret`, time 1800000000):\n\n```http\n"
        f"POST /bot HTTP/1.1\n{headers}\n```\n\n"
        "Request body (pretty-printed here; on the wire it is compact JSON, and the signature "
        "is computed over those exact bytes):\n\n```json\n"
        f"{json.dumps(ex['request'], indent=2)}\n```\n\n"
        f"Response (`200`, `Content-Type: application/json`):\n\n```json\n"
        f"{json.dumps(ex['response'])}\n```\n"
    )


def render(text: str, examples: dict | None = None) -> str:
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
