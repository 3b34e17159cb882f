"""Matchmaking of the ladders, one ladder at a time (docs/ladder.md, "The tick"): who can
play now, what each may start, and the sets a tick (or a refill) forms.

:func:`tick_ladder` is one tick of one ladder: under the ladder's row lock (two runs at once
take turns), it forms nothing while the ladder's oldest queued set waits longer than its
``behind_s``; else it reads the entries that can play now (:func:`available`), their load
(sets playing now, formed in the last hour), asks :func:`arena.sources.ladder.form_tables`
for tables and stores them (:func:`arena.lifecycle.ladder_sets.form_sets`). The beat runs it for
every ladder every ``ARENA_LADDER_TICK_S`` seconds (:func:`arena.usecases.ladders.tick`);
:func:`refill` runs it when a stored set frees its entries, with those entries first, so a
bot plays its next set at once instead of waiting for the next tick (once per stored set).
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import redis
from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session, sessionmaker

import engine
from arena import relay
from arena.db.models import Bot, Ladder, LadderEntry, LadderPair, LadderSet, Match, utcnow
from arena.lifecycle import ladder_sets
from arena.lifecycle.base import aware
from arena.sources.ladder import Candidate, LadderConfig, Pair, form_tables
from arena.status import UNFINISHED, BotStatus, BotTransport, EntryStatus, LadderStatus, MatchStatus

log = logging.getLogger("arena.ladder")

#: Comparison sets a new version plays with its parent (each a pair of sets on one deal).
COMPARE_SETS = 10


@dataclass
class TickReport:
    """What one tick did for one ladder: its number, the sets formed (match ids), why it
    formed none (``skipped``), the candidates it had, and its time in milliseconds."""

    ladder_id: int
    tick: int
    formed: list[int] = field(default_factory=list)
    skipped: str | None = None
    candidates: int = 0
    elapsed_ms: float = 0.0


#: Reads the presence of bots that dial out: bot ids -> the connected ones.
Online = Callable[[list[int]], set[int]]


def redis_online(client: redis.Redis | None) -> Online:
    """The connected bots among the given ids, read from the gateways' presence in Redis in
    one round trip (:func:`arena.relay.presence`); none when Redis cannot be read."""

    def online(bot_ids: list[int]) -> set[int]:
        if client is None or not bot_ids:
            return set()
        try:
            found = relay.presence(client, bot_ids)
        except (redis.RedisError, OSError) as exc:
            log.warning("presence not read (%s): no bot that dials out is seated this tick", type(exc).__name__)
            return set()
        return {b for b, p in found.items() if p.connections > 0}

    return online


def tick_number(now: datetime, tick_s: int) -> int:
    """The tick of ``now``: whole periods of ``tick_s`` seconds since the epoch (two runs
    in one period are the same tick)."""
    return int(now.timestamp() // max(1, tick_s))


def _behind(session: Session, ladder: Ladder, cfg: LadderConfig, now: datetime) -> float | None:
    """Seconds the ladder's oldest queued set has waited, if longer than ``behind_s``."""
    oldest = session.scalar(
        select(func.min(Match.queued_at)).where(
            Match.tournament_id == ladder.tournament_id, Match.status == MatchStatus.QUEUED
        )
    )
    oldest = aware(oldest)
    if oldest is None:
        return None
    waited = (now - oldest).total_seconds()
    return waited if waited > cfg.behind_s else None


def healthy(entry: LadderEntry, probe_s: int, now: datetime) -> bool:
    """An HTTP bot's entry may be seated: its last probe passed, and it is recent (within
    twice ``probe_s``), or it was never probed (it passed its check to enter)."""
    if not entry.probe_ok:
        return False
    probed = aware(entry.probed_at)
    return probed is None or (now - probed).total_seconds() <= 2 * probe_s


@dataclass
class _Load:
    playing: Counter[int]
    hour: Counter[int]
    recent: Counter[Pair]


def _load(session: Session, ladder: Ladder, now: datetime) -> _Load:
    """Sets playing now per entry, sets formed in the last hour per entry and per pair."""
    playing: Counter[int] = Counter()
    for (entries,) in session.execute(
        select(LadderSet.entries)
        .join(Match, Match.id == LadderSet.match_id)
        .where(Match.tournament_id == ladder.tournament_id, Match.status.in_(UNFINISHED))
    ):
        playing.update(set(entries))
    hour: Counter[int] = Counter()
    recent: Counter[Pair] = Counter()
    since = now - timedelta(hours=1)
    for (entries,) in session.execute(
        select(LadderSet.entries).where(LadderSet.ladder_id == ladder.id, LadderSet.created_at >= since)
    ):
        ids = sorted(set(entries))
        hour.update(ids)
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                recent[(a, b)] += 1
    return _Load(playing, hour, recent)


