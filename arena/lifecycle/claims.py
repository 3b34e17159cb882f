"""Claiming a match: the plan a delivery plays it with (seats, bots' endpoints and secrets,
time rules, seed), the lease it gets, and why a match is skipped instead.

:func:`claim_match` moves a match ``queued|pending|running -> running`` under a lease
(:mod:`arena.lifecycle.matches` gives the whole state machine, the leases' renewal and
reaping, and storing the result). Each public function is a transaction of its own (it
commits, or rolls back and raises) unless it says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload, undefer_group

import engine
from arena.crypto import EncryptionKeyError
from arena.db.models import (
    Account,
    Bot,
    LadderSet,
    Match,
    MatchResult,
    MatchSeat,
    Table,
    Tournament,
    utcnow,
)
from arena.lifecycle.base import (
    DONE,
    BotStatus,
    MatchStatus,
    TournamentStatus,
    aware,
    failure_text,
    is_postgresql,
    locked,
)
from arena.lifecycle.tournaments import finish_if_done
from arena.schedule import DEFAULT_HOUSE_BOT, HOUSE_BOTS
from arena.sources import MATCH, SET, duplicate_specs, unit_of
from arena.status import BotTransport, TournamentFormat
from engine.timebank import TimeRules


@dataclass(frozen=True)
class SeatPlan:
    """A seat of a claimed match: a bot (id, ``name#id``, URL, signing secret, and the
    previous secret while a rotation's grace period runs) or a house bot. ``withdrawn``: the
    bot was deleted; its seat forfeits without any request (no URL is given)."""

    seat: int
    bot_id: int | None
    #: A house seat's name: ``house-1``... in a tournament (every house seat plays the
    #: tournament's ``house_bot``), or the sample bot's own name in a ladder set (a ladder's
    #: house entries differ: :attr:`MatchPlan.sample_of`).
    house_bot: str | None
    name: str
    url: str | None
    secret: str | None
    previous_secret: str | None = None
    withdrawn: bool = False
    #: ``"http"`` (the arena calls ``url``) or ``"connect"`` (the bot dials out to a gateway; url "")
    transport: str = "http"
    #: The person playing the seat at a table (its account id; ``name``: the account's), else None.
    account_id: int | None = None


@dataclass(frozen=True)
class MatchPlan:
    """What a claimed match is to be played with (time rules in milliseconds inside
    :class:`~engine.timebank.TimeRules`); ``attempt`` counts claims, from 1; ``seed`` is the
    match seed (the attempt is played from :func:`arena.fairness.attempt_seed`);
    ``match_index`` its schedule position and ``commitment`` the tournament's (a ladder set's:
    its own), both recorded in the log; ``house_bot`` the sample bot its house seats play
    (the tournament's, a ``bots_sdk.samples.SAMPLE_BOTS`` name); ``unit`` its unit of play
    (:data:`arena.sources.MATCH`, or :data:`arena.sources.SET`: one deal in every seat
    rotation, :func:`arena.sources.duplicate_specs`, ``ladder_id`` its ladder)."""

    match_id: int
    tournament_id: int
    ruleset: str
    options: dict[str, Any]
    time_rules: TimeRules
    games: int
    seed: int
    max_faults: int
    attempt: int
    seats: tuple[SeatPlan, ...]
    match_index: int = 0
    commitment: str | None = None
    house_bot: str = DEFAULT_HOUSE_BOT
    unit: str = MATCH
    ladder_id: int | None = None
    #: The people's own time rules at a table (docs/tables.md), else None.
    person_time_rules: TimeRules | None = None

    def sample_of(self, seat: SeatPlan) -> str:
        """The sample bot a house seat plays: a ladder set and a table name it per seat, a
        tournament's house seats all play its ``house_bot``."""
        return seat.house_bot if seat.house_bot in HOUSE_BOTS else self.house_bot

    def game_specs(self, seed: int) -> list[dict[str, Any]] | None:
        """The games played from the attempt seed ``seed``: a set's rotations of one deal, or
        None for a match (the runner's default: a fresh deal per game)."""
        return duplicate_specs(self.ruleset, seed) if self.unit == SET else None


class SkipReason(StrEnum):
    """Why a delivered match is not played."""

    NO_SUCH_MATCH = "no such match"
    DONE = "already done"
    CANCELLED = "tournament cancelled"
    #: Another delivery holds a live lease on it: it is being played (never twice at once).
    LEASED = "being played"
    #: This worker cannot decrypt the bots' signing secrets (a wrong or missing
    #: ``ARENA_ENCRYPTION_KEYS``): the match is now ``failed`` with the reason.
    NO_KEY = "secrets not decrypted"


@dataclass(frozen=True)
class Claimed:
    """The match is now ``running`` for this delivery; play ``plan``."""

    plan: MatchPlan


@dataclass(frozen=True)
class Skipped:
    """The delivery must not play the match; ``tournament_id`` is None for an unknown match.
    ``message`` says why (for ``NO_KEY``: the failure reason stored on the match)."""

    reason: SkipReason
    message: str
    tournament_id: int | None
    ruleset: str | None


ClaimResult = Claimed | Skipped


def _games_per_match(t: Tournament) -> int:
    # Million Doubt plays games_per_pairing engine games in one match; the 4-player rule
    # sets play one engine game (a whole TM game / JDF match) per match.
    return t.games_per_pairing if engine.get_ruleset(t.ruleset).games_per_match_option else 1


def _lease_live(match: Match, now: datetime) -> bool:
    exp = aware(match.lease_expires_at)
    return exp is not None and exp > now


def _seconds(tr: dict[str, Any]) -> TimeRules:
    return TimeRules.from_seconds(
        float(tr.get("initial", 60.0)), float(tr.get("increment", 10.0)), float(tr.get("cap", 60.0))
    )


def _plan(session: Session, t: Tournament, match: Match, seats: list[SeatPlan]) -> MatchPlan:
    tr = t.time_rules or {}
    unit = unit_of(t.format)
    own = (
        session.scalar(select(Table.person_time_rules).where(Table.tournament_id == t.id))
        if t.format == TournamentFormat.TABLE
        else None
    )
    ladder = session.scalar(select(LadderSet).where(LadderSet.match_id == match.id)) if unit == SET else None
    return MatchPlan(
        match_id=match.id,
        tournament_id=t.id,
        ruleset=t.ruleset,
        options=dict(t.options or {}),
        time_rules=_seconds(tr),
        games=engine.SEATS[t.ruleset] if unit == SET else _games_per_match(t),
        seed=int(match.seed),
        max_faults=t.max_faults,
        attempt=match.attempts,
        seats=tuple(seats),
        match_index=match.index,
        commitment=ladder.commitment if ladder is not None else t.commitment,
        house_bot=t.house_bot,
        unit=unit,
        ladder_id=ladder.ladder_id if ladder is not None else None,
        person_time_rules=_seconds(own) if own else None,
    )


def claim_match(
    session: Session, match_id: int, *, owner: str | None = None, lease_s: float | None = None
) -> ClaimResult:
    """``queued|pending|running -> running`` for a delivery of match ``match_id``; commit.

    The match row is locked ``FOR UPDATE`` (a compare-and-set of the lease). A finished,
    cancelled or failed match, or one with a stored result, is skipped; a match of a
    cancelled tournament becomes ``cancelled`` and is skipped; a ``running`` match whose
    lease is still live is skipped (``LEASED``: another delivery plays it). Otherwise
    ``attempts`` grows by one, the lease goes to ``owner`` until now + ``lease_s`` seconds
    (no lease when ``lease_s`` is None) and the plan is returned.

    When the bots' signing secrets cannot be decrypted here (a wrong or missing
    ``ARENA_ENCRYPTION_KEYS``: :class:`arena.crypto.EncryptionKeyError`), the match is
    not played: it becomes ``failed`` with a reason naming the key problem and the worker
    (``owner``'s ``host:pid``), and is skipped (``NO_KEY``). Every worker of a deployment
    shares the key, so another worker would not do better; the organizer retries the match
    once the key is fixed (:func:`~arena.lifecycle.matches.retry_failed`).
    """
    stmt = select(Match).where(Match.id == match_id).options(selectinload(Match.seats))
    if is_postgresql(session):
        stmt = stmt.with_for_update(of=Match)
    match = session.scalars(stmt).first()
    if match is None:
        session.rollback()
        return Skipped(SkipReason.NO_SUCH_MATCH, f"no match {match_id}", None, None)
    t = session.get(Tournament, match.tournament_id)
    assert t is not None
    has_result = session.get(MatchResult, match_id) is not None
    if match.status in DONE or has_result:
        status = MatchStatus.FINISHED if has_result else match.status
        session.rollback()
        return Skipped(SkipReason.DONE, f"match {match_id} is {status}", t.id, t.ruleset)
    if t.status == TournamentStatus.CANCELLED:
        match.status = MatchStatus.CANCELLED
        match.lease_owner = match.lease_expires_at = None
        session.commit()
        return Skipped(SkipReason.CANCELLED, f"match {match_id}: tournament {t.id} is cancelled", t.id, t.ruleset)
    now = utcnow()
    if match.status == MatchStatus.RUNNING and _lease_live(match, now):
        session.rollback()
        return Skipped(SkipReason.LEASED, f"match {match_id} is being played (leased)", t.id, t.ruleset)
    try:
        seats = _seat_plans(session, match)
    except EncryptionKeyError as exc:
        session.rollback()
        where = (owner or "").rsplit(":", 1)[0] or "?"
        return _fail_unplayable(
            session,
            match_id,
            f"{exc}, on worker {where}: the match was not played; fix that worker's key, then retry the match",
        )
    match.status = MatchStatus.RUNNING
    match.attempts = (match.attempts or 0) + 1
    match.started_at = now
    match.lease_owner = owner
    match.lease_expires_at = None if lease_s is None else now + timedelta(seconds=lease_s)
    plan = _plan(session, t, match, seats)
    session.commit()
    return Claimed(plan)


def bot_endpoint(bot_id: int, transport: str, url: str | None) -> str:
    """The endpoint a bot's concurrency cap and endpoint claims are keyed by: its URL, or
    ``connect:bot:<id>`` for a bot that connects (it has no URL; each such bot is an endpoint
    of its own)."""
    return f"connect:bot:{bot_id}" if transport == BotTransport.CONNECT or url is None else url


def match_bot_urls(session: Session, match_id: int) -> list[str]:
    """The endpoints (:func:`bot_endpoint`: the URL, or ``connect:bot:<id>``) of the bots
    seated in match ``match_id`` that are not deleted, in seat order (read without a lock: for
    the endpoint claims taken before :func:`claim_match`, :mod:`arena.runner.claims`); empty
    for an unknown match. Ends the transaction."""
    rows = session.execute(
        select(Bot.id, Bot.transport, Bot.url)
        .join(MatchSeat, MatchSeat.bot_id == Bot.id)
        .where(MatchSeat.match_id == match_id, Bot.status != BotStatus.DELETED)
        .order_by(MatchSeat.seat)
    ).all()
    session.rollback()
    return [bot_endpoint(bot_id, transport, url) for bot_id, transport, url in rows]


def _seat_plans(session: Session, match: Match) -> list[SeatPlan]:
    """The seats of ``match`` with their bots' URLs and decrypted secrets (one query).

    Raises:
        arena.crypto.EncryptionKeyError: the secrets cannot be decrypted here.
    """
    bot_ids = [s.bot_id for s in match.seats if s.bot_id is not None]
    bots = {b.id: b for b in session.scalars(select(Bot).where(Bot.id.in_(bot_ids)).options(undefer_group("secrets")))}
    people = {s.account_id for s in match.seats if s.account_id is not None}
    names = (
        dict(session.execute(select(Account.id, Account.name).where(Account.id.in_(people))).all()) if people else {}
    )
    seats = []
    for s in match.seats:
        if s.account_id is not None:  # a person at a table
            seats.append(SeatPlan(s.seat, None, None, names[s.account_id], None, None, account_id=s.account_id))
        elif s.bot_id is not None:
            b = bots[s.bot_id]
            if b.status == BotStatus.DELETED:
                seats.append(SeatPlan(s.seat, b.id, None, f"{b.name}#{b.id}", None, None, withdrawn=True))
            else:
                seats.append(
                    SeatPlan(
                        s.seat,
                        b.id,
                        None,
                        f"{b.name}#{b.id}",
                        b.url,
                        b.secret,
                        b.grace_secret(),
                        transport=b.transport,
                    )
                )
        else:
            seats.append(SeatPlan(s.seat, None, s.house_bot, s.house_bot or "house", None, None))
    return seats


def _fail_unplayable(session: Session, match_id: int, reason: str) -> Skipped:
    """The ``NO_KEY`` end of :func:`claim_match`, in a transaction of its own: the match row
    locked again, and failed unless meanwhile done or leased by another delivery; commit."""
    match = locked(session, Match, match_id)
    assert match is not None  # claim_match found it; matches are never deleted
    t = session.get(Tournament, match.tournament_id)
    assert t is not None
    if match.status in DONE or session.get(MatchResult, match_id) is not None:
        session.rollback()
        return Skipped(SkipReason.DONE, f"match {match_id} is {match.status}", t.id, t.ruleset)
    if match.status == MatchStatus.RUNNING and _lease_live(match, utcnow()):
        session.rollback()
        return Skipped(SkipReason.LEASED, f"match {match_id} is being played (leased)", t.id, t.ruleset)
    failure = failure_text(reason, "")
    mark_failed(match, failure)
    session.flush()
    finish_if_done(session, t.id)
    session.commit()
    return Skipped(SkipReason.NO_KEY, failure, t.id, t.ruleset)


def mark_failed(match: Match, failure: str) -> None:
    """``-> failed`` with ``failure`` (its text), the lease dropped; the caller commits."""
    match.status = MatchStatus.FAILED
    match.failure = failure
    match.finished_at = utcnow()
    match.lease_owner = match.lease_expires_at = None
