"""A ladder's sets (docs/ladder.md): formed from the tables of a tick (:func:`form_sets`),
each with its own seed commitment, and rated once when stored (:func:`rate_set`):

::

    set      pending --rate_set--> rated | unrated | void      (comparison: never rated)

A stored set's row is locked and compared-and-set ``pending -> rated``, then its entries'
rows are locked in ascending id order (no deadlock between two sets sharing entries), so a
set stored, delivered or rated twice moves every rating once; the health rule runs over it
(:func:`arena.lifecycle.ladders.mark_paused`). Each public function is a transaction of its
own (it commits, or rolls back and raises) unless it says otherwise.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena import fairness, ladder_ratings
from arena.db.models import (
    Ladder,
    LadderEntry,
    LadderFit,
    LadderPair,
    LadderRating,
    LadderSet,
    Match,
    MatchResult,
    MatchSeat,
    utcnow,
)
from arena.lifecycle.base import (
    DONE,
    MatchStatus,
    aware,
    is_postgresql,
    locked,
    rows_changed,
)
from arena.lifecycle.ladders import mark_paused
from arena.sources.ladder import LadderConfig, pair
from arena.status import (
    EntryStatus,
    LadderStatus,
    ParStatus,
    PausedBy,
    SetRating,
)


# -- sets ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedSet:
    """A set a tick forms: the entry id per seat, and, for a comparison set, the key that
    pairs it with its twin (the same ``deal`` seed)."""

    entries: tuple[int, ...]
    kind: str = "rated"
    twin_key: int | None = None


def lock_ladder(session: Session, ladder_id: int) -> Ladder | None:
    """The ladder's row, locked for its tick or refill (PostgreSQL, ``FOR NO KEY UPDATE``): one
    tick or refill of a ladder at a time, while rows that refer to the ladder (a new version's
    entry, a rated set's pairs) are still inserted meanwhile. A plain ``FOR UPDATE`` blocks
    those inserts, and a check promoting a new version (its parent's entry locked, then its
    own entry inserted) deadlocked with a tick (the ladder locked, then the parent's entry)."""
    return locked(session, Ladder, ladder_id, no_key=True)


def form_sets(
    session: Session, ladder_id: int, tick: int, planned: Sequence[PlannedSet], *, refill_of: int | None = None
) -> list[int]:
    """Store the sets of tick number ``tick`` of ladder ``ladder_id`` (matches ``queued``, with
    their seats and ``ladder_sets`` rows), each with a fresh seed and salt and their
    commitment; commit. The ladder row is locked first and ``tick`` must be past its
    ``last_tick``: of two runs of one tick, one stores and the other stores nothing (a tick is
    safe to run twice). Twins (comparison sets with the same ``twin_key``) share their seed.
    With ``refill_of`` (a done set of the ladder), the sets are a refill of that set's entries:
    stored once per done set (its ``refilled`` compared-and-set), under the ladder's last tick.

    Returns the match ids to send to the workers (``[]``: the tick was already stored, or the
    ladder is closed).
    """
    ladder = lock_ladder(session, ladder_id)
    if ladder is None or ladder.status != LadderStatus.ACTIVE:
        session.rollback()
        return []
    now = utcnow()
    if refill_of is not None:  # a refill: once per done set, whatever the tick
        once = rows_changed(
            session,
            update(LadderSet)
            .where(LadderSet.match_id == refill_of, LadderSet.refilled.is_(False))
            .values(refilled=True),
        )
        if once != 1:
            session.rollback()
            return []
        tick = ladder.last_tick or 0
    elif tick <= (ladder.last_tick or 0):
        session.rollback()
        return []
    else:
        ladder.last_tick = tick
        ladder.last_tick_at = now
    if not planned:
        session.commit()
        return []
    entry_ids = sorted({e for p in planned for e in p.entries})
    entries = {e.id: e for e in session.scalars(select(LadderEntry).where(LadderEntry.id.in_(entry_ids)))}
    last = session.scalar(select(func.max(Match.index)).where(Match.tournament_id == ladder.tournament_id))
    index = 0 if last is None else int(last) + 1
    seeds: dict[int, int] = {}
    made: list[tuple[Match, PlannedSet, int, str]] = []
    for p in planned:
        seed = seeds.setdefault(p.twin_key, fairness.new_seed()) if p.twin_key is not None else fairness.new_seed()
        salt = fairness.new_salt()
        m = Match(
            tournament_id=ladder.tournament_id,
            index=index,
            table=0,
            seed=seed,
            status=MatchStatus.QUEUED,
            attempts=0,
            queued_at=now,
        )
        for seat, entry_id in enumerate(p.entries):
            e = entries[entry_id]
            m.seats.append(MatchSeat(seat=seat, bot_id=e.bot_id, house_bot=e.house_bot))
        session.add(m)
        made.append((m, p, seed, salt))
        index += 1
    session.flush()
    by_key: dict[int, list[int]] = {}
    for m, p, _seed, _salt in made:
        if p.twin_key is not None:
            by_key.setdefault(p.twin_key, []).append(m.id)
    for m, p, seed, salt in made:
        twins = by_key.get(p.twin_key, []) if p.twin_key is not None else []
        session.add(
            LadderSet(
                match_id=m.id,
                ladder_id=ladder.id,
                kind=p.kind,
                entries=list(p.entries),
                tick=tick,
                salt=salt,
                commitment=fairness.commitment(seed, salt),
                rating=SetRating.COMPARISON if p.kind == "comparison" else SetRating.PENDING,
                twin=next((x for x in twins if x != m.id), None),
                created_at=now,
            )
        )
    for entry_id in entry_ids:
        entries[entry_id].last_set_at = now
    session.commit()
    return [m.id for m, _, _, _ in made]


# -- the rating of one set ------------------------------------------------------------------
@dataclass(frozen=True)
class Rated:
    """What :func:`rate_set` did: ``outcome`` the set's rating status after the call
    (``pending`` while it waits for its pars or its result), ``changed`` true if this call
    moved it, ``paused`` the entries the health rule paused."""

    outcome: SetRating
    changed: bool = False
    paused: tuple[int, ...] = ()


def _answered(result: MatchResult, seats: int) -> list[int | None]:
    answered = (result.timings or {}).get("answered")
    if isinstance(answered, list) and len(answered) == seats:
        return [int(a) for a in answered]
    return [None] * seats


def rate_set(session: Session, match_id: int, *, now: datetime | None = None) -> Rated | None:
    """Rate stored ladder set ``match_id`` once (module docstring); commit. None when the
    match is not a ladder set.

    A set without a result stays ``pending`` (``void`` once its match is cancelled or
    failed). A stored set of four seats whose pars are still ``pending`` waits (``pending``)
    until they are done, or until the ladder's ``par_wait_s`` has passed since it was stored
    (then its raw scores place it); a two-seat set never waits
    (:func:`arena.ladder_ratings.waits_for_pars`). A set where a bot seat never made a valid
    decision becomes ``unrated`` (:func:`arena.ladder_ratings.contested`). Otherwise its entries' rows are locked in id
    order and moved by one openskill update; each gets a rating-history row; each pair of its
    entries adds the set to its sums (``ladder_pairs``). Either way the health rule counts the
    set for each bot entry (faults; paused after ``fault_sets`` forfeits among its last
    ``fault_window`` sets).
    """
    now = now or utcnow()
    row = locked(session, LadderSet, match_id)
    if row is None or row.rating != SetRating.PENDING:
        session.rollback()
        return Rated(SetRating(row.rating)) if row is not None else None
    match = session.get(Match, match_id)
    assert match is not None
    result = session.get(MatchResult, match_id)
    if result is None:
        if match.status in DONE:
            row.rating = SetRating.VOID
            session.commit()
            return Rated(SetRating.VOID, True)
        session.rollback()
        return Rated(SetRating.PENDING)
    ladder = session.get(Ladder, row.ladder_id)
    assert ladder is not None
    cfg = LadderConfig.from_dict(ladder.config)
    stored_at = aware(result.created_at)
    waited = (now - stored_at).total_seconds() if stored_at is not None else math.inf
    waits = ladder_ratings.waits_for_pars(len(row.entries))
    if result.par_status == ParStatus.PENDING and waits and waited < cfg.par_wait_s:
        session.rollback()
        return Rated(SetRating.PENDING)
    entry_ids = list(row.entries)
    stmt = select(LadderEntry).where(LadderEntry.id.in_(sorted(set(entry_ids)))).order_by(LadderEntry.id)
    if is_postgresql(session):
        stmt = stmt.with_for_update()
    entries = {e.id: e for e in session.scalars(stmt)}
    seats = [entries[e] for e in entry_ids]
    games = list(result.games or [])
    answered = _answered(result, len(seats))
    paused = _health(seats, list(result.faults), answered, ladder, cfg, now, games=len(games))
    for e, f in zip(seats, result.faults, strict=True):
        e.faults += int(f)
    if not ladder_ratings.contested(answered, [e.house_bot is not None for e in seats]):
        row.rating = SetRating.UNRATED
        row.rated_at = now
        session.commit()
        return Rated(SetRating.UNRATED, True, paused)
    places, adjusted = ladder_ratings.placement(list(result.scores), games)
    up = ladder_ratings.update([(e.mu, e.sigma) for e in seats], places)
    found = ladder_ratings.recall(games, len(seats))
    recalled: list[float | None] = list(found) if found is not None else [None] * len(seats)
    for e, (mu, sigma), res, rec in zip(seats, up.ratings, up.residuals, recalled, strict=True):
        if rec is not None:
            e.recall_n += 1
            e.recall_sum += rec
            e.recall_sumsq += rec * rec
        e.mu, e.sigma = mu, sigma
        e.sets += 1
        e.games += max(1, len(games))
        e.res_n += 1
        e.res_sum += res
        e.res_sumsq += res * res
        session.add(LadderRating(entry_id=e.id, match_id=match_id, mu=mu, sigma=sigma, sets=e.sets, at=now))
    _add_pairs(session, ladder.id, [e.id for e in seats], places, up.residuals, now)
    row.rating = SetRating.RATED
    row.placement = places
    row.adjusted = adjusted
    row.rated_at = now
    session.commit()
    return Rated(SetRating.RATED, True, paused)


def _health(
    seats: Sequence[LadderEntry],
    faults: Sequence[int],
    answered: Sequence[int | None],
    ladder: Ladder,
    cfg: LadderConfig,
    now: datetime,
    *,
    games: int = 0,
) -> tuple[int, ...]:
    """The health rule over one stored set (no commit): a bot entry whose faults reached the
    ladder's ``max_faults`` (FAULT-3), or one in each of the set's ``games`` when they are
    fewer (a Million Doubt set: a fault ends its game, MD-17, so 2 at most), or that never
    answered a request of the set validly, records a forfeit; an active entry with
    ``fault_sets`` forfeits among its last ``fault_window`` stored sets is paused. Returns the
    paused ids."""
    bar = ladder.tournament.max_faults if ladder.tournament is not None else 3
    if games > 0:
        bar = min(bar, games)
    window = (1 << cfg.fault_window) - 1
    paused = []
    for e, f, a in zip(seats, faults, answered, strict=True):
        if e.bot_id is None:
            continue
        forfeited = int(f) >= bar or a == 0
        e.fault_streak = e.fault_streak + 1 if forfeited else 0
        e.forfeits = ((e.forfeits << 1) | int(forfeited)) & window
        recent = bin(e.forfeits).count("1")
        if e.status == EntryStatus.ACTIVE and recent >= cfg.fault_sets:
            mark_paused(e, PausedBy.HEALTH, "forfeits", n=recent, window=cfg.fault_window, bar=bar)
            e.paused_at = now
            paused.append(e.id)
    return tuple(paused)


def _add_pairs(
    session: Session,
    ladder_id: int,
    ids: Sequence[int],
    places: Sequence[int],
    residuals: Sequence[float],
    now: datetime,
) -> None:
    """Add one rated set to the sums of each pair of its entries in one statement (an insert
    that adds to the row where the pair has one), inside the caller's transaction, after the
    entries' locks: no other transaction writes these pairs now."""
    rows = []
    for i, j in itertools.combinations(range(len(ids)), 2):
        a, b = pair(ids[i], ids[j])
        ia, ib = (i, j) if a == ids[i] else (j, i)
        win = 1.0 if places[ia] < places[ib] else 0.5 if places[ia] == places[ib] else 0.0
        ra, rb = residuals[ia], residuals[ib]
        rows.append(
            {
                "ladder_id": ladder_id,
                "a": a,
                "b": b,
                "sets": 1,
                "a_wins": win,
                "res_a_sum": ra,
                "res_a_sumsq": ra * ra,
                "res_b_sum": rb,
                "res_b_sumsq": rb * rb,
                "last_met_at": now,
            }
        )
    if not rows:
        return
    rows.sort(key=lambda r: (r["a"], r["b"]))
    stmt = (postgresql.insert if is_postgresql(session) else sqlite.insert)(LadderPair).values(rows)
    added = ("sets", "a_wins", "res_a_sum", "res_a_sumsq", "res_b_sum", "res_b_sumsq")
    session.execute(
        stmt.on_conflict_do_update(
            index_elements=[LadderPair.ladder_id, LadderPair.a, LadderPair.b],
            set_={
                **{k: getattr(LadderPair, k) + getattr(stmt.excluded, k) for k in added},
                "last_met_at": stmt.excluded.last_met_at,
            },
        )
    )


def add_comparison(session: Session, match_id: int) -> bool:
    """Fold a stored comparison set and its twin (both stored) into the new version's
    ``compare``: the difference of their set scores (the version's minus its parent's, same
    deal, same opponents); commit. Idempotent: the pair is folded by whichever of the two is
    stored last, once (the twin's rating marks it). Returns True if this call folded it."""
    row = locked(session, LadderSet, match_id)
    if row is None or row.kind != "comparison" or row.twin is None or row.rated_at is not None:
        session.rollback()
        return False
    twin = locked(session, LadderSet, row.twin)
    mine = session.get(MatchResult, match_id)
    theirs = session.get(MatchResult, row.twin)
    if twin is None or twin.rated_at is not None or mine is None or theirs is None:
        session.rollback()
        return False
    now = utcnow()
    entries = {
        e.id: e for e in session.scalars(select(LadderEntry).where(LadderEntry.id.in_([*row.entries, *twin.entries])))
    }
    child = next(
        (entries[e] for e in [*row.entries, *twin.entries] if (entries[e].compare or {}).get("parent_entry")), None
    )
    if child is None:
        session.rollback()
        return False
    c = dict(child.compare or {})
    parent_id = int(c["parent_entry"])
    child_set, parent_set = (mine, theirs) if child.id in row.entries else (theirs, mine)
    child_rows = row if child.id in row.entries else twin
    parent_rows = twin if child_rows is row else row
    score_child = float(child_set.scores[list(child_rows.entries).index(child.id)])
    score_parent = float(parent_set.scores[list(parent_rows.entries).index(parent_id)])
    d = score_child - score_parent
    c["sets"] = int(c.get("sets", 0)) + 1
    c["sum"] = float(c.get("sum", 0.0)) + d
    c["sumsq"] = float(c.get("sumsq", 0.0)) + d * d
    child.compare = c
    row.rated_at = twin.rated_at = now
    session.commit()
    return True


def store_fit(
    session: Session,
    ladder_id: int,
    *,
    sets: int,
    table: list[dict[str, Any]],
    matrix: dict[str, Any],
    collusion: list[dict[str, Any]],
    recall: list[dict[str, Any]],
) -> None:
    """Replace the ladder's official table by a new batch fit (``ladder_fits``); commit."""
    row = locked(session, LadderFit, ladder_id)
    if row is None:
        row = LadderFit(ladder_id=ladder_id)
        session.add(row)
    row.sets, row.table, row.matrix, row.collusion, row.recall = sets, table, matrix, collusion, recall
    row.computed_at = utcnow()
    try:
        session.commit()
    except IntegrityError:  # a concurrent first fit won: this one is as good
        session.rollback()


def unrated_sets(session: Session, *, older_than_s: float, limit: int = 500) -> list[int]:
    """Ladder sets still ``pending`` whose match is done (stored, cancelled or failed) more
    than ``older_than_s`` seconds ago: the reaper rates them (their worker died between the
    store and the rating, or their pars were late). Oldest first; reads only."""
    cutoff = utcnow() - timedelta(seconds=older_than_s)
    return list(
        session.scalars(
            select(LadderSet.match_id)
            .join(Match, Match.id == LadderSet.match_id)
            .where(
                LadderSet.rating == SetRating.PENDING,
                Match.status.in_(DONE),
                Match.finished_at.is_not(None),
                Match.finished_at < cutoff,
            )
            .order_by(LadderSet.match_id)
            .limit(limit)
        )
    )


def pending_comparisons(session: Session, *, limit: int = 500) -> list[int]:
    """Comparison sets stored whose pair has not been folded yet (reads only)."""
    return list(
        session.scalars(
            select(LadderSet.match_id)
            .join(MatchResult, MatchResult.match_id == LadderSet.match_id)
            .where(LadderSet.kind == "comparison", LadderSet.rated_at.is_(None))
            .order_by(LadderSet.match_id)
            .limit(limit)
        )
    )
