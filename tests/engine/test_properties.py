"""Property tests over many random games (hypothesis, derandomized = seeded).

For every rule set: games terminate; the 54 cards are conserved at every step (C-1); no
observation ever holds a card its seat may not know (C-11); the log replays to the same
state and result; scores add up (MD-17 zero-sum, TM-7 zero-sum per deal, JDF-13 3+2+1+0 per
game plus the set bonus). The fast legal-play generator agrees with a brute-force one.
"""

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine.cards import CARD_NAMES, JOKER, full_deck
from engine.forms import split
from engine.game import InvalidAction
from engine.selfplay import random_action
from tests.helpers import examples

CARD_SET = set(CARD_NAMES) - {"JK"}
LOCAL_RULES_ON = {name: True for name in engine.LOCAL_RULES}


def all_cards(g):
    return sorted(
        [c for h in g.hands for c in h] + [c for p in g.field for c in p.cards] + list(g.discards) + list(g.outside)
    )


def strings_in(obj, out):
    if isinstance(obj, str):
        if obj in CARD_SET:
            out.add(engine.parse_card(obj))
    elif isinstance(obj, dict):
        for v in obj.values():
            strings_in(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            strings_in(v, out)
    return out


def brute_force_plays(g, seat):
    """Reference: every sub-multiset of the hand, with every joker declaration, judged by
    the validator (slow: only called on hands of at most 8 cards)."""
    from itertools import combinations, combinations_with_replacement

    hand = sorted(g.hands[seat])
    found = set()
    sizes = [g.count] if g.count else range(1, len(hand) + 1)
    for k in sizes:
        for cards in set(combinations(hand, k)):
            nat, jk = split(list(cards))
            if jk and (len(cards) > jk):
                declarations = [list(d) for d in combinations_with_replacement(range(13), jk)]
            else:
                declarations = [None]
            for declared in declarations:
                try:
                    if g.ruleset == "million_doubt":
                        g._judge(list(cards), [], declared, nat, jk)
                    else:
                        g._judge(seat, list(cards), nat, jk, declared)
                except InvalidAction:
                    continue
                found.add((tuple(cards), tuple(declared or ())))
    return found


class Tracker:
    """What each seat may know, rebuilt independently of the engine's observations."""

    def __init__(self, g):
        self.unit = None
        self.known = None
        self.sync(g)

    def sync(self, g):
        if g.unit_index != self.unit or self.known is None:
            self.unit = g.unit_index
            self.known = [set() for _ in range(g.seats)]
        for s in range(g.seats):
            self.known[s] |= {c for c in g.hands[s] if c != JOKER}

    def public(self, cards):
        for k in self.known:
            k.update(c for c in cards if c != JOKER)

    def before(self, g, seat, action):
        t = action["type"]
        if t == "play":
            cards = engine.parse_cards(action["cards"])
            down = engine.parse_cards(action.get("face_down", []))
            up = list(cards)
            for c in down:
                up.remove(c)
            self.public(up)
        elif t == "doubt":
            self.public([c for p in g.field for c in p.cards])
        elif t == "give":  # the receiver sees what it is given (C-11), even if it then falls
            self.known[g.decision().info["to"]].update(c for c in engine.parse_cards(action["cards"]) if c != JOKER)
        elif t == "discard":
            self.public(engine.parse_cards(action["cards"]))

    def check(self, g):
        if g.over:
            return
        for s in range(g.seats):
            obs = g.observation(s)
            assert sorted(engine.parse_cards(obs["hand"])) == sorted(g.hands[s])
            assert obs["hand_sizes"] == [len(h) for h in g.hands]
            seen = strings_in({k: v for k, v in obs.items() if k != "hand"}, set())
            leaked = seen - self.known[s] - set(g.hands[s])
            assert not leaked, f"seat {s} sees {engine.format_cards(leaked)}"


def play_checked(ruleset, seed, options=None, check_every=1, compare_every=0):
    g = engine.new_game(ruleset, options, seed=seed)
    rng = random.Random(seed)
    tracker = Tracker(g)
    deck = sorted(full_deck())
    steps = 0
    while not g.over:
        d = g.decision()
        if (
            compare_every
            and steps % compare_every == 0
            and d.kind == "play"
            and not d.info.get("stuck")
            and len(g.hands[d.seat]) <= 8
        ):
            fast = {(tuple(sorted(c)), tuple(dcl or ())) for c, dcl in g.face_up_plays(d.seat)}
            assert fast == brute_force_plays(g, d.seat)
        seat, action = random_action(g, rng)
        tracker.before(g, seat, action)
        g.apply(seat, action)
        steps += 1
        assert steps < 200_000, "no termination"
        assert all_cards(g) == deck
        tracker.sync(g)
        if steps % check_every == 0:
            tracker.check(g)
    # replay (through JSON, as stored) reaches the same state and result
    again = engine.replay(json.loads(json.dumps(g.log())))
    assert again.result() == g.result()
    assert json.loads(json.dumps(g.result())) == g.result()  # string seat keys, before JSON too
    assert again.hands == g.hands and again.history(None, 0) == g.history(None, 0)
    return g


@settings(max_examples=examples(1500), derandomize=True, deadline=None)
@given(st.integers(0, 2**31))
def test_million_doubt_random_games(seed):
    g = play_checked("million_doubt", seed, compare_every=3)
    r = g.result()
    assert sum(r["scores"].values()) == 0
    loser = 1 - r["winner"]
    pts = r["scores"][str(r["winner"])]
    assert pts == (11 if r["burst"] is not None else len(g.hands[loser]))
    if r["burst"] is not None:
        assert len(g.hands[r["burst"]]) >= 11


@settings(max_examples=examples(6), derandomize=True, deadline=None)
@given(st.integers(0, 2**31), st.booleans())
def test_trump_millionaire_whole_games(seed, local_rules):
    g = play_checked(
        "trump_millionaire", seed, LOCAL_RULES_ON if local_rules else None, check_every=3, compare_every=11
    )
    r = g.result()
    for deal in r["deals"]:
        assert sum(deal["scores"].values()) == 0  # TM-7 zero-sum
    assert [sum(d["scores"][str(s)] for d in r["deals"]) for s in range(4)] == [r["totals"][str(s)] for s in range(4)]
    assert max(r["totals"].values()) >= 100
    assert len([d for d in r["deals"] if not d["void"]]) >= 1


@settings(max_examples=examples(8), derandomize=True, deadline=None)
@given(st.integers(0, 2**31), st.booleans())
def test_jdf_whole_matches(seed, local_rules):
    g = play_checked("jdf", seed, LOCAL_RULES_ON if local_rules else None, check_every=2, compare_every=7)
    r = g.result()
    assert len(r["games"]) == 12
    for game in r["games"]:
        assert sorted(game["ranks"].values()) == [1, 2, 3, 4]
        assert sum(game["scores"].values()) == 3 + 2 + 1 + 0
    assert sum(sum(gm["set_bonus"].values()) for gm in r["games"]) == 3
    assert sum(r["totals"].values()) == 12 * 6 + 3


@settings(max_examples=examples(60), derandomize=True, deadline=None)
@given(st.sampled_from(list(engine.RULESETS)), st.integers(0, 2**31), st.integers(0, 60), st.booleans())
def test_forfeits_keep_cards_and_replay(ruleset, seed, at, local_rules):
    """FAULT-2 at any decision: the game still ends, cards are kept, the log replays."""
    options = LOCAL_RULES_ON if local_rules and ruleset != "million_doubt" else None
    g = engine.new_game(ruleset, options, seed=seed)
    rng = random.Random(seed)
    for _ in range(at):
        if g.over:
            return
        g.apply(*random_action(g, rng))
    if g.over:
        return
    culprit = g.decision().seat
    g.forfeit(culprit, "timeout")
    steps = 0
    while not g.over:
        seat, action = random_action(g, rng)
        assert seat != culprit or ruleset == "jdf"  # TM: never asked again; JDF: next game
        g.apply(seat, action)
        steps += 1
        assert steps < 200_000
    assert all_cards(g) == sorted(full_deck())
    again = engine.replay(json.loads(json.dumps(g.log())))
    assert again.result() == g.result()
    if ruleset == "million_doubt":
        assert g.result()["scores"][str(culprit)] == -11
    elif ruleset == "trump_millionaire":
        assert g.result()["ranks"][str(culprit)] == 4
