"""Round-robin schedules: which bots play which match, in which seats, with which seed.

Pure functions, no database. ``build_schedule`` returns the whole schedule of a tournament;
the API stores it when the tournament starts (one ``matches`` row per entry).

Two players (``million_doubt``)
    Every pair of participants plays one match of ``games_per_pairing`` games. Those games are
    duplicate pairs: the runner plays each seeded deal twice with the seats swapped (games
    ``2k`` and ``2k+1`` share a deal), so ``games_per_pairing`` must be even. Pairs are ordered
    by the circle method (rounds in which each bot plays at most once).

Four players (``trump_millionaire``, ``jdf``)
    Tables: every 4-subset of the participants, while there are at most ``table_limit`` (70 by
    default, i.e. up to 8 participants). Above the limit, a balanced schedule: the smallest
    set of tables in which every pair of bots shares a table equally often (lambda times) and
    every bot sits at the same number of tables, a 2-(n, 4, lambda) design with the smallest
    lambda that the counting conditions allow, found by a seeded local search
    (:func:`balanced_tables`).
    Each table plays ``games_per_pairing`` rounds; a round is 4 matches with the seats rotated
    cyclically (each bot sits in each seat once per round) sharing one seed, so the deals
    rotate with the seats like duplicate bridge.

Fewer participants than seats: :class:`ScheduleError`, unless ``fill_with_house_bots``, in
which case house sample bots named ``house-1``, ``house-2``... fill the missing places.

Seeds: :func:`derive_seed` hashes the tournament seed with the match's coordinates, so the
same tournament seed and participants give the same schedule and seeds (reproducible).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
from dataclasses import dataclass

#: A seat's occupant: a bot id, or the name of a house sample bot (``"house-1"``).
Entrant = int | str

#: Most 4-player tables before the balanced schedule replaces "every 4-subset".
TABLE_LIMIT = 70


class ScheduleError(ValueError):
    """The schedule cannot be built (too few participants, odd games for duplicate pairs...)."""


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


def _balanced_lambda(n: int) -> int:
    lam = 1
    while (lam * (n - 1)) % 3 or (lam * n * (n - 1)) % 12 or (n == 7 and lam == 2):
        lam += 1
    return lam


def balanced_tables(n: int, seed: int, *, max_steps: int | None = None, restarts: int = 3) -> list[tuple[int, ...]]:
    """Tables (sorted 4-tuples of indexes ``0..n-1``) where every pair meets equally often.

    The number of meetings per pair, lambda, is the smallest with ``lambda (n-1)`` divisible
    by 3 and ``lambda n (n-1)`` divisible by 12 (and not 2 for n = 7, where no such design
    exists); there are ``lambda n (n-1) / 12`` tables and each index sits at
    ``lambda (n-1) / 3`` of them. A seeded simulated-annealing search (swapping members
    between tables) looks for such a design, ``restarts`` times with ``max_steps`` moves each
    (default ``max(400000, 30000 x tables)``). If none is found, the complete design (every
    4-subset) is returned: it is balanced too, only larger. Checked to converge for n = 9..20.

    Raises:
        ScheduleError: ``n < 4``.
    """
    if n < 4:
        raise ScheduleError("a 4-player schedule needs at least 4 entrants")
    lam = _balanced_lambda(n)
    blocks = lam * n * (n - 1) // 12
    if blocks < math.comb(n, 4):
        steps = max_steps if max_steps is not None else max(400_000, 30_000 * blocks)
        for attempt in range(restarts):
            rng = random.Random(derive_seed(seed, "design", n, attempt))
            found = _search_design(n, blocks, lam, rng, steps)
            if found is not None:
                return sorted(tuple(sorted(b)) for b in found)
    return list(itertools.combinations(range(n), 4))


def _search_design(n: int, blocks: int, lam: int, rng: random.Random, max_steps: int) -> list[list[int]] | None:
    reps = blocks * 4 // n
    # Start from tables that give each index exactly ``reps`` seats.
    pool = [i for i in range(n) for _ in range(reps)]
    rng.shuffle(pool)
    tables = [pool[4 * i: 4 * i + 4] for i in range(blocks)]
    count = [[0] * n for _ in range(n)]

    def fix_duplicates() -> None:
        for t in tables:
            while len(set(t)) < 4:
                # Swap a repeated index with one from another table.
                for pos, x in enumerate(t):
                    if t.count(x) > 1:
                        other = rng.choice(tables)
                        q = rng.randrange(4)
                        y = other[q]
                        if y not in t and x not in other:
                            t[pos], other[q] = y, x
                        break

    fix_duplicates()
    for t in tables:
        for a, b in itertools.combinations(t, 2):
            count[a][b] += 1
            count[b][a] += 1
    cost = sum((count[a][b] - lam) ** 2 for a in range(n) for b in range(a + 1, n))
    temperature = 2.0
    for _step in range(max_steps):
        if cost == 0:
            return tables
        # Move: swap one member between two tables (keeps each index's table count).
        i, j = rng.randrange(blocks), rng.randrange(blocks)
        if i == j:
            continue
        ti, tj = tables[i], tables[j]
        p, q = rng.randrange(4), rng.randrange(4)
        x, y = ti[p], tj[q]
        if x == y or y in ti or x in tj:
            continue
        changes: dict[tuple[int, int], int] = {}
        for z in ti:
            if z != x:
                _note(changes, x, z, -1)
                _note(changes, y, z, +1)
        for z in tj:
            if z != y:
                _note(changes, y, z, -1)
                _note(changes, x, z, +1)
        delta = sum((count[a][b] + ch - lam) ** 2 - (count[a][b] - lam) ** 2
                    for (a, b), ch in changes.items() if ch)
        if delta <= 0 or rng.random() < math.exp(-delta / temperature):
            for (a, b), ch in changes.items():
                _add(count, a, b, ch)
            ti[p], tj[q] = y, x
            cost += delta
        temperature = max(0.05, temperature * 0.99995)
    return tables if cost == 0 else None


def _note(changes: dict[tuple[int, int], int], a: int, b: int, change: int) -> None:
    key = (a, b) if a < b else (b, a)
    changes[key] = changes.get(key, 0) + change


def _add(count: list[list[int]], a: int, b: int, change: int) -> None:
    count[a][b] += change
    count[b][a] += change


def build_schedule(
    seats: int,
    participants: list[int],
    games_per_pairing: int,
    seed: int,
    *,
    fill_with_house_bots: bool = False,
    table_limit: int = TABLE_LIMIT,
) -> list[ScheduledMatch]:
    """The whole schedule of a round-robin tournament (see module docstring).

    Args:
        seats: seats per match (2 for ``million_doubt``, 4 for the others; ``engine.SEATS``).
        participants: distinct bot ids.
        games_per_pairing: 2 seats: games per match (even); 4 seats: rounds per table.
        seed: the tournament seed.

    Raises:
        ScheduleError: duplicate participants, too few participants (without house bots),
            ``games_per_pairing`` < 1 or odd with 2 seats, ``seats`` not 2 or 4.
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
        if games_per_pairing % 2:
            raise ScheduleError("games_per_pairing must be even for 2-player duplicate pairs")
        for table, (a, b) in enumerate(circle_pairs(entrants)):
            out.append(ScheduledMatch(len(out), table, (a, b), derive_seed(seed, "match", table)))
        return out
    if seats != 4:
        raise ScheduleError(f"unsupported seat count {seats}")
    n = len(entrants)
    if math.comb(n, 4) <= table_limit:
        tables: list[tuple[int, ...]] = list(itertools.combinations(range(n), 4))
    else:
        tables = balanced_tables(n, seed)
    for rnd in range(games_per_pairing):
        for t, members in enumerate(tables):
            group = [entrants[i] for i in members]
            match_seed = derive_seed(seed, "table", t, "round", rnd)
            for k in range(4):
                rotated = tuple(group[k:] + group[:k])
                out.append(ScheduledMatch(len(out), t, rotated, match_seed))
    return out
