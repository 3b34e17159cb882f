"""The results of a unit and of its deals/games (the end of a game and its scores), seats keyed
by strings (``"0"``..) as the wire does, before and after JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict


class Result(TypedDict):
    """The result of a whole unit (:meth:`Game.result`); seats are string keys (``"0"``).

    Every rule set gives ``winner`` (MD: the winning seat; TM, JDF: the seat of place 1, the
    lowest on a tie), ``scores`` (MD-17 game score; TM: totals; JDF: match totals, or the
    game's points for a single game from a setup) and ``ranks`` (places 1.., equal totals
    share the place: TM-1, JDF-12/13, FAULT-2). Rule-set keys: MD ``burst`` and ``forfeit``
    (seat or None); TM ``totals``, ``deals`` (:class:`DealResult` list) and ``retired``;
    JDF ``totals`` and ``games`` (:class:`GameResult` list). Key order is fixed per rule set
    (the match logs store it).
    """

    winner: int | None
    scores: dict[str, int]
    ranks: dict[str, int]
    burst: NotRequired[int | None]
    forfeit: NotRequired[int | None]
    totals: NotRequired[dict[str, int]]
    deals: NotRequired[list[DealResult]]
    retired: NotRequired[list[int]]
    games: NotRequired[list[GameResult]]


class DealResult(TypedDict):
    """One Trump Millionaire deal (TM-7, TM-6 void deal): seats are string keys."""

    deal: int
    void: bool
    winner: int | None
    scores: dict[str, int]
    rate: int


class GameResult(TypedDict):
    """One JDF game (JDF-12, JDF-13): places, points (set bonus apart), who fouled, fell,
    retired; seats are string keys."""

    set: int
    game_in_set: int
    game: int
    ranks: dict[str, int]
    scores: dict[str, int]
    set_bonus: dict[str, int]
    fouls: list[int]
    fallen: int | None
    retired: list[int]


#: The result of the unit a scenario's ``over`` refers to (MD game, TM deal, JDF game).
UnitResult = Result | DealResult | GameResult


def seat_keys(values: Mapping[int, int] | Sequence[int]) -> dict[str, int]:
    """``{seat: v}`` or a per-seat list as the wire's string-keyed map ``{"0": v, ...}``."""
    if isinstance(values, Mapping):
        return {str(s): v for s, v in values.items()}
    return {str(s): v for s, v in enumerate(values)}