def _met(session: Session, ladder_id: int, ids: Iterable[int]) -> dict[Pair, int]:
    """Rated sets per pair among ``ids``."""
    wanted = list(ids)
    if len(wanted) < 2:
        return {}
    rows = session.execute(
        select(LadderPair.a, LadderPair.b, LadderPair.sets).where(
            LadderPair.ladder_id == ladder_id, LadderPair.a.in_(wanted), LadderPair.b.in_(wanted)
        )
    )
    return {(a, b): n for a, b, n in rows}


def available(
    session: Session,
    ladder: Ladder,
    now: datetime,
    online: Online,
    probe_s: int,
    *,
    entry_ids: Sequence[int] | None = None,
) -> tuple[list[LadderEntry], list[LadderEntry]]:
    """``(bot entries that can play now, house entries)``: active entries (or the entries
    ``entry_ids``, whatever their status) whose bot is ``ready`` and plays the rule set,
    reachable now (an HTTP bot :func:`healthy`, a bot that dials out connected to a gateway)."""
    stmt = (
        select(LadderEntry, Bot.status, Bot.transport, Bot.rulesets)
        .join(Bot, Bot.id == LadderEntry.bot_id)
        .where(LadderEntry.ladder_id == ladder.id)
    )
    if entry_ids is None:
        stmt = stmt.where(LadderEntry.status == EntryStatus.ACTIVE)
    else:
        stmt = stmt.where(LadderEntry.id.in_(list(entry_ids)))
    rows = session.execute(stmt).all()
    ready = [(e, transport) for e, status, transport, rs in rows if status == BotStatus.READY and ladder.ruleset in rs]
    connected = online([e.bot_id for e, t in ready if t == BotTransport.CONNECT and e.bot_id is not None])
    bots = [
        e
        for e, t in ready
        if (t == BotTransport.CONNECT and e.bot_id in connected)
        or (t != BotTransport.CONNECT and healthy(e, probe_s, now))
    ]
    if entry_ids is not None:
        return bots, []
    house = list(
        session.scalars(
            select(LadderEntry).where(LadderEntry.ladder_id == ladder.id, LadderEntry.status == EntryStatus.HOUSE)
        )
    )
    return bots, house


def _candidates(entries: Sequence[LadderEntry], load: _Load, now: datetime) -> list[Candidate]:
    out = []
    for e in entries:
        free = min(e.max_concurrent - load.playing[e.id], e.max_sets_per_hour - load.hour[e.id])
        last = aware(e.last_set_at)
        out.append(
            Candidate(
                entry_id=e.id,
                owner_id=e.owner_id,
                mu=e.mu,
                sigma=e.sigma,
                sets=e.sets,
                free=max(0, free),
                idle_s=(now - last).total_seconds() if last is not None else None,
            )
        )
    return out


def _comparisons(
    children: Sequence[LadderEntry], cands: Mapping[int, Candidate], house: Sequence[LadderEntry], seats: int
) -> list[ladder_sets.PlannedSet]:
    """Twin sets of each new version still comparing with its parent, when both can play now
    (``cands``: the candidates, parents included): the same house opponents, the same deal
    (``twin_key``)."""
    if len(house) < seats - 1:
        return []
    out: list[ladder_sets.PlannedSet] = []
    for e in children:
        parent = int((e.compare or {})["parent_entry"])
        if cands.get(e.id) is None or cands[e.id].free < 1 or cands.get(parent) is None or cands[parent].free < 1:
            continue
        opponents = tuple(h.id for h in house[: seats - 1])
        out.append(ladder_sets.PlannedSet((e.id, *opponents), kind="comparison", twin_key=e.id))
        out.append(ladder_sets.PlannedSet((parent, *opponents), kind="comparison", twin_key=e.id))
    return out


def _parent(entry: LadderEntry) -> int:
    """The entry a new version replaced (its ``compare``'s ``parent_entry``)."""
    return int((entry.compare or {})["parent_entry"])


def comparing(entry: LadderEntry) -> bool:
    """A new version still playing comparison sets with its parent."""
    compare = entry.compare or {}
    return compare.get("parent_entry") is not None and int(compare.get("sets", 0)) < COMPARE_SETS


