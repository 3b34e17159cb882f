"""The shape of the arena's facts about a rule set (:class:`ArenaRuleSet`) and the records
they hold: the bot check's positions (:class:`Probe`), a deal as the par sees it
(:class:`Deal`), the demo's size (:class:`DemoSize`). Pure: the engine only."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from engine.options import Options


class Probe(NamedTuple):
    """A fixed position of the bot check, the checked bot at seat 0 (docs/operations.md,
    "Conformance game", step 4).

    Attributes:
        name: the position's name in the outcome (``games[].probe``, ``faults[].probe``).
        options: the rule set's options (the local rules the position needs: LR-5, LR-6).
        setup: the scenario ``setup`` (:func:`engine.from_setup`): hands, leader, state.
        liars: seats played by the check's face-down liar (``arena.conformance.FaceDownLiar``;
            the others: the greedy sample bot).
        opening: ``(seat, action)`` moves the check itself answers, in order, before any
            request reaches a bot: the position a bot is then asked in is reached whatever it
            plays (a 7 just played: ``give``; a doubt just lost: ``penalty``). The opening's
            decisions of seat 0 are not sent to the bot nor counted as asked.
        forces: the decision kinds the position asks the checked bot whatever it answers.
    """

    name: str
    options: dict[str, Any]
    setup: dict[str, Any]
    liars: tuple[int, ...] = ()
    opening: tuple[tuple[int, dict[str, Any]], ...] = ()
    forces: tuple[str, ...] = ()


@dataclass(frozen=True)
class Deal:
    """One deal of a game as chance drew it, with the position it starts from (``arena.par``).

    Attributes:
        hands: card codes per seat, as dealt (before any exchange).
        aside: the cards out of the deal in the engine's order (TM set-aside cards, from
            which an exchange draws; JDF blind cards; empty in Million Doubt).
        leader: the seat that leads (or, with ``state``, the position's leader).
        state: None when chance alone decided the start (the leader included); otherwise the
            position earlier play made, as a ``setup.state`` of :func:`engine.from_setup`
            (TM ``{"millionaire"}``, JDF ``{"game_in_set", "previous_ranks"}``).
        bonus: JDF: the set bonus the first place takes in this game (JDF-13), else 0.
    """

    hands: tuple[tuple[int, ...], ...]
    aside: tuple[int, ...]
    leader: int
    state: Mapping[str, Any] | None
    bonus: int = 0


@dataclass(frozen=True)
class DemoSize:
    """The demo tournament of a rule set (``arena demo``): ``games_per_pairing``, its
    ``options`` and how to say it (``about``)."""

    games_per_pairing: int
    options: dict[str, Any]
    about: str


@dataclass(frozen=True)
class ArenaRuleSet:
    """The arena's facts about one rule set, registered against its id (``arena.rulesets``).

    Attributes:
        name: the rule-set id (a key of ``engine.RULESETS``; the engine's facts are there).
        decisions_per_unit: upper estimate of the decisions of one unit of play (a MD game, a
            TM deal, a JDF game): the match's time bound (``arena.limits``).
        match_units: ``match_units(options, games)``: the units of a match of ``games``
            engine games with these (validated) options (TM deals are an estimate).
        unit_bound: ``unit_bound(limit, units, given)``: ``(field, message)`` of the refusal
            when a match's units exceed ``limit`` per engine game (``given``: the options the
            organizer gave), or None when the rule set's units cannot exceed it.
        default_games: the engine games of a tournament's default match (MD 2, the others 1).
        settle_delta: ``settle_delta(options)``: the score difference per game the sequential
            test looks for when the organizer gives none (``arena.sequential``).
        par_weight: the par's weight (``arena.par``, docs/ranking.md "The weight").
        par_deal: ``par_deal(game)``: the :class:`Deal` the engine state has just dealt (the
            par's unit: a MD game, a TM deal, a JDF game).
        par_scores: ``par_scores(game, seats, bonus)``: the finished unit's score per seat
            (MD-17 points, TM-7 points, JDF-13 rank points plus ``bonus`` to first place).
        check_options: the options of the check's random short match.
        check_games: the engine games of the check's random short match.
        probes: the check's fixed positions (each asks the kinds of its ``forces``).
        demo: the demo tournament's size.
    """

    name: str
    decisions_per_unit: int
    match_units: Callable[[Options, int], int]
    unit_bound: Callable[[int, int, Mapping[str, Any]], tuple[str, str]] | None
    default_games: int
    settle_delta: Callable[[Mapping[str, Any]], float]
    par_weight: float
    par_deal: Callable[[Any], Deal]
    par_scores: Callable[[Any, int, int], list[float]]
    check_options: dict[str, Any]
    check_games: int
    probes: tuple[Probe, ...]
    demo: DemoSize = field(default_factory=lambda: DemoSize(1, {}, "one game per table"))


def one_point(options: Mapping[str, Any]) -> float:
    """A ``settle_delta`` of 1 point per game."""
    return 1.0


def dealt(g: Any) -> tuple[tuple[tuple[int, ...], ...], int]:
    """``(hands, leader)`` of the deal ``g`` has just dealt (no action of it taken yet)."""
    d = g.decision()
    return tuple(tuple(h) for h in g.hands), d.seat if d is not None else 0


def plain_deal(g: Any) -> Deal:
    """The deal ``g`` has just dealt, chance alone deciding its start (no aside, no state)."""
    hands, leader = dealt(g)
    return Deal(hands, (), leader, None)


def result_scores(result: Any, seats: int) -> list[float]:
    """The ``scores`` of an engine result (``Game.result``, ``Game.unit_result``) per seat."""
    if result is None:  # pragma: no cover - a rollout always ends its unit
        return [0.0] * seats
    return [float(result["scores"][str(s)]) for s in range(seats)]


#: Both local rules of the give and discard positions (LR-5, LR-6): a bot is checked with them together.
_LOCAL = {"seven_pass": True, "ten_discard": True}
_WEAK = {"1": ["3C", "4C", "5C", "6C", "3D"], "2": ["4D", "5D", "6D", "3H", "4H"], "3": ["5H", "6H", "4S", "5S", "6S"]}
_SEVENS_TENS = ["7S", "7H", "TS", "TH"]

#: The give and discard positions of the rule sets with local rules (Trump Millionaire, JDF):
#: the bot's seat leads 7S (LR-5) and is asked give at once, or leads TS (LR-6) and is asked discard.
GIVE_DISCARD = (
    Probe(
        "give",
        _LOCAL,
        {"hands": {"0": _SEVENS_TENS, **_WEAK}, "leader": 0},
        opening=((0, {"type": "play", "cards": ["7S"]}),),
        forces=("give", "play"),
    ),
    Probe(
        "discard",
        _LOCAL,
        {"hands": {"0": _SEVENS_TENS, **_WEAK}, "leader": 0},
        opening=((0, {"type": "play", "cards": ["TS"]}),),
        forces=("discard", "play"),
    ),
)
