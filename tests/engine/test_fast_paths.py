"""The engine's fast paths give the states its checked paths give: a play pushed as generated
(``Game.push``) reads as the judge reads it and reaches the state ``apply`` reaches; a copy
(``Game.copy``, with or without log) plays on like the original; a game without log plays the
same game. These run in whichever build is loaded (``ARENA_ENGINE``: pure or compiled)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

import engine
from engine import plays
from engine.actions import DOUBT, PASS, PlayAction, RateAction, to_wire
from engine.forms import choose, generated_reading, split
from engine.game import InvalidAction
from engine.jdf import Jdf
from engine.plays import face_up_plays
from engine.selfplay import random_action, random_game

LOCAL_RULES_ON = {name: True for name in engine.LOCAL_RULES}
CASES = [
    ("million_doubt", None),
    ("trump_millionaire", None),
    ("trump_millionaire", LOCAL_RULES_ON),
    ("jdf", None),
    ("jdf", LOCAL_RULES_ON),
]
IDS = ["md", "tm", "tm-lr", "jdf", "jdf-lr"]


def _options(ruleset: str, options: dict[str, Any] | None) -> dict[str, Any]:
    out = dict(options or {})
    if ruleset == "trump_millionaire":
        out["target_score"] = 30
    elif ruleset == "jdf":
        out["sets"] = 1
    return out


@pytest.mark.parametrize(("ruleset", "options"), CASES, ids=IDS)
def test_every_generated_play_reads_as_the_judge_reads_it_c3_c4(ruleset, options):
    plays_seen = 0
    for seed in range(30 if ruleset == "million_doubt" else 3):
        g = engine.new_game(ruleset, _options(ruleset, options), seed)
        rng = random.Random(seed)
        while not g.over:
            d = g.decision()
            if d.kind == "play" and not d.info.get("stuck"):
                for cards, declared in g.face_up_plays(d.seat):
                    nat, jk = split(cards)
                    plays_seen += 1
                    if ruleset == "million_doubt":
                        judged = choose(g._judge(cards, [], declared, nat, jk).accepted, g.reversed_order)
                        assert generated_reading(nat, jk, declared) == judged, (cards, declared)
                    else:
                        fast = g._generated(PlayAction(cards, [], declared))
                        slow = g._judge(d.seat, cards, nat, jk, declared)
                        assert (fast.reading, fast.kind, fast.rank, fast.is_return) == (
                            slow.reading,
                            slow.kind,
                            slow.rank,
                            slow.is_return,
                        ), (cards, declared)
            seat, action = random_action(g, rng)
            g.apply(seat, action)
    assert plays_seen > 500


def test_accepts_face_down_decides_as_the_judge_md3():
    checked = accepted = 0
    for seed in range(40):
        g = engine.new_game("million_doubt", None, seed)
        rng = random.Random(seed)
        while not g.over:
            d = g.decision()
            if d.kind == "play":
                hand = g.hands[d.seat]
                for _ in range(12):
                    k = rng.randint(1, len(hand))
                    cards = rng.sample(hand, k)
                    n_down = rng.randint(1, k)
                    down, up = cards[:n_down], cards[n_down:]
                    fast = g.accepts_face_down(up, len(down))
                    assert fast == g.is_legal_play(d.seat, PlayAction(up + down, down, None)), (up, down)
                    assert fast == g.is_legal(d.seat, to_wire(PlayAction(up + down, down, None)))
                    checked += 1
                    accepted += fast
            g.apply(*random_action(g, rng))
    assert checked > 2000 and 0.1 < accepted / checked < 0.9


def _typed(g: engine.Game, seat: int, action: dict[str, Any]) -> Any:
    """The typed action of a wire action, by the game's own parser."""
    return g._dispatch[action["type"]][0](g, seat, action)


@pytest.mark.parametrize(("ruleset", "options"), CASES, ids=IDS)
def test_push_reaches_the_state_apply_reaches_and_logs_it_alike(ruleset, options):
    for seed in range(4):
        opts = _options(ruleset, options)
        a, b = engine.new_game(ruleset, opts, seed), engine.new_game(ruleset, opts, seed)
        rng = random.Random(seed)
        while not a.over:
            seat, action = random_action(a, rng)
            a.apply(seat, action)
            b.push(seat, _typed(b, seat, action))
            assert b.decision() == a.decision()
            assert [b.observation(s) for s in range(b.seats)] == [a.observation(s) for s in range(a.seats)]
        assert b.log() == engine.replay(b.log()).log()
        assert b.result() == a.result()


