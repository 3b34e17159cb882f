"""Play until settled: rounds of the schedule until the sequential test settles the top of
the ranking or the organizer's ``max_rounds`` is reached (:mod:`arena.sequential`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from arena import sequential
from arena.schedule import ScheduledMatch, ScheduleError
from arena.sources.base import FINISHED, MATCH, Field, Next, StoredGames
from arena.sources.round_robin import round_of
from arena.status import StopReason, TournamentFormat


class UntilSettled:
    """A round robin played again, on fresh deals, while the sequential test says the top is
    not settled. A round that ends with a failed match (it may be retried) finishes the
    tournament without a test: the retry's last stored match takes it."""

    format: ClassVar[TournamentFormat] = TournamentFormat.UNTIL_SETTLED
    unit: ClassVar[str] = MATCH

    def first_round(self, f: Field) -> list[ScheduledMatch]:
        return round_of(f)

    def next_round(self, f: Field, first_index: int, stored: Callable[[], StoredGames], failed: bool) -> Next:
        if failed or not f.until_settled:
            return FINISHED
        rule = sequential.SettleRule.from_dict(dict(f.until_settled))
        games, adjusted = sequential.game_values(stored())
        verdict = sequential.evaluate(games, rule, adjusted=adjusted)
        reason = sequential.decide(verdict, f.rounds, rule)
        if reason is None:
            try:
                planned = round_of(f, first_index)
            except ScheduleError:
                planned = []
            if planned:
                return Next(matches=tuple(planned), settle=verdict.to_dict())
            reason = StopReason.MAX_ROUNDS  # nothing to schedule (bad stored data)
        return Next(stop=reason, finished=True, settle=verdict.to_dict())

    def total(self, f: Field) -> int | None:
        return None  # known once it stops
