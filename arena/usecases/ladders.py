"""Ladder use cases: create, list, read, enter, pause, resume, withdraw, close; the tick that
forms sets; the health probes (docs/ladder.md).

Access: anyone reads an open ladder; a private ladder is read and entered by its members and
organizers only (to others it does not exist: :class:`~arena.lifecycle.NotFound`). Organizers
create ladders; an entry is acted on by its bot's owner (organizers may pause or withdraw
any). Status changes are :mod:`arena.lifecycle.ladders`'.

The tick (:func:`tick`, run by Celery beat every ``ARENA_LADDER_TICK_S`` seconds,
:mod:`worker.beat`) runs :func:`arena.matchmaking.tick_ladder` for each active ladder and sends
the sets it formed to the workers (a tick is safe to run twice; matchmaking itself:
:mod:`arena.matchmaking`).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session, sessionmaker

import engine
from arena import batchfit, ladderboard, lifecycle
from arena.access import is_organizer
from arena.db.models import Account, Bot, Ladder, LadderEntry, LadderMember, LadderPair, utcnow
from arena.lifecycle import ladder_sets as set_states
from arena.lifecycle import ladders as ladder_states
from arena.limits import BoundsError, check_match_bounds
from arena.matchmaking import (
    COMPARE_SETS,
    Online,
    TickReport,
    available,
    comparing,
    healthy,
    probes_due,
    redis_online,
    refill,
    tick_ladder,
    tick_number,
)
from arena.sources.ladder import ConfigError, LadderConfig
from arena.status import BotStatus, LadderStatus, PausedBy
from arena.usecases import Forbidden, InvalidField

log = logging.getLogger("arena.ladder")


# -- access -----------------------------------------------------------------------------------
def is_member(session: Session, viewer: Account | None, ladder: Ladder) -> bool:
    """True if ``viewer`` may read ``ladder``: an open one, anyone; a private one, its members
    and organizers."""
    if ladder.open_ruleset is not None:
        return True
    if viewer is None:
        return False
    if is_organizer(viewer):
        return True
    return session.get(LadderMember, (ladder.id, viewer.id)) is not None


def is_public(ladder: Ladder) -> bool:
    """An open ladder: its table, sets, logs and entrants' profiles are public."""
    return ladder.open_ruleset is not None


def ladder_for(session: Session, viewer: Account | None, ladder_id: int) -> Ladder:
    """The ladder if ``viewer`` may read it.

    Raises:
        NotFound: no such ladder, or a private one ``viewer`` is not a member of.
    """
    ladder = session.get(Ladder, ladder_id)
    if ladder is None or not is_member(session, viewer, ladder):
        raise lifecycle.NotFound(f"ladder {ladder_id} not found")
    return ladder


def list_ladders(session: Session, viewer: Account | None) -> list[Ladder]:
    """The ladders ``viewer`` may read, open ones first, then by id (closed ones last)."""
    stmt = select(Ladder)
    if viewer is None:
        stmt = stmt.where(Ladder.open_ruleset.is_not(None))
    elif not is_organizer(viewer):
        member = select(LadderMember.ladder_id).where(LadderMember.account_id == viewer.id)
        stmt = stmt.where(or_(Ladder.open_ruleset.is_not(None), Ladder.id.in_(member)))
    rows = list(session.scalars(stmt.order_by(Ladder.id)))
    return sorted(rows, key=lambda ld: (ld.status != LadderStatus.ACTIVE, ld.open_ruleset is None, ld.id))