def test_push_refuses_what_does_not_answer_the_decision_c12():
    g = engine.from_setup("million_doubt", None, {"hands": {"0": ["5H", "6H"], "1": ["9S", "KD"]}})
    for seat, action in [(1, PASS), (0, DOUBT), (0, RateAction(1)), (0, PASS)]:
        with pytest.raises(InvalidAction) as e:
            g.push(seat, action)
        assert e.value.rule in ("C-12", "C-6")
    with pytest.raises(TypeError):  # a wire action goes to apply()
        g.push(0, {"type": "pass"})  # type: ignore[arg-type]
    assert g.decision() == engine.Decision(0, "play", {"lead": True}) and g.actions == []


def _play(cards: str, face_down: str, jokers: list[int] | None = None) -> PlayAction:
    return PlayAction(engine.parse_cards(cards.split()), engine.parse_cards(face_down.split()), jokers)


@pytest.mark.parametrize(
    ("ruleset", "play", "rule"),
    [
        ("million_doubt", _play("7S", "7S"), "C-12"),  # not held
        ("million_doubt", _play("5H", "6H"), "MD-2"),  # a face-down card not among the cards
        ("million_doubt", _play("5H JK", "5H", [2, 2]), "C-4"),  # two ranks for one face-up joker
        ("trump_millionaire", _play("5H", "5H"), "MD-2"),  # no face-down play here
    ],
)
def test_a_pushed_face_down_play_is_checked_as_apply_checks_it_md2(ruleset, play, rule):
    hands = {"0": ["5H", "6H", "JK"], "1": ["9S", "KD"], "2": ["3S"], "3": ["4S"]}
    g = engine.from_setup(ruleset, None, {"hands": {s: h for s, h in hands.items() if int(s) < engine.SEATS[ruleset]}})
    with pytest.raises(InvalidAction) as e:
        g.push(0, play)
    assert e.value.rule == rule
    with pytest.raises(InvalidAction) as e2:
        g.apply(0, to_wire(play))
    assert e2.value.rule == rule
    assert g.actions == [] and sorted(g.hands[0]) == sorted(engine.parse_cards(hands["0"]))


@pytest.mark.parametrize(("ruleset", "options"), CASES, ids=IDS)
@pytest.mark.parametrize("log", [True, False], ids=["log", "no-log"])
def test_a_copy_plays_on_like_the_original_and_leaves_it_alone(ruleset, options, log):
    opts = _options(ruleset, options)
    for seed in range(3):
        g = engine.new_game(ruleset, opts, seed)
        rng = random.Random(seed)
        for _ in range(40 + 25 * seed):  # into the game, a deal or two in
            if g.over:
                break
            g.apply(*random_action(g, rng))
        if g.over:
            continue
        before = (g.log(), [g.observation(s) for s in range(g.seats)], g.rng.getstate())
        c = g.copy(log=log)
        assert c.logged is log and type(c) is type(g)
        random_game(c, random.Random(99))
        assert (g.log(), [g.observation(s) for s in range(g.seats)], g.rng.getstate()) == before  # untouched
        random_game(g, random.Random(99))
        assert c.result() == g.result() and c.hands == g.hands and c.discards == g.discards
        if log:
            assert c.log() == g.log()


@pytest.mark.parametrize(("ruleset", "options"), CASES, ids=IDS)
def test_a_game_without_log_plays_the_same_game(ruleset, options):
    opts = _options(ruleset, options)
    for seed in range(3):
        a, b = engine.new_game(ruleset, opts, seed), engine.new_game(ruleset, opts, seed, log=False)
        assert random_game(a, random.Random(seed)) == random_game(b, random.Random(seed))
        assert b.result() == a.result() and b.unit_count == a.unit_count
        assert (b.actions, b.events) == ([], [])
    for read in (b.log, lambda: b.observation(0), lambda: b.history(0)):
        with pytest.raises(RuntimeError, match="keeps no log"):
            read()


