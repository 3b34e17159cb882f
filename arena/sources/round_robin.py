"""The round robin: one round of the schedule of :func:`arena.schedule.build_schedule`."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from arena.schedule import ScheduledMatch, build_schedule
from arena.sources.base import FINISHED, MATCH, Field, Next, StoredGames
from arena.status import TournamentFormat


def round_of(f: Field, first_index: int = 0) -> list[ScheduledMatch]:
    """One round of ``f``'s schedule, its positions from ``first_index`` (fresh match seeds).

    Raises:
        arena.schedule.ScheduleError: the schedule cannot be built.
    """
    return build_schedule(
        f.seats,
        list(f.participants),
        f.games_per_pairing,
        f.seed,
        fill_with_house_bots=f.fill_with_house_bots,
        tournament_id=f.tournament_id,
        first_index=first_index,
        owners=f.owners,
    )


class RoundRobin:
    """Every pairing (2 seats) or table (4 seats) of the field once, ``games_per_pairing``
    games or rounds each: finished when its last match is done."""

    format: ClassVar[TournamentFormat] = TournamentFormat.ROUND_ROBIN
    unit: ClassVar[str] = MATCH

    def first_round(self, f: Field) -> list[ScheduledMatch]:
        return round_of(f)

    def next_round(self, f: Field, first_index: int, stored: Callable[[], StoredGames], failed: bool) -> Next:
        return FINISHED

    def total(self, f: Field) -> int | None:
        return len(round_of(f))