# -- organizers -------------------------------------------------------------------------------
def create_ladder(
    session: Session,
    account: Account,
    *,
    name: str,
    ruleset: str,
    options: dict[str, Any],
    time_rules: dict[str, float],
    max_faults: int = 3,
    config: Mapping[str, Any] | None = None,
    open_ladder: bool = False,
    description: str = "",
    members: Sequence[int] = (),
) -> Ladder:
    """Create a ladder (``active``) of ``ruleset``; commit. ``open_ladder``: the rule set's one
    open ladder (any ready bot enters; everything public), else a private ladder of
    ``members`` (account ids) and its owner. ``config``: the matchmaking knobs
    (:class:`arena.sources.ladder.LadderConfig`, defaults for missing keys).

    Raises:
        Forbidden: not an organizer.
        InvalidField: ``ruleset``, ``options`` (or the bound they pass), ``config.<key>`` or
            ``members`` refused.
        Conflict: the rule set already has an open ladder.
    """
    if not is_organizer(account):
        raise Forbidden("organizer role required")
    if ruleset not in engine.RULESETS:
        raise InvalidField("ruleset", f"one of {', '.join(engine.RULESETS)}")
    try:
        normalized = engine.make_options(ruleset, options).to_dict()
        check_match_bounds(ruleset, options)
    except engine.OptionsError as exc:
        raise InvalidField("options", str(exc)) from None
    except BoundsError as exc:
        raise InvalidField(exc.field, str(exc)) from None
    try:
        cfg = LadderConfig.from_dict(config)
    except ConfigError as exc:
        raise InvalidField(f"config.{exc.key}", str(exc)) from None
    known = set(session.scalars(select(Account.id).where(Account.id.in_(list(members)))))
    missing = [m for m in members if m not in known]
    if missing:
        raise InvalidField("members", f"no account {missing[0]}")
    return ladder_states.create_ladder(
        session,
        owner_id=account.id,
        name=name,
        ruleset=ruleset,
        options=normalized,
        time_rules=dict(time_rules),
        max_faults=max_faults,
        config=cfg,
        open_ladder=open_ladder,
        description=description,
        members=list(members),
    )


def owned_ladder(session: Session, account: Account, ladder_id: int) -> Ladder:
    """A ladder its owner (or an organizer) acts on.

    Raises:
        NotFound: no such ladder (or not readable); Forbidden: neither its owner nor an organizer.
    """
    ladder = ladder_for(session, account, ladder_id)
    if ladder.owner_id != account.id and not is_organizer(account):
        raise Forbidden(f"ladder {ladder_id} belongs to another account")
    return ladder


def close_ladder(session: Session, account: Account, ladder_id: int) -> Ladder:
    """Close a ladder (no new set). Raises: see :func:`owned_ladder`; Conflict: already closed."""
    owned_ladder(session, account, ladder_id)
    return ladder_states.close_ladder(session, ladder_id)


def add_member(session: Session, account: Account, ladder_id: int, member_id: int) -> bool:
    """Let ``member_id``'s bots enter a private ladder. Raises: see :func:`owned_ladder`;
    InvalidField: no such account (``account_id``)."""
    owned_ladder(session, account, ladder_id)
    if session.get(Account, member_id) is None:
        raise InvalidField("account_id", f"no account {member_id}")
    return ladder_states.add_member(session, ladder_id, member_id)


# -- contestants ------------------------------------------------------------------------------
def _own_bot(session: Session, account: Account, bot_id: int) -> Bot:
    bot = session.get(Bot, bot_id)
    if bot is None or bot.status == BotStatus.DELETED:
        raise InvalidField("bot_id", f"bot {bot_id} does not exist")
    if bot.owner_id != account.id:
        raise Forbidden(f"bot {bot_id} belongs to another account")
    return bot


def enter_ladder(
    session: Session,
    account: Account,
    ladder_id: int,
    bot_id: int,
    *,
    max_concurrent: int = 1,
    max_sets_per_hour: int = 30,
) -> LadderEntry:
    """Enter the owner's ready bot in a ladder it may read (a withdrawn entry comes back with
    its rating); commit. ``max_concurrent``/``max_sets_per_hour``: the most sets at once and
    per hour the owner lets the ladder ask of the bot (within the ladder's limits).

    Raises:
        NotFound: no such ladder (or not readable).
        Forbidden: another account's bot.
        InvalidField: ``bot_id`` missing, not ``ready`` or not playing the ladder's rule set;
            ``max_concurrent`` or ``max_sets_per_hour`` above the ladder's limits.
        Conflict: see :func:`arena.lifecycle.ladders.enter`.
    """
    ladder = ladder_for(session, account, ladder_id)
    bot = _own_bot(session, account, bot_id)
    if ladder.ruleset not in bot.rulesets:
        raise InvalidField("bot_id", f"bot {bot_id} does not play {ladder.ruleset}")
    if bot.status != BotStatus.READY:
        raise InvalidField("bot_id", f"bot {bot_id} has not passed its check (status {bot.status})")
    cfg = LadderConfig.from_dict(ladder.config)
    if not 1 <= max_concurrent <= cfg.max_concurrent:
        raise InvalidField("max_concurrent", f"from 1 to {cfg.max_concurrent} in this ladder")
    if not 1 <= max_sets_per_hour <= cfg.max_sets_per_hour:
        raise InvalidField("max_sets_per_hour", f"from 1 to {cfg.max_sets_per_hour} in this ladder")
    return ladder_states.enter(session, ladder, bot, max_concurrent=max_concurrent, max_sets_per_hour=max_sets_per_hour)