def tick_ladder(
    session: Session,
    ladder: Ladder,
    tick: int,
    *,
    now: datetime,
    online: Online,
    rng: random.Random,
    probe_s: int,
    anchors: Collection[int] | None = None,
    refill_of: int | None = None,
) -> TickReport:
    """One tick of one ladder (module docstring): the sets formed and stored (``queued``), in
    ``session`` (committed), not sent. The ladder's row is locked first (PostgreSQL): a tick
    and a refill of one ladder take turns, each reading what the other formed. A refill
    (``refill_of``: the done set; ``anchors``: its entries) forms tables around those entries
    only, and no comparison sets: the beat's tick forms them, so a refill leaves a new version
    that is still comparing with its parent free for them."""
    report = TickReport(ladder.id, tick)
    if ladder_sets.lock_ladder(session, ladder.id) is None:
        session.rollback()
        report.skipped = "no such ladder"
        return report
    cfg = LadderConfig.from_dict(ladder.config)
    waited = _behind(session, ladder, cfg, now)
    if waited is not None:
        session.rollback()
        report.skipped = f"the workers are behind: the oldest queued set waits {waited:.0f} s"
        return report
    seats = engine.SEATS[ladder.ruleset]
    bots, house = available(session, ladder, now, online, probe_s)
    if refill_of is not None and any(comparing(e) for e in bots):
        # a new version still comparing waits for the beat's tick (its twin sets need it free
        # there) while a twin set can come: its parent can play, and house entries oppose them
        ids = [_parent(e) for e in bots if comparing(e)] if len(house) >= seats - 1 else []
        waiting = {a.id for a in available(session, ladder, now, online, probe_s, entry_ids=ids)[0]} if ids else set()
        bots = [e for e in bots if not comparing(e) or _parent(e) not in waiting]
    children = [e for e in bots if comparing(e)] if refill_of is None else []
    parents, _ = (
        available(session, ladder, now, online, probe_s, entry_ids=[_parent(e) for e in children])
        if children
        else ([], [])
    )
    load = _load(session, ladder, now)
    cands = _candidates(bots, load, now)
    report.candidates = len(cands)
    compare = _comparisons(children, {c.entry_id: c for c in _candidates([*bots, *parents], load, now)}, house, seats)
    busy = Counter(x for p in compare for x in p.entries)
    pool = [replace(c, free=c.free - busy[c.entry_id]) for c in cands if c.free - busy[c.entry_id] > 0]
    house_cands = [_house_candidate(h) for h in house]
    tables = form_tables(
        pool,
        seats,
        cfg,
        recent=load.recent,
        met=_met(session, ladder.id, [c.entry_id for c in pool]),
        rng=rng,
        house=house_cands,
        anchors=anchors,
    )
    planned = [ladder_sets.PlannedSet(t) for t in tables] + compare
    report.formed = ladder_sets.form_sets(session, ladder.id, tick, planned, refill_of=refill_of)
    if not report.formed and planned:
        report.skipped = f"tick {tick} already formed its sets" if refill_of is None else "already refilled"
    return report


def refill(
    sessions: sessionmaker[Session],
    match_id: int,
    send: Callable[[list[int]], object],
    *,
    probe_s: int,
    online: Online,
    now: datetime | None = None,
    rng: random.Random | None = None,
) -> TickReport | None:
    """The next sets of the entries a done ladder set freed (module docstring), formed once
    per done set and sent with ``send`` (a set not sent stays ``queued``: the reaper sends
    it). None when ``match_id`` is not a set of an active ladder."""
    now = now or utcnow()
    with sessions() as s:
        row = s.get(LadderSet, match_id)
        ladder = s.get(Ladder, row.ladder_id) if row is not None else None
        if row is None or ladder is None or ladder.status != LadderStatus.ACTIVE or row.refilled:
            return None
        report = tick_ladder(
            s,
            ladder,
            ladder.last_tick or 0,
            now=now,
            online=online,
            rng=rng or random.SystemRandom(),
            probe_s=probe_s,
            anchors=set(row.entries),
            refill_of=match_id,
        )
    if report.formed:
        try:
            send(report.formed)
        except Exception as exc:  # noqa: BLE001 - the broker is down: the reaper sends them
            log.warning("ladder %s: %d sets not sent now (%s)", report.ladder_id, len(report.formed), exc)
    return report


def _house_candidate(h: LadderEntry) -> Candidate:
    return Candidate(entry_id=h.id, owner_id=None, mu=h.mu, sigma=h.sigma, sets=h.sets, free=1 << 30)


def probes_due(session: Session, *, probe_s: int, now: datetime, limit: int = 200) -> list[int]:
    """Active entries of HTTP bots whose last health probe is older than ``probe_s`` seconds
    (or never probed), oldest first (reads only); and the replaced parents of new versions
    still comparing with them (:func:`comparing`): the comparison sets seat a parent only
    while its probe is recent (:func:`healthy`)."""
    cutoff = now - timedelta(seconds=probe_s)
    parents = [
        _parent(e)
        for e in session.scalars(
            select(LadderEntry).where(
                LadderEntry.status == EntryStatus.ACTIVE, LadderEntry.parent_entry_id.is_not(None)
            )
        )
        if comparing(e)
    ]
    return list(
        session.scalars(
            select(LadderEntry.id)
            .join(Bot, Bot.id == LadderEntry.bot_id)
            .join(Ladder, Ladder.id == LadderEntry.ladder_id)
            .where(
                or_(
                    LadderEntry.status == EntryStatus.ACTIVE,
                    (LadderEntry.status == EntryStatus.REPLACED) & LadderEntry.id.in_(parents),
                ),
                Ladder.status == LadderStatus.ACTIVE,
                Bot.transport == BotTransport.HTTP,
                Bot.status == BotStatus.READY,
                or_(LadderEntry.probed_at.is_(None), LadderEntry.probed_at < cutoff),
            )
            .order_by(LadderEntry.probed_at.nulls_first(), LadderEntry.id)
            .limit(limit)
        )
    )
