"""Match sources: where a tournament's matches come from (fastchess's scheduler shape).

A source answers two questions about a tournament, its :class:`Field`: what to play next
(:meth:`MatchSource.first_round` when it starts, :meth:`MatchSource.next_round` when a round's
last match is done) and how much is left (:meth:`MatchSource.total`). The tournament state
machine (:mod:`arena.lifecycle.tournaments`) asks the source of the tournament's ``format``
(:func:`source_for`) and never branches on the format itself. Four sources:

=================== ======================================================================
``round_robin``     :class:`~arena.sources.round_robin.RoundRobin`: one round of the schedule
``until_settled``   :class:`~arena.sources.until_settled.UntilSettled`: rounds until the
                    sequential test settles the top (:mod:`arena.sequential`)
``ladder``          :class:`~arena.sources.ladder.LadderSource`: sets formed tick by tick
                    among the entrants who can play now (:func:`~arena.sources.ladder.form_tables`)
``table``           :class:`~arena.sources.table.TableSource`: the one match of a table where
                    people play (docs/tables.md)
=================== ======================================================================

A source also names its **unit of play** (:attr:`MatchSource.unit`): ``match`` (each game
dealt afresh, :func:`arena.runner.match.default_game_specs`) or ``set`` (one deal played in
every seat rotation, :func:`duplicate_specs`; the set's own seed commitment). Adding a fifth
source (a gauntlet, Swiss) is one class registered in :data:`SOURCES` (docs/architecture.md).
Pure: no database.
"""

from __future__ import annotations

from collections.abc import Mapping

from arena.sources.base import (
    FINISHED,
    MATCH,
    SET,
    WAIT,
    Entrant,
    Field,
    MatchSource,
    Next,
    StoredGames,
    duplicate_specs,
)
from arena.sources.ladder import LadderSource
from arena.sources.round_robin import RoundRobin
from arena.sources.table import TableSource, table_match
from arena.sources.until_settled import UntilSettled

#: Every source by the ``tournaments.format`` it serves.
SOURCES: Mapping[str, MatchSource] = {
    s.format.value: s for s in (RoundRobin(), UntilSettled(), LadderSource(), TableSource())
}


def source_for(format_: str) -> MatchSource:
    """The source of a tournament ``format``.

    Raises:
        KeyError: no such format (bad stored data).
    """
    return SOURCES[format_]


def unit_of(format_: str) -> str:
    """The unit of play of a tournament ``format`` (:data:`MATCH` or :data:`SET`)."""
    return SOURCES[format_].unit


__all__ = [
    "FINISHED",
    "MATCH",
    "SET",
    "SOURCES",
    "WAIT",
    "Entrant",
    "Field",
    "LadderSource",
    "MatchSource",
    "Next",
    "RoundRobin",
    "StoredGames",
    "TableSource",
    "UntilSettled",
    "duplicate_specs",
    "source_for",
    "table_match",
    "unit_of",
]
