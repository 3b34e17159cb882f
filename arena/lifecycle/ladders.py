"""The ladder state machines: a ladder and its entries (docs/ladder.md); its sets and their
one rating each: :mod:`arena.lifecycle.ladder_sets`.

::

    ladder   active --close--> closed
    entry    active <--pause/resume--> paused --withdraw--> withdrawn
             active|paused --a new version passed its check--> replaced

Each public function is a transaction of its own (it commits, or rolls back and raises)
unless it says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from arena import ladder_ratings
from arena.db.models import (
    Account,
    Bot,
    Ladder,
    LadderEntry,
    LadderMember,
    Tournament,
    utcnow,
)
from arena.lifecycle.base import (
    BotStatus,
    Conflict,
    NotFound,
    TournamentStatus,
    aware,
    lock_or_404,
    locked,
)
from arena.sources.ladder import LadderConfig
from arena.status import (
    EntryStatus,
    LadderStatus,
    PausedBy,
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
            ``max_entries_per_account`` entries; it was withdrawn while paused by the health
            rule and its bot has passed no check since (as :func:`resume`).
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
    if entry is not None and entry.paused_by == PausedBy.HEALTH and not _after(bot.last_check_at, entry.paused_at):
        session.rollback()  # withdrawn while the health rule held it: back only as resume() lets it
        raise Conflict(
            f"ladder entry {entry.id} was paused by the ladder ({entry.paused_reason}): "
            "it comes back after its bot passes a check"
        )
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
    if entry.paused_by == PausedBy.HEALTH:  # a check passed since: a fresh window, as resume()
        entry.fault_streak = entry.forfeits = 0
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
    mark_paused(entry, by, code, **params)
    session.commit()
    return entry


def mark_paused(entry: LadderEntry, by: PausedBy, code: str, **params: Any) -> None:
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
        mark_paused(entry, PausedBy.HEALTH, "probe", error=(error or "no answer")[:300])
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


def entry_of(session: Session, ladder_id: int, bot_id: int) -> LadderEntry:
    """The entry of ``bot_id`` in ``ladder_id``.

    Raises:
        NotFound: the bot has no entry there.
    """
    entry = session.scalar(select(LadderEntry).where(LadderEntry.ladder_id == ladder_id, LadderEntry.bot_id == bot_id))
    if entry is None:
        raise NotFound(f"bot {bot_id} is not entered in ladder {ladder_id}")
    return entry


__all__ = [
    "HELD",
    "PAUSE_REASONS",
    "NotFound",
    "add_member",
    "after_check_passed",
    "close_ladder",
    "create_ladder",
    "enter",
    "mark_paused",
    "entry_of",
    "pause",
    "promote_version",
    "record_probe",
    "resume",
    "withdraw",
    "withdraw_bot",
]
