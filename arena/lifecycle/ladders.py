"""The ladder state machines: a ladder, its entries, its sets and their one rating each
(docs/ladder.md).

::

    ladder   active --close--> closed
    entry    active <--pause/resume--> paused --withdraw--> withdrawn
             active|paused --a new version passed its check--> replaced
    set      pending --rate_set--> rated | unrated | void      (comparison: never rated)

A ladder's sets are the matches of its tournament (format ``ladder``), formed by
:func:`form_sets` from the tables of a tick (:func:`arena.sources.ladder.form_tables`); each
carries its own seed commitment (``ladder_sets``: the deal is drawn when the set is formed
and shown once it is stored). A stored set is rated once by :func:`rate_set`: its row is
locked and compared-and-set ``pending -> rated``, then its entries' rows are locked in
ascending id order (no deadlock between two sets sharing entries), so a set stored, delivered
or rated twice moves every rating once. Each public function is a transaction of its own (it
commits, or rolls back and raises) unless it says otherwise.
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
    Account,
    Bot,
    Ladder,
    LadderEntry,
    LadderFit,
    LadderMember,
    LadderPair,
    LadderRating,
    LadderSet,
    Match,
    MatchResult,
    MatchSeat,
    Tournament,
    utcnow,
)
from arena.lifecycle.base import (
    DONE,
    BotStatus,
    Conflict,
    MatchStatus,
    NotFound,
    TournamentStatus,
    aware,
    is_postgresql,
    lock_or_404,
    locked,
    rows_changed,
)
from arena.sources.ladder import LadderConfig, pair
from arena.status import (
    EntryStatus,
    LadderStatus,
    ParStatus,
    PausedBy,
    SetRating,
    TournamentFormat,
)

#: Entry statuses that hold a place in the ladder (counted by the per-account cap).
HELD = (EntryStatus.ACTIVE, EntryStatus.PAUSED)


def create_ladder(
    session: Session,
    *,
    owner_id: int,
    name: str,
    ruleset: str,
    options: dict[str, Any],
    time_rules: dict[str, float],
    max_faults: int,
    config: LadderConfig,
    open_ladder: bool,
    description: str = "",
    members: Sequence[int] = (),
) -> Ladder:
    """Store a new ladder (``active``) with its tournament (format ``ladder``, ``running``:
    it holds the ladder's rules and its sets) and its house entries; commit. ``open_ladder``:
    the one open ladder of ``ruleset`` (any ready bot may enter), else a private ladder whose
    ``members`` (account ids; the owner is one) enter and read it.

    Raises:
        Conflict: ``ruleset`` already has an open ladder.
    """
    now = utcnow()
    t = Tournament(
        name=name,
        organizer_id=owner_id,
        ruleset=ruleset,
        options=dict(options),
        time_rules=dict(time_rules),
        games_per_pairing=1,
        max_faults=max_faults,
        fill_with_house_bots=config.fill_with_house_bots,
        house_bot=config.house_bots[0] if config.house_bots else "heuristic",
        public_when_finished=open_ladder,
        status=TournamentStatus.RUNNING,
        format=TournamentFormat.LADDER.value,
        separate_owners=True,
        started_at=now,
    )
    session.add(t)
    ladder = Ladder(
        name=name,
        ruleset=ruleset,
        tournament=t,
        owner_id=owner_id,
        open_ruleset=ruleset if open_ladder else None,
        status=LadderStatus.ACTIVE,
        description=description,
        config=config.to_dict(),
    )
    session.add(ladder)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"{ruleset} already has an open ladder") from None
    for house in config.house_bots:
        session.add(
            LadderEntry(
                ladder_id=ladder.id,
                house_bot=house,
                status=EntryStatus.HOUSE,
                mu=ladder_ratings.MU0,
                sigma=ladder_ratings.SIGMA0,
            )
        )
    for account_id in {owner_id, *members}:
        session.add(LadderMember(ladder_id=ladder.id, account_id=account_id))
    session.commit()
    return ladder


def close_ladder(session: Session, ladder_id: int) -> Ladder:
    """``active -> closed``: no tick forms a set of it any more (the sets playing end as they
    are); commit.

    Raises:
        NotFound, Conflict: no such ladder; already closed.
    """
    ladder = lock_or_404(session, Ladder, ladder_id, "ladder")
    if ladder.status != LadderStatus.ACTIVE:
        session.rollback()
        raise Conflict(f"ladder {ladder_id} is {ladder.status}")
    ladder.status = LadderStatus.CLOSED
    ladder.closed_at = utcnow()
    ladder.open_ruleset = None
    session.commit()
    return ladder


def add_member(session: Session, ladder_id: int, account_id: int) -> bool:
    """Let ``account_id``'s bots enter the private ladder; commit. False if already a member."""
    if session.get(LadderMember, (ladder_id, account_id)) is not None:
        return False
    session.add(LadderMember(ladder_id=ladder_id, account_id=account_id))
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        return False
    return True


def enter(session: Session, ladder: Ladder, bot: Bot, *, max_concurrent: int, max_sets_per_hour: int) -> LadderEntry:
    """Enter ``bot`` (ready, of the ladder's rule set: the caller checks) in ``ladder``, or
    bring back its withdrawn entry (its rating kept); commit. The owner's account row is
    written first, so concurrent entries count one by one against the cap.

    Raises:
        Conflict: the ladder is closed; the bot is already entered (active or paused) or was
            replaced by a new version; its owner holds the ladder's
            ``max_entries_per_account`` entries.
    """
    cfg = LadderConfig.from_dict(ladder.config)
    if ladder.status != LadderStatus.ACTIVE:
        raise Conflict(f"ladder {ladder.id} is {ladder.status}")
    session.execute(update(Account).where(Account.id == bot.owner_id).values(role=Account.role))
    held = session.scalar(
        select(func.count())
        .select_from(LadderEntry)
        .where(LadderEntry.ladder_id == ladder.id, LadderEntry.owner_id == bot.owner_id, LadderEntry.status.in_(HELD))
    )
    entry = session.scalar(select(LadderEntry).where(LadderEntry.ladder_id == ladder.id, LadderEntry.bot_id == bot.id))
    if entry is not None and entry.status in HELD:
        session.rollback()
        raise Conflict(f"bot {bot.id} is already entered in ladder {ladder.id} ({entry.status})")
    if entry is not None and entry.status == EntryStatus.REPLACED:
        session.rollback()
        raise Conflict(f"bot {bot.id} was replaced by a new version in ladder {ladder.id}")
    if (held or 0) >= cfg.max_entries_per_account:
        session.rollback()
        raise Conflict(
            f"an account holds at most {cfg.max_entries_per_account} entries in ladder {ladder.id}: "
            "withdraw one before entering another"
        )
    if entry is None:
        entry = LadderEntry(
            ladder_id=ladder.id,
            bot_id=bot.id,
            owner_id=bot.owner_id,
            mu=ladder_ratings.MU0,
            sigma=ladder_ratings.SIGMA0,
        )
        session.add(entry)
    entry.status = EntryStatus.ACTIVE
    entry.paused_by = entry.paused_reason = None
    entry.pause = None
    entry.paused_at = None
    entry.max_concurrent = max_concurrent
    entry.max_sets_per_hour = max_sets_per_hour
    try:
        session.commit()
    except IntegrityError:  # entered concurrently (the unique ladder/bot pair)
        session.rollback()
        raise Conflict(f"bot {bot.id} is already entered in ladder {ladder.id}") from None
    return entry


def _lock_entry(session: Session, entry_id: int) -> LadderEntry:
    return lock_or_404(session, LadderEntry, entry_id, "ladder entry")


#: Why an entry is paused (``ladder_entries.pause``: ``{"code": ..., **params}``), each with the
#: English sentence of ``paused_reason`` (the pages translate by the code and its parameters).
PAUSE_REASONS = {
    "owner": "paused by its owner",
    "forfeits": "forfeited {n} of its last {window} sets ({bar} faults, or no valid answer, in a set)",
    "probe": "health probe failed: {error}",
}


def pause(session: Session, entry_id: int, *, by: PausedBy, code: str = "owner", **params: Any) -> LadderEntry:
    """``active -> paused`` by its owner or by the health rule, with why (``code`` of
    :data:`PAUSE_REASONS` and its ``params``) and the time; commit. A paused entry is never
    seated; its sets playing now end as they are.

    Raises:
        NotFound, Conflict: no such entry; not active.
    """
    entry = _lock_entry(session, entry_id)
    if entry.status != EntryStatus.ACTIVE:
        session.rollback()
        raise Conflict(f"ladder entry {entry_id} is {entry.status}")
    _pause(entry, by, code, **params)
    session.commit()
    return entry


def _pause(entry: LadderEntry, by: PausedBy, code: str, **params: Any) -> None:
    entry.status = EntryStatus.PAUSED
    entry.paused_by = by.value
    entry.pause = {"code": code, **params}
    entry.paused_reason = PAUSE_REASONS[code].format(**params)[:500]
    entry.paused_at = utcnow()


def resume(session: Session, entry_id: int) -> LadderEntry:
    """``paused -> active``; commit. An entry paused by the health rule comes back only once
    its bot passed a check after the pause (the check's pass resumes it by itself:
    :func:`after_check_passed`).

    Raises:
        NotFound, Conflict: no such entry; not paused; paused by the health rule and no check
            passed since.
    """
    entry = _lock_entry(session, entry_id)
    if entry.status != EntryStatus.PAUSED:
        session.rollback()
        raise Conflict(f"ladder entry {entry_id} is {entry.status}")
    if entry.paused_by == PausedBy.HEALTH:
        bot = session.get(Bot, entry.bot_id) if entry.bot_id is not None else None
        passed = bot is not None and bot.status == BotStatus.READY and _after(bot.last_check_at, entry.paused_at)
        if not passed:
            session.rollback()
            raise Conflict(
                f"ladder entry {entry_id} was paused by the ladder ({entry.paused_reason}): "
                "it comes back after its bot passes a check"
            )
    _activate(entry)
    session.commit()
    return entry


def _after(a: datetime | None, b: datetime | None) -> bool:
    a, b = aware(a), aware(b)
    return a is not None and (b is None or a > b)


def _activate(entry: LadderEntry) -> None:
    entry.status = EntryStatus.ACTIVE
    entry.paused_by = entry.paused_reason = None
    entry.pause = None
    entry.paused_at = None
    entry.fault_streak = 0
    entry.forfeits = 0


def withdraw(session: Session, entry_id: int) -> LadderEntry:
    """``active|paused -> withdrawn``: never seated again (its rating and history stay; its
    sets playing now end as they are); commit.

    Raises:
        NotFound, Conflict: no such entry; not active or paused.
    """
    entry = _lock_entry(session, entry_id)
    if entry.status not in HELD:
        session.rollback()
        raise Conflict(f"ladder entry {entry_id} is {entry.status}")
    entry.status = EntryStatus.WITHDRAWN
    session.commit()
    return entry


def withdraw_bot(session: Session, bot_id: int) -> int:
    """Every entry of ``bot_id`` that holds a place becomes ``withdrawn`` (the bot is deleted),
    inside the caller's transaction (no commit). Returns how many."""
    rows = session.execute(
        update(LadderEntry)
        .where(LadderEntry.bot_id == bot_id, LadderEntry.status.in_(HELD))
        .values(status=EntryStatus.WITHDRAWN)
    )
    return int(getattr(rows, "rowcount", 0) or 0)


def record_probe(session: Session, entry_id: int, ok: bool, error: str | None = None) -> bool:
    """Record a health probe of an entry's HTTP bot (``probed_at``, ``probe_ok``); a failed
    probe of an active entry pauses it (the health rule: back after a passing check); commit.
    Returns True if this call paused the entry."""
    entry = locked(session, LadderEntry, entry_id)
    if entry is None:
        session.rollback()
        return False
    entry.probed_at = utcnow()
    entry.probe_ok = ok
    paused = not ok and entry.status == EntryStatus.ACTIVE
    if paused:
        _pause(entry, PausedBy.HEALTH, "probe", error=(error or "no answer")[:300])
    session.commit()
    return paused


def after_check_passed(session: Session, bot: Bot) -> None:
    """What a passed check changes on the ladders, inside the caller's transaction (no commit):
    the bot's entries paused by the health rule come back (``active``); a new version
    (``bot.parent_id``) takes the place of its parent in every ladder where the parent holds
    one and whose rule set it plays (:func:`promote_version`)."""
    now = utcnow()
    for entry in session.scalars(
        select(LadderEntry).where(
            LadderEntry.bot_id == bot.id,
            LadderEntry.status == EntryStatus.PAUSED,
            LadderEntry.paused_by == PausedBy.HEALTH,
        )
    ):
        if _after(now, entry.paused_at):
            _activate(entry)
    session.execute(update(LadderEntry).where(LadderEntry.bot_id == bot.id).values(probe_ok=True, probed_at=now))
    if bot.parent_id is not None:
        promote_version(session, bot)


def promote_version(session: Session, bot: Bot) -> list[LadderEntry]:
    """``bot`` (a new version: ``parent_id``) takes its parent's place in each ladder where the
    parent holds one (active or paused) and whose rule set ``bot`` plays: a new entry, active,
    from the parent's mean with the uncertainty reset (sigma of a new entry), ``compare``
    opened (the ticks play it and its parent on identical deals); the parent's entry becomes
    ``replaced``. Inside the caller's transaction (no commit); returns the new entries.
    Idempotent: a ladder where ``bot`` is already entered is left as it is."""
    made: list[LadderEntry] = []
    parents = session.scalars(
        select(LadderEntry)
        .join(Ladder, Ladder.id == LadderEntry.ladder_id)
        .where(
            LadderEntry.bot_id == bot.parent_id,
            LadderEntry.status.in_(HELD),
            Ladder.status == LadderStatus.ACTIVE,
        )
        .order_by(LadderEntry.id)
    ).all()
    for parent in parents:
        ladder = session.get(Ladder, parent.ladder_id)
        assert ladder is not None
        if ladder.ruleset not in bot.rulesets:
            continue
        mine = session.scalar(
            select(LadderEntry).where(LadderEntry.ladder_id == ladder.id, LadderEntry.bot_id == bot.id)
        )
        if mine is not None:
            continue
        child = LadderEntry(
            ladder_id=ladder.id,
            bot_id=bot.id,
            owner_id=bot.owner_id,
            status=EntryStatus.ACTIVE,
            mu=parent.mu,
            sigma=ladder_ratings.SIGMA0,
            parent_entry_id=parent.id,
            max_concurrent=parent.max_concurrent,
            max_sets_per_hour=parent.max_sets_per_hour,
            compare={"parent_entry": parent.id, "sets": 0, "sum": 0.0, "sumsq": 0.0},
        )
        session.add(child)
        parent.status = EntryStatus.REPLACED
        made.append(child)
    session.flush()
    return made


# -- sets ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedSet:
    """A set a tick forms: the entry id per seat, and, for a comparison set, the key that
    pairs it with its twin (the same ``deal`` seed)."""

    entries: tuple[int, ...]
    kind: str = "rated"
    twin_key: int | None = None


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
    ladder = locked(session, Ladder, ladder_id)
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


def set_commitment(session: Session, match_id: int) -> str | None:
    """The seed commitment of a ladder set (None: the match is not one)."""
    return session.scalar(select(LadderSet.commitment).where(LadderSet.match_id == match_id))


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
            _pause(e, PausedBy.HEALTH, "forfeits", n=recent, window=cfg.fault_window, bar=bar)
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


def entry_of(session: Session, ladder_id: int, bot_id: int) -> LadderEntry:
    """The entry of ``bot_id`` in ``ladder_id``.

    Raises:
        NotFound: the bot has no entry there.
    """
    entry = session.scalar(select(LadderEntry).where(LadderEntry.ladder_id == ladder_id, LadderEntry.bot_id == bot_id))
    if entry is None:
        raise NotFound(f"bot {bot_id} is not entered in ladder {ladder_id}")
    return entry


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


__all__ = [
    "HELD",
    "PAUSE_REASONS",
    "PlannedSet",
    "Rated",
    "NotFound",
    "add_comparison",
    "add_member",
    "after_check_passed",
    "close_ladder",
    "create_ladder",
    "enter",
    "entry_of",
    "form_sets",
    "pause",
    "pending_comparisons",
    "promote_version",
    "rate_set",
    "record_probe",
    "resume",
    "set_commitment",
    "store_fit",
    "unrated_sets",
    "withdraw",
    "withdraw_bot",
]