@pytest.mark.parametrize(("ruleset", "options"), CASES[2:], ids=IDS[2:])
def test_the_random_player_picks_as_random_action_gives_and_discards_included_lr5_jdf4(ruleset, options):
    opts = _options(ruleset, options)
    choices = 0
    for seed in range(3):
        a, b = engine.new_game(ruleset, opts, seed), engine.new_game(ruleset, opts, seed)
        rng = random.Random(seed)
        while not a.over:
            d = a.decision()
            if d.kind in ("give", "discard"):
                listed = [x["cards"] for x in a.legal_actions(d.seat)]
                assert [engine.format_cards(c) for c in a.card_choices(d.seat)] == listed
                choices += 1
            else:
                assert a.card_choices(d.seat) == []
            a.apply(*random_action(a, rng, 0.0))
        assert random_game(b, random.Random(seed)) == len(a.log()["actions"])
        assert b.log()["actions"] == a.log()["actions"] and b.result() == a.result()
    assert choices > 5


def test_the_stairs_of_a_suit_are_the_same_from_the_cache_and_it_stays_bounded_c3():
    hand = engine.parse_cards(["3S", "4S", "6S", "7S", "8S", "JK", "9H", "TH", "JH", "KD"])
    first = face_up_plays(hand, 0, (), None, False, None, None)
    assert first == face_up_plays(hand, 0, (), None, False, None, None)  # from the cache
    for present in range(1, 1 << 13):  # every mask of a suit, two jokers: 8191 entries, 640k stairs
        plays._suit_stairs(1, present, 2)
        if present % 256 == 0:
            assert plays._STAIRS_HELD[0] == sum(len(x) for x in plays._STAIRS.values()) <= plays._STAIRS_KEPT
    assert face_up_plays(hand, 0, (), None, False, None, None) == first
    stairs = [p for p in first if len(p[0]) >= 3 and len({c & 3 for c in p[0] if c != 52}) == 1]
    assert stairs[:3] == [
        (engine.parse_cards(["3S", "4S", "JK"]), [2]),
        (engine.parse_cards(["3S", "4S", "6S", "JK"]), [2]),
        (engine.parse_cards(["3S", "4S", "6S", "7S", "JK"]), [2]),
    ]


class Annotated(Jdf):
    """A Python subclass of a rule set with an attribute of its own."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.notes: list[str] = ["dealt"]


def test_a_copy_holds_a_copy_of_a_python_subclass_attributes():
    g = Annotated(engine.make_options("jdf", None), 5, None)
    c = g.copy()
    assert type(c) is Annotated and c.notes == ["dealt"] and c.notes is not g.notes
    c.notes.append("copied")
    assert g.notes == ["dealt"]
    d = g.decision()
    c.push(d.seat, PlayAction(*c.face_up_plays(d.seat)[0][:1], [], c.face_up_plays(d.seat)[0][1]))
    assert g.decision() == d and len(c.hands[d.seat]) < len(g.hands[d.seat])


class NoSpadeFinish(Jdf):
    """A Python subclass that refuses every finish holding a spade (a TM-5-like hook)."""

    def _finish_refused(self, nat: Sequence[int], jokers: int) -> bool:
        return any(c & 3 == 0 for c in nat)


def test_the_play_generator_asks_a_finish_hook_only_a_class_that_overrides_it_tm5():
    assert type(engine.new_game("trump_millionaire"))._refusing_class
    assert not type(engine.new_game("jdf"))._refusing_class
    assert not type(engine.new_game("million_doubt"))._refusing_class
    setup = {"hands": {"0": ["5S"], "1": ["6H", "7H"], "2": ["8D", "9D"], "3": ["TC", "JC"]}, "leader": 0}
    plain = engine.from_setup("jdf", None, setup)
    assert plain.face_up_plays(0) == [([engine.parse_card("5S")], None)]
    hooked = NoSpadeFinish(engine.make_options("jdf", None), None, plain.setup)
    assert NoSpadeFinish._refusing_class and hooked.face_up_plays(0) == []
    assert hooked.copy().face_up_plays(0) == []
