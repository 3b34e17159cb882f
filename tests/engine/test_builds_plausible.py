"""The pure and the compiled build judge a bot's *plausible* wire actions alike (ACT, C-3..C-12,
MD-2, TM-3, TM-5, JDF-4, LR-3..LR-6): its own cards (drawn, repeated, with jokers declaring
random ranks, face-down subsets), under every play type, in states along games with the local
rules on and off. Compared: the refusal's class and rule id, and the state after an accepted
action (hands, the decision, every seat's observation); and, at each state, the legal actions
in their order. (tests/engine/test_builds.py compares junk actions and the last log line.)"""

from __future__ import annotations

import json

import pytest

from tests.engine.test_builds import in_both_builds

pytestmark = pytest.mark.slow

PLAUSIBLE = """
import hashlib, json, random
import engine
from engine.cards import CARD_NAMES, RANKS
from engine.selfplay import random_action

def state(g):
    return [sorted(h) for h in g.hands], repr(g.decision()), [g.observation(s) for s in range(g.seats)]

h, counts = hashlib.sha256(), {}
for ruleset in engine.RULESETS:
    for seed in range(3):
        local = ruleset != "million_doubt"
        options = {n: (seed + i) % 2 == 1 for i, n in enumerate(engine.LOCAL_RULES)} if local else None
        g = engine.new_game(ruleset, options, seed)
        rng = random.Random(seed * 7919 + 1)
        for step in range(300):
            if g.over:
                break
            d = g.decision()
            hand = list(g.hands[d.seat])
            h.update(json.dumps(list(g.legal_actions(d.seat)), sort_keys=True).encode())
            for _ in range(12):
                k = rng.randint(1, min(6, max(1, len(hand))))
                if rng.random() < 0.2:  # repeated cards
                    pick = [rng.choice(hand) for _ in range(k)]
                else:
                    pick = rng.sample(hand, min(k, len(hand)))
                names = [CARD_NAMES[c] for c in pick] + (["JK"] if rng.random() < 0.15 else [])
                kind = rng.choice(["play", "play", "play", "give", "discard", "penalty", d.kind])
                a = {"type": kind, "cards": names}
                jk = names.count("JK")
                if jk and rng.random() < 0.8:
                    a["jokers"] = [rng.choice(RANKS) for _ in range(rng.choice([jk, jk, jk - 1, jk + 1]))]
                if rng.random() < 0.15:
                    a["face_down"] = [CARD_NAMES[c] for c in rng.sample(hand, min(len(hand), rng.randint(1, 4)))]
                c = g.copy()
                try:
                    c.apply(d.seat, a)
                    row = ["ok", a, state(c)]
                except engine.InvalidAction as e:
                    row = ["refused", a, e.rule, str(e), state(c) == state(g)]
                except Exception as e:
                    row = ["crash", a, type(e).__name__, str(e)]
                counts[row[0]] = counts.get(row[0], 0) + 1
                h.update(json.dumps(row, sort_keys=True).encode())
            g.apply(*random_action(g, rng))
print(json.dumps([h.hexdigest(), counts]))
"""


def test_both_builds_judge_plausible_actions_alike():
    outs = {build: json.loads(out) for build, out in in_both_builds(PLAUSIBLE).items()}
    digest, counts = outs["pure"]
    assert "crash" not in counts, counts
    assert counts.get("ok", 0) > 300 and counts.get("refused", 0) > 3000, counts
    assert outs["compiled"] == outs["pure"]
