"""What every match source shares: the :class:`MatchSource` protocol, the :class:`Field` it
reads, the :class:`Next` it answers, and the duplicate set's games (:func:`duplicate_specs`).
Pure: no database. The sources themselves and their registry: :mod:`arena.sources`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import engine
from arena.schedule import ScheduledMatch
from arena.seeds import game_seed
from arena.status import StopReason, TournamentFormat

#: A seat's occupant: a bot id, or the name of a house sample bot.
Entrant = int | str
#: Each stored result of a tournament: its entrants per seat and its ``games`` entries.
StoredGames = list[tuple[list[Entrant], list[dict[str, Any]]]]

#: Units of play.
MATCH = "match"
SET = "set"


@dataclass(frozen=True)
class Field:
    """What a source knows of a tournament: its id, rule set and options, seats per match,
    participants (bot ids), ``games_per_pairing``, house seats, the seed (drawn at the
    start), the rounds stored so far, ``owners`` (bot id -> owner account id when no two bots
    of one owner may share a table, else None) and the organizer's ``until_settled``."""

    tournament_id: int
    ruleset: str
    participants: tuple[int, ...]
    games_per_pairing: int
    seed: int
    options: Mapping[str, Any] = field(default_factory=dict)
    fill_with_house_bots: bool = False
    rounds: int = 1
    owners: Mapping[int, int] | None = None
    until_settled: Mapping[str, Any] | None = None

    @property
    def seats(self) -> int:
        """Seats per match (``engine.SEATS``)."""
        return engine.SEATS[self.ruleset]


@dataclass(frozen=True)
class Next:
    """What a source says when a round's last match is done: ``matches`` to store and play
    (a new round), or ``stop`` (the tournament is finished, with this reason for a tournament
    played until settled; :data:`FINISHED` otherwise), or neither (``wait``: a ladder, whose
    matches come from its ticks). ``settle``: the sequential test's verdict to record."""

    matches: tuple[ScheduledMatch, ...] = ()
    stop: StopReason | None = None
    finished: bool = False
    settle: dict[str, Any] | None = None


#: A round robin's "no more rounds": finished, without a stop reason.
FINISHED = Next(finished=True)
#: A ladder's answer at a round end: nothing now, never finished by a round end.
WAIT = Next()


class MatchSource(Protocol):
    """Where a tournament's matches come from (module docstring)."""

    #: The ``tournaments.format`` it serves.
    format: ClassVar[TournamentFormat]
    #: ``match`` or ``set`` (module docstring).
    unit: ClassVar[str]

    def first_round(self, f: Field) -> list[ScheduledMatch]:
        """The matches stored when the tournament starts (positions from 0).

        Raises:
            arena.schedule.ScheduleError: they cannot be built (too few participants...).
        """
        ...

    def next_round(self, f: Field, first_index: int, stored: Callable[[], StoredGames], failed: bool) -> Next:
        """Called once when none of the tournament's matches is left to play: ``first_index``
        is the position after the last stored one, ``stored()`` reads every stored result,
        ``failed`` says a match failed (it may be retried)."""
        ...

    def total(self, f: Field) -> int | None:
        """How many matches the tournament plays in all, as far as known now (None: no end)."""
        ...


def duplicate_specs(ruleset: str, seed: int) -> list[dict[str, Any]]:
    """The games of a duplicate set played from ``seed`` (an attempt seed): one deal (the game
    seed ``game_seed(seed, 0)``) played once per rotation of the seats, so that every entrant
    holds every seat's cards once: Million Doubt 2 games (seats swapped), Trump Millionaire and
    JDF 4 games (game ``k`` seats player ``(s + k) % 4`` at seat ``s``). Shape of
    :func:`arena.runner.match.default_game_specs`: ``[{"seed", "seats"}]``, ``seats[s]`` the
    player at seat ``s``."""
    n = engine.SEATS[ruleset]
    deal = game_seed(seed, 0)
    return [{"seed": deal, "seats": [(s + k) % n for s in range(n)]} for k in range(n)]
