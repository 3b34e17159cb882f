"""A table where people play (docs/tables.md): one match, seated as its table says.

Its seats hold people, which a :class:`~arena.sources.base.Field` does not name (entrants are
bots and house bots), so the match is stored by the table's own start
(:func:`arena.lifecycle.tables.start_table`, with :func:`table_match`); this source says only
that nothing follows it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from arena.schedule import ScheduledMatch
from arena.seeds import match_seed
from arena.sources.base import FINISHED, MATCH, Entrant, Field, Next, StoredGames
from arena.status import TournamentFormat


def table_match(tournament_id: int, seed: int, seats: tuple[Entrant, ...]) -> ScheduledMatch:
    """The one match of a table's tournament: position 0, its seed :func:`arena.seeds.match_seed`
    of the tournament's (the chain every tournament's deals follow, docs/fairness.md)."""
    return ScheduledMatch(0, 0, seats, match_seed(seed, tournament_id, 0))


class TableSource:
    """One match, stored when the table starts; finished when it is done."""

    format: ClassVar[TournamentFormat] = TournamentFormat.TABLE
    unit: ClassVar[str] = MATCH

    def first_round(self, f: Field) -> list[ScheduledMatch]:
        return []  # the table's start stores its match (module docstring)

    def next_round(self, f: Field, first_index: int, stored: Callable[[], StoredGames], failed: bool) -> Next:
        return FINISHED

    def total(self, f: Field) -> int | None:
        return 1