def entry_for(session: Session, account: Account, ladder_id: int, bot_id: int) -> LadderEntry:
    """The entry of ``bot_id`` in a ladder, for its owner (or an organizer).

    Raises:
        NotFound: no such ladder or entry; Forbidden: another account's bot.
    """
    ladder_for(session, account, ladder_id)
    entry = ladder_states.entry_of(session, ladder_id, bot_id)
    if entry.owner_id != account.id and not is_organizer(account):
        raise Forbidden(f"bot {bot_id} belongs to another account")
    return entry


def pause_entry(session: Session, account: Account, ladder_id: int, bot_id: int) -> LadderEntry:
    """Pause the bot's entry (never seated until resumed). Raises: see :func:`entry_for`;
    Conflict: not active."""
    entry = entry_for(session, account, ladder_id, bot_id)
    return ladder_states.pause(session, entry.id, by=PausedBy.OWNER)


def resume_entry(session: Session, account: Account, ladder_id: int, bot_id: int) -> LadderEntry:
    """Resume a paused entry. Raises: see :func:`entry_for`; Conflict: not paused, or paused by
    the health rule with no check passed since (:func:`arena.lifecycle.ladders.resume`)."""
    entry = entry_for(session, account, ladder_id, bot_id)
    return ladder_states.resume(session, entry.id)


def withdraw_entry(session: Session, account: Account, ladder_id: int, bot_id: int) -> LadderEntry:
    """Withdraw the bot from the ladder (its rating and history stay). Raises: see
    :func:`entry_for`; Conflict: already withdrawn or replaced."""
    entry = entry_for(session, account, ladder_id, bot_id)
    return ladder_states.withdraw(session, entry.id)


# -- the tick ---------------------------------------------------------------------------------
def tick(
    sessions: sessionmaker[Session],
    send: Callable[[list[int]], object],
    *,
    tick_s: int,
    probe_s: int,
    online: Online,
    now: datetime | None = None,
    rng: random.Random | None = None,
) -> list[TickReport]:
    """One tick of every active ladder: form its sets (:func:`tick_ladder`), then ``send`` them
    to the workers (a set not sent stays ``queued``: the reaper sends it). Returns a report
    per ladder."""
    now = now or utcnow()
    number = tick_number(now, tick_s)
    rng = rng or random.SystemRandom()
    reports = []
    with sessions() as s:
        ladder_ids = list(s.scalars(select(Ladder.id).where(Ladder.status == LadderStatus.ACTIVE).order_by(Ladder.id)))
    for ladder_id in ladder_ids:
        start = time.perf_counter()
        with sessions() as s:
            ladder = s.get(Ladder, ladder_id)
            if ladder is None or ladder.status != LadderStatus.ACTIVE:
                continue
            report = tick_ladder(s, ladder, number, now=now, online=online, rng=rng, probe_s=probe_s)
        if report.formed:
            try:
                send(report.formed)
            except Exception as exc:  # noqa: BLE001 - the broker is down: the reaper sends them
                log.warning("ladder %s: %d sets not sent now (%s)", ladder_id, len(report.formed), exc)
        report.elapsed_ms = (time.perf_counter() - start) * 1000
        reports.append(report)
    return reports


# -- reads ------------------------------------------------------------------------------------
def online_entries(
    session: Session, ladder: Ladder, online: Online, probe_s: int, now: datetime | None = None
) -> set[int]:
    """The ids of the ladder's entries that can play now (:func:`available`)."""
    bots, _ = available(session, ladder, now or utcnow(), online, probe_s)
    return {e.id for e in bots}


def live_table(
    session: Session, viewer: Account | None, ladder_id: int, online: Online, probe_s: int
) -> tuple[Ladder, list[ladderboard.TableRow]]:
    """The ladder and its live table with who can play now (:func:`arena.ladderboard.table`).

    Raises:
        NotFound: see :func:`ladder_for`.
    """
    ladder = ladder_for(session, viewer, ladder_id)
    return ladder, ladderboard.table(session, ladder, online_entries(session, ladder, online, probe_s))


