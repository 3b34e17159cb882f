"""Round-robin schedules: which bots play which match, in which seats, with which seed.

Pure functions, no database. ``build_schedule`` returns the whole schedule of a tournament;
the API stores it when the tournament starts (one ``matches`` row per entry).

Two players (``million_doubt``)
    Every pair of participants plays one match of ``games_per_pairing`` games, each dealt
    afresh, the seats swapped from one game to the next (an even count gives each bot each
    seat equally often). Pairs are ordered by the circle method (rounds in which each bot
    plays at most once).

Four players (``trump_millionaire``, ``jdf``)
    Tables: every 4-subset of the participants, while there are at most ``table_limit`` (70 by
    default, i.e. up to 8 participants): every pair meets equally often. Above the limit,
    :func:`spread_tables`: every bot sits at the same number of tables (enough to meet every
    other bot about once), built by a greedy construction that always succeeds in well under
    a second for 128 bots.
    Each table plays ``games_per_pairing`` rounds; a round is 4 matches with the seats rotated
    cyclically (each bot sits in each seat once per round), each match dealt afresh. Queue
    order: round by round, rotation by rotation, table by table, so a bot's matches are
    spread over the tournament.

Fewer participants than seats: :class:`ScheduleError`, unless ``fill_with_house_bots``, in
which case house sample bots named ``house-1``, ``house-2``... fill the missing places.

Seeds: every match has its own seed, :func:`match_seed` of the tournament seed, the tournament
id and the match's position, so no two matches (of any tournaments) share a deal, and the same
tournament seed, id and participants give the same schedule and seeds (reproducible). The
whole seed chain (match, attempt and game seeds) is in :mod:`arena.core.fairness`.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
from dataclasses import dataclass

#: A seat's occupant: a bot id, or the name of a house sample bot (``"house-1"``).
Entrant = int | str

#: Most 4-player tables before :func:`spread_tables` replaces "every 4-subset" (up to 8 entrants).
TABLE_LIMIT = 70


class ScheduleError(ValueError):
    """The schedule cannot be built (too few participants, ``games_per_pairing`` < 1...)."""


@dataclass(frozen=True)
class ScheduledMatch:
    """One match of the schedule: position ``index`` (from 0), ``table`` number, seats, seed."""

    index: int
    table: int
    seats: tuple[Entrant, ...]
    seed: int


def derive_seed(tournament_seed: int, *parts: object) -> int:
    """A 63-bit seed (fits a signed BIGINT) from the tournament seed and ``parts``."""
    text = ":".join(str(p) for p in (tournament_seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def match_seed(tournament_seed: int, tournament_id: int, index: int) -> int:
    """The seed of match ``index`` (schedule position) of tournament ``tournament_id``."""
    return derive_seed(tournament_seed, "tournament", tournament_id, "match", index)


def house_names(count: int) -> list[str]:
    """Names of ``count`` house sample bots: ``["house-1", ...]``."""
    return [f"house-{i}" for i in range(1, count + 1)]


def circle_pairs(entrants: list[Entrant]) -> list[tuple[Entrant, Entrant]]:
    """All pairs of ``entrants``, ordered in round-robin rounds (circle method)."""
    players: list[Entrant | None] = list(entrants)
    if len(players) % 2:
        players.append(None)
    n = len(players)
    out: list[tuple[Entrant, Entrant]] = []
    for _ in range(n - 1):
        for i in range(n // 2):
            a, b = players[i], players[n - 1 - i]
            if a is not None and b is not None:
                out.append((a, b))
        players = [players[0], players[-1], *players[1:-1]]
    return out


def spread_tables(n: int, seed: int) -> list[tuple[int, ...]]:
    """Tables of 4 (tuples of indexes ``0..n-1``) for ``n >= 4`` entrants, in queue order.

    Every index sits at exactly the same number of tables, ``k = m * ceil((n-1) / (3m))`` with
    ``m = 4 / gcd(n, 4)`` (the fewest seats per index that fill whole tables), enough for each
    index to meet every other at least once if the pairs could be spread perfectly. A greedy
    construction, which always succeeds, builds the tables one after the other: the next table
    takes every index whose remaining seats equal the remaining tables (so the rest always
    fits), else the index with the most seats left (then the most others not yet met, then a
    seeded order), and adds the indexes that have met the table's members least often. So
    each index's tables are spread over the sequence. Pairs meet 0 to 3 times and at least
    85% of the pairs meet (``tests/api/test_persistence.py`` checks every n from 9 to 128):
    near, not exactly, the even spread a resolvable design would give, which does not
    exist for every n. Time: O(k n^2), about 0.2 s for n = 128.

    Raises:
        ScheduleError: ``n < 4``.
    """
    if n < 4:
        raise ScheduleError("a 4-player schedule needs at least 4 entrants")
    m = 4 // math.gcd(n, 4)
    per_entrant = m * max(1, math.ceil((n - 1) / (3 * m)))
    total = per_entrant * n // 4
    meet = [[0] * n for _ in range(n)]
    unmet = [n - 1] * n  # how many others each index has not met yet
    left = [per_entrant] * n
    rng = random.Random(derive_seed(seed, "tables", n))
    tie = [rng.random() for _ in range(n)]
    out: list[tuple[int, ...]] = []
    for t in range(total):
        remaining = total - t
        table = [i for i in range(n) if left[i] == remaining]
        cand = [i for i in range(n) if left[i] and i not in table]
        if not table:
            table = [max(cand, key=lambda i: (left[i], unmet[i], tie[i]))]
            cand.remove(table[0])
        score = [0] * n  # meetings of each index with the table's members so far
        for j in table:
            score = [a + b for a, b in zip(score, meet[j])]
        while len(table) < 4:
            best = min(cand, key=lambda i: (score[i], -left[i], -unmet[i], tie[i]))
            table.append(best)
            cand.remove(best)
            score = [a + b for a, b in zip(score, meet[best])]
        for a, b in itertools.combinations(table, 2):
            if meet[a][b] == 0:
                unmet[a] -= 1
                unmet[b] -= 1
            meet[a][b] += 1
            meet[b][a] += 1
        for i in table:
            left[i] -= 1
        out.append(tuple(sorted(table)))
    return out


def spread_order(tables: list[tuple[int, ...]], n: int) -> list[tuple[int, ...]]:
    """``tables`` (tuples of indexes ``0..n-1``) reordered so that each index's tables are
    spread over the sequence: the next table is the one whose members have sat least so far
    (the most-seated member first, then the sum; ties keep the given order). With every
    4-subset of 8 indexes, each table is followed by its complement, so every two tables
    seat every index once; for 5 to 7 indexes, at every point of the sequence the tables
    seated so far differ by at most 2 between two indexes. A lexicographic order instead starts with every table of
    index 0 (35 of the 70 for n = 8): one bot's concurrency cap would throttle the start
    of the tournament (issue 15). Time O(len(tables)^2); used for at most
    :data:`TABLE_LIMIT` tables."""
    seated = [0] * n
    left = list(tables)
    out: list[tuple[int, ...]] = []
    while left:
        best = min(range(len(left)), key=lambda j: (max(seated[i] for i in left[j]),
                                                   sum(seated[i] for i in left[j]), j))
        table = left.pop(best)
        for i in table:
            seated[i] += 1
        out.append(table)
    return out


def build_schedule(
    seats: int,
    participants: list[int],
    games_per_pairing: int,
    seed: int,
    *,
    fill_with_house_bots: bool = False,
    table_limit: int = TABLE_LIMIT,
    tournament_id: int = 0,
) -> list[ScheduledMatch]:
    """The whole schedule of a round-robin tournament (see module docstring).

    Args:
        seats: seats per match (2 for ``million_doubt``, 4 for the others; ``engine.SEATS``).
        participants: distinct bot ids.
        games_per_pairing: 2 seats: games per match; 4 seats: rounds per table.
        seed: the tournament seed (secret until the tournament is over).
        tournament_id: mixed into every match seed (:func:`match_seed`).

    Raises:
        ScheduleError: duplicate participants, too few participants (without house bots),
            ``games_per_pairing`` < 1, ``seats`` not 2 or 4.
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
                " (or set fill_with_house_bots)")
        if not entrants:
            raise ScheduleError("a tournament needs at least one participant")
        entrants += house_names(seats - len(entrants))
    out: list[ScheduledMatch] = []
    if seats == 2:
        for table, (a, b) in enumerate(circle_pairs(entrants)):
            out.append(ScheduledMatch(len(out), table, (a, b), match_seed(seed, tournament_id, len(out))))
        return out
    if seats != 4:
        raise ScheduleError(f"unsupported seat count {seats}")
    n = len(entrants)
    if math.comb(n, 4) <= table_limit:
        tables: list[tuple[int, ...]] = spread_order(list(itertools.combinations(range(n), 4)), n)
    else:
        tables = spread_tables(n, seed)
    # Queue order: round by round, and within a round rotation by rotation over every table,
    # so each bot's matches are spread over the whole tournament.
    for _round in range(games_per_pairing):
        for k in range(4):
            for t, members in enumerate(tables):
                group = [entrants[i] for i in members]
                rotated = tuple(group[k:] + group[:k])
                out.append(ScheduledMatch(len(out), t, rotated, match_seed(seed, tournament_id, len(out))))
    return out
