"""Round-robin schedules: which bots play which match, in which seats, with which seed.

Pure functions, no database. :func:`build_schedule` returns the whole schedule of a
tournament (the API stores one ``matches`` row per entry when it starts).
``million_doubt``: every pair plays one match of ``games_per_pairing`` games, each dealt
afresh, seats swapped every game, pairs ordered by the circle method. ``trump_millionaire``,
``jdf``: tables of 4, every 4-subset while there are at most ``table_limit`` (70) ordered by
:func:`arena.designs.spread_order`, else :func:`arena.designs.spread_tables`; each table plays ``games_per_pairing``
rounds of 4 matches with the seats rotated. Fewer participants than seats:
:class:`ScheduleError`, unless ``fill_with_house_bots`` (``house-1``, ``house-2``..., each
playing the tournament's ``house_bot``, one of :data:`HOUSE_BOTS`). Every
match has its own seed, :func:`match_seed` of the tournament seed, id and the match's
position (reproducible; the seed chain: :mod:`arena.fairness`). Design and figures:
docs/design-notes.md, "Schedules".
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from arena.designs import ScheduleError, spread_order, spread_tables
from arena.seeds import derive_seed, match_seed

__all__ = [
    "DEFAULT_HOUSE_BOT",
    "HOUSE_BOTS",
    "TABLE_LIMIT",
    "Entrant",
    "ScheduleError",
    "ScheduledMatch",
    "build_schedule",
    "circle_pairs",
    "house_names",
    "separated",
]

#: A seat's occupant: a bot id, or the name of a house sample bot (``"house-1"``).
Entrant = int | str

#: The sample bots a tournament's house seats may play (``tournaments.house_bot``): the names
#: of ``bots_sdk.samples.SAMPLE_BOTS``, in its order (a test keeps them equal). Held here, a
#: pure module, so that the API validates the field without loading the bots.
HOUSE_BOTS: tuple[str, ...] = ("random", "greedy", "heuristic", "search")
#: The house bot of a tournament created without one (and of every tournament before the field).
DEFAULT_HOUSE_BOT = "heuristic"

#: Most 4-player tables before :func:`spread_tables` replaces "every 4-subset" (up to 8 entrants).
TABLE_LIMIT = 70


@dataclass(frozen=True)
class ScheduledMatch:
    """One match of the schedule: position ``index`` (from 0), ``table`` number, seats, seed."""

    index: int
    table: int
    seats: tuple[Entrant, ...]
    seed: int


def house_names(count: int) -> list[str]:
    """Names of ``count`` house sample bots: ``["house-1", ...]``."""
    return [f"house-{i}" for i in range(1, count + 1)]


def circle_pairs(entrants: list[Entrant]) -> list[tuple[Entrant, Entrant]]:
    """All pairs of ``entrants``, ordered in round-robin rounds (circle method). Each bot is
    listed first in as many pairs as any other, within one (the fixed player alternates
    sides), so with an odd ``games_per_pairing`` no bot gets seat 0 more than once extra."""
    players: list[Entrant | None] = list(entrants)
    if len(players) % 2:
        players.append(None)
    n = len(players)
    out: list[tuple[Entrant, Entrant]] = []
    for r in range(n - 1):
        for i in range(n // 2):
            a, b = players[i], players[n - 1 - i]
            if i == 0 and r % 2:  # the fixed player alternates sides: every player is listed
                a, b = b, a  # first (seat 0 of an odd game count) within one of the others
            if a is not None and b is not None:
                out.append((a, b))
        players = [players[0], players[-1], *players[1:-1]]
    return out


def _seat_order(members: tuple[int, ...], seed: int, table: int) -> list[int]:
    """The order around table ``table`` of its ``members``: a seeded shuffle (the same seed
    gives the same order; a different table, another)."""
    order = list(members)
    random.Random(derive_seed(seed, "seat-order", table)).shuffle(order)
    return order


def separated(table: Sequence[Entrant], owners: Mapping[int, int]) -> bool:
    """True when no two bots of ``table`` have the same owner (``owners``: bot id -> owner
    account id; house seats and bots missing from ``owners`` have none)."""
    seen = [owners[e] for e in table if isinstance(e, int) and e in owners]
    return len(seen) == len(set(seen))


def _everyone_seated(entrants: Sequence[Entrant], tables: Sequence[Sequence[Entrant]]) -> None:
    """Raise :class:`ScheduleError` if an entrant sits at none of ``tables`` (every table it
    could sit at holds another bot of its owner)."""
    seated = {e for t in tables for e in t}
    alone = [e for e in entrants if e not in seated]
    if alone:
        raise ScheduleError(
            f"bot {alone[0]} has no table without another bot of its owner: enter fewer bots of one owner"
            " (or turn separate_owners off)"
        )


def build_schedule(
    seats: int,
    participants: list[int],
    games_per_pairing: int,
    seed: int,
    *,
    fill_with_house_bots: bool = False,
    table_limit: int = TABLE_LIMIT,
    tournament_id: int = 0,
    first_index: int = 0,
    owners: Mapping[int, int] | None = None,
) -> list[ScheduledMatch]:
    """The whole schedule of a round-robin tournament (see module docstring): one round of
    it. ``first_index``: the position of its first match, for a round added to a tournament
    played until settled (the same tables and seats; the new positions give fresh seeds).
    ``owners`` (bot id -> owner account id): never two bots of one owner at one table; the
    pairs and tables that would seat them together are left out (:func:`separated`).

    Args:
        seats: seats per match (2 for ``million_doubt``, 4 for the others; ``engine.SEATS``).
        participants: distinct bot ids.
        games_per_pairing: 2 seats: games per match; 4 seats: rounds per table.
        seed: the tournament seed (secret until the tournament is over).
        tournament_id: mixed into every match seed (:func:`match_seed`).

    Raises:
        ScheduleError: duplicate participants, too few participants (without house bots),
            ``games_per_pairing`` < 1, ``seats`` not 2 or 4; with ``owners``, a bot left
            without any table.
    """
    if len(set(participants)) != len(participants):
        raise ScheduleError("participants must be distinct")
    if games_per_pairing < 1:
        raise ScheduleError("games_per_pairing must be at least 1")
    entrants: list[Entrant] = sorted(participants)
    if len(entrants) < seats:
        if not fill_with_house_bots:
            raise ScheduleError(
                f"{seats}-player rule set needs at least {seats} participants, got {len(entrants)}"
                " (or set fill_with_house_bots)"
            )
        if not entrants:
            raise ScheduleError("a tournament needs at least one participant")
        entrants += house_names(seats - len(entrants))
    out: list[ScheduledMatch] = []
    if seats == 2:
        pairs = circle_pairs(entrants)
        if owners is not None:
            pairs = [(a, b) for a, b in pairs if separated((a, b), owners)]
            _everyone_seated(entrants, pairs)
        for table, (a, b) in enumerate(pairs):
            index = first_index + len(out)
            out.append(ScheduledMatch(index, table, (a, b), match_seed(seed, tournament_id, index)))
        return out
    if seats != 4:
        raise ScheduleError(f"unsupported seat count {seats}")
    n = len(entrants)
    if math.comb(n, 4) <= table_limit:
        tables: list[tuple[int, ...]] = spread_order(list(itertools.combinations(range(n), 4)), n)
    else:
        tables = spread_tables(n, seed)
    if owners is not None:
        tables = [t for t in tables if separated([entrants[i] for i in t], owners)]
        _everyone_seated(entrants, [[entrants[i] for i in t] for t in tables])
    # The order around each table is drawn from the seed: a table's members in id order
    # would seat the lower id before the higher at every table the two share, so a
    # contestant's two bots registered one after the other would always sit in turn (a
    # partner feeding or passing for the other). The rotations keep that table's order.
    orders = [_seat_order(members, seed, t) for t, members in enumerate(tables)]
    # Queue order: round by round, and within a round rotation by rotation over every table,
    # so each bot's matches are spread over the whole tournament.
    for _round in range(games_per_pairing):
        for k in range(4):
            for t, members in enumerate(orders):
                group = [entrants[i] for i in members]
                rotated = tuple(group[k:] + group[:k])
                index = first_index + len(out)
                out.append(ScheduledMatch(index, t, rotated, match_seed(seed, tournament_id, index)))
    return out
