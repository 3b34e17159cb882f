"""The rule-set registry: one :class:`RuleSet` per rule set of docs/rules.md.

Everything that differs between rule sets outside the rules themselves is read here instead
of comparing rule-set ids (``ruleset == MILLION_DOUBT``, ``seats == 2``)::

    >>> import engine
    >>> rs = engine.RULESETS["million_doubt"]
    >>> rs.seats, rs.games_per_match_option, rs.local_rules, rs.lists_every_play
    (2, True, False, False)
    >>> rs.option_class.__name__, rs.game_class.__name__
    ('MillionDoubtOptions', 'MillionDoubt')
    >>> list(engine.RULESETS)
    ['million_doubt', 'trump_millionaire', 'jdf']

``RULESETS`` is a read-only mapping from rule-set id to :class:`RuleSet`, in docs/rules.md order:
iterating it gives the ids, ``name in RULESETS`` checks an id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from engine.decisions import DECISIONS
from engine.game import Game
from engine.jdf import Jdf
from engine.million_doubt import MillionDoubt
from engine.options import (
    JDF,
    MILLION_DOUBT,
    OPTION_CLASSES,
    SEATS,
    TRUMP_MILLIONAIRE,
    LocalRuleOptions,
    Options,
    OptionsError,
    make_options,
)
from engine.trump_millionaire import TrumpMillionaire


@dataclass(frozen=True)
class RuleSet:
    """One rule set: what the engine and its callers need to know about it.

    Attributes:
        name: the rule-set id (``million_doubt``, ``trump_millionaire``, ``jdf``).
        title: its name in docs/rules.md.
        seats: seats at the table (MD-1: 2; TM-2, JDF-1: 4).
        option_class: its :class:`~engine.options.Options` subclass.
        game_class: its :class:`~engine.game.Game` subclass.
        unit: what one engine state (:func:`engine.new_game`) plays: ``"game"`` (MD), ``"game
            of deals"`` (TM-1), ``"match"`` (JDF-1: sets x games).
        games_per_match_option: True when a match of the arena is several engine units whose
            number the tournament sets (``games_per_pairing``; Million Doubt plays duplicate
            pairs, so the number must be even and the seats swap every other game); False
            when one engine unit is the whole match.
        duplicate_pairs: the games of a match come in pairs with the same seed and the seats
            swapped (Million Doubt).
        local_rules: whether the LR options exist (docs/rules.md section LR).
        lists_every_play: whether :meth:`Game.legal_actions` lists every legal action (False
            in Million Doubt: face-down plays are checked, not listed, MD-2).
        decision_kinds: every decision kind a game of it asks (ACT, a subset of
            :data:`engine.game.DECISIONS`, in that order).
        face_down: whether a play may hold face-down cards (MD-2).
        scoring_unit: what :attr:`Game.unit_index` counts inside one engine state, each unit
            scored and its time banks reset (TIME-1): ``"deal"`` (TM-1), ``"game"`` (JDF-1: the
            games of a match, in sets), or None when the state is one unit (MD).
    """

    name: str
    title: str
    seats: int
    option_class: type[Options]
    game_class: type[Game]
    unit: str
    games_per_match_option: bool
    duplicate_pairs: bool
    local_rules: bool
    lists_every_play: bool
    decision_kinds: tuple[str, ...]
    face_down: bool
    scoring_unit: str | None

    def options(self, values: Mapping[str, Any] | Options | None = None) -> Options:
        """Validated options of this rule set (:func:`engine.options.make_options`).

        Raises:
            OptionsError: an unknown option, or a bad type or value.
        """
        return make_options(self.name, values)

    def face_down_rule(self) -> str | None:
        """The MD-2/MD-3 rule of face-down plays in words (for bots), or None when the rule
        set has no face-down play."""
        return MillionDoubt.face_down_rule() if self.face_down else None


def _ruleset(
    name: str,
    title: str,
    game_class: type[Game],
    unit: str,
    games_per_match: bool,
    decision_kinds: tuple[str, ...],
    scoring_unit: str | None,
) -> RuleSet:
    option_class = OPTION_CLASSES[name]
    assert set(decision_kinds) <= set(DECISIONS), name
    return RuleSet(
        name,
        title,
        SEATS[name],
        option_class,
        game_class,
        unit,
        games_per_match,
        games_per_match,
        issubclass(option_class, LocalRuleOptions),
        game_class.LISTS_EVERY_PLAY,
        tuple(k for k in DECISIONS if k in decision_kinds),
        not game_class.LISTS_EVERY_PLAY,  # MD-2: face-down plays are the ones not listed
        scoring_unit,
    )


#: The registry: rule-set id -> :class:`RuleSet`, in docs/rules.md order.
RULESETS: Mapping[str, RuleSet] = MappingProxyType(
    {
        MILLION_DOUBT: _ruleset(
            MILLION_DOUBT,
            "Million Doubt",
            MillionDoubt,
            "game",
            True,
            ("play", "doubt", "penalty"),
            None,
        ),
        TRUMP_MILLIONAIRE: _ruleset(
            TRUMP_MILLIONAIRE,
            "Trump Millionaire",
            TrumpMillionaire,
            "game of deals",
            False,
            ("play", "exchange", "rate", "give", "discard"),
            "deal",
        ),
        JDF: _ruleset(
            JDF,
            "Japan Daifugo Federation official rules",
            Jdf,
            "match",
            False,
            ("play", "give", "discard"),
            "game",
        ),
    }
)


def get_ruleset(name: Any) -> RuleSet:
    """The :class:`RuleSet` of ``name``.

    Raises:
        OptionsError: ``name`` is not a rule-set id.
    """
    rs = RULESETS.get(name) if isinstance(name, str) else None
    if rs is None:
        raise OptionsError(f"unknown rule set {name!r}; known: {', '.join(RULESETS)}")
    return rs


__all__ = ["RuleSet", "RULESETS", "get_ruleset"]