def ladder_sets(
    session: Session,
    viewer: Account | None,
    ladder_id: int,
    *,
    playing: bool,
    bot_id: int | None = None,
    limit: int = 20,
    before: int | None = None,
) -> list[ladderboard.SetRow]:
    """The ladder's sets playing now (``playing``), or done, newest first (of one bot's entry
    with ``bot_id``; ``before``: match ids below it, the next page).

    Raises:
        NotFound: see :func:`ladder_for`; ``bot_id`` not entered.
    """
    ladder = ladder_for(session, viewer, ladder_id)
    if playing:
        return ladderboard.playing(session, ladder, limit)
    entry_id = ladder_states.entry_of(session, ladder_id, bot_id).id if bot_id is not None else None
    return ladderboard.recent(session, ladder, entry_id=entry_id, limit=limit, before=before)


def entry_view(session: Session, viewer: Account | None, ladder_id: int, bot_id: int) -> LadderEntry:
    """A bot's entry in a ladder the viewer may read (public where the ladder is).

    Raises:
        NotFound: no such ladder (or not readable), or the bot is not entered.
    """
    ladder_for(session, viewer, ladder_id)
    return ladder_states.entry_of(session, ladder_id, bot_id)


def collusion_view(session: Session, account: Account, ladder_id: int) -> dict[str, list[dict[str, Any]]]:
    """The operators' integrity view of the last batch fit, organizers only: ``pairs`` whose
    results together differ from apart (collusion), ``recall`` entries that score better in a
    set's last game than in its first (they may remember the deal).

    Raises:
        Forbidden: not an organizer; NotFound: see :func:`ladder_for`.
    """
    if not is_organizer(account):
        raise Forbidden("organizer role required")
    ladder_for(session, account, ladder_id)
    fitted = ladderboard.official(session, ladder_id)
    if fitted is None:
        return {"pairs": [], "recall": []}
    return {"pairs": list(fitted.collusion), "recall": list(fitted.recall or [])}


# -- the official table -----------------------------------------------------------------------
def fit_ladder(session: Session, ladder_id: int) -> int:
    """Fit a ladder's official table from its pairs' sums (:func:`arena.batchfit.fit`) with its
    collusion view (:func:`arena.batchfit.collusion`) and store them; returns the sets behind it."""
    pairs = [
        batchfit.PairSums(p.a, p.b, p.sets, p.a_wins, p.res_a_sum, p.res_a_sumsq, p.res_b_sum, p.res_b_sumsq)
        for p in session.scalars(select(LadderPair).where(LadderPair.ladder_id == ladder_id))
    ]
    rows = list(session.scalars(select(LadderEntry).where(LadderEntry.ladder_id == ladder_id)))
    recalls = [batchfit.RecallSums(e.id, e.recall_n, e.recall_sum, e.recall_sumsq) for e in rows if e.bot_id]
    result = batchfit.fit(pairs)
    set_states.store_fit(
        session,
        ladder_id,
        sets=result.sets,
        table=result.table,
        matrix=result.matrix,
        collusion=batchfit.collusion(result, pairs),
        recall=batchfit.recall(recalls),
    )
    return result.sets


def fit_all(sessions: sessionmaker[Session]) -> int:
    """:func:`fit_ladder` of every active ladder; returns how many were fitted."""
    with sessions() as s:
        ids = list(s.scalars(select(Ladder.id).where(Ladder.status == LadderStatus.ACTIVE)))
    for ladder_id in ids:
        with sessions() as s:
            fit_ladder(s, ladder_id)
    return len(ids)


__all__ = [
    "COMPARE_SETS",
    "Online",
    "TickReport",
    "add_member",
    "available",
    "close_ladder",
    "collusion_view",
    "comparing",
    "create_ladder",
    "enter_ladder",
    "entry_for",
    "entry_view",
    "fit_all",
    "fit_ladder",
    "healthy",
    "is_member",
    "is_public",
    "ladder_for",
    "ladder_sets",
    "list_ladders",
    "live_table",
    "online_entries",
    "owned_ladder",
    "pause_entry",
    "probes_due",
    "redis_online",
    "refill",
    "resume_entry",
    "tick",
    "tick_ladder",
    "tick_number",
    "withdraw_entry",
]
