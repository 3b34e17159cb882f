"""SQLAlchemy 2 models of Daifugo Arena (shared by ``api/`` and ``worker/``).

Tables
======
================== ===================================================================
``accounts``       contestants and organizers; API tokens stored as SHA-256 hex only,
                   with an optional expiry
``ui_sessions``    server-side sessions of the web pages (SHA-256 of the cookie value)
``bots``           a contestant's bot: endpoint URL, rule sets, signing secret, status,
                   last health/conformance check
``bot_checks``     one run of the bot check (arena.conformance): status, progress
                   per decision kind, result
``tournaments``    round-robin tournament: rule set, options, time rules (TIME-1, seconds),
                   games per pairing, seed, ``max_faults`` (FAULT-3), the house seats'
                   sample bot (``house_bot``), status, times
``tournament_participants`` the bots entered in a tournament
``matches``        one unit of play of a rule set, in schedule order (``index``), seeded
``match_seats``    seat -> bot (or a house sample bot, or a person at a table) of a match
``match_results``  the result of a match; ``match_id`` is the primary key, so a result
                   can be written once only (a second insert raises ``IntegrityError``)
``match_logs``     the full log of a match, gzip-compressed JSON, once per match
``ratings``        openskill Plackett-Luce rating per (rule set, bot)
``tables``         a table where people play (its tournament of format ``table``): who
                   sits where, the people's time rules, the class link (docs/tables.md)
``person_ratings`` the people's own pool: a rating per (rule set, account) from tables
================== ===================================================================

Times are timezone-aware UTC datetimes. JSON columns use JSONB on PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from arena.crypto import EncryptedText
from arena.schedule import DEFAULT_HOUSE_BOT
from arena.status import (
    BotStatus,
    BotTransport,
    CheckStatus,
    EntryStatus,
    LadderStatus,
    MatchStatus,
    ParStatus,
    PausedBy,
    SetRating,
    StopReason,
    TableKind,
    TournamentFormat,
    TournamentStatus,
    values,
)

#: JSON on every database, JSONB on PostgreSQL.
JSONType = JSON().with_variant(JSONB(), "postgresql")

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

ROLES = ("contestant", "organizer")


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def _in(column: str, allowed: type[StrEnum] | tuple[str, ...]) -> str:
    """The text of a ``CHECK`` constraint: ``column IN ('a', 'b')``, the values in order
    (for a status, its :mod:`arena.status` enum: the text the migrations created)."""
    names = allowed if isinstance(allowed, tuple) else values(allowed)
    return f"{column} IN ({', '.join(repr(v) for v in names)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: DateTime(timezone=True), dict[str, Any]: JSONType}


class Account(Base):
    __tablename__ = "accounts"
    __table_args__ = (CheckConstraint(_in("role", ROLES), name="role"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16), default="contestant")
    #: SHA-256 hex digest of the bearer token; the token itself is never stored.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    #: After this time the token is refused (401); None: no expiry.
    token_expires_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: Where the account hears of its bots' checks, entries while offline and tournaments'
    #: ends (a JSON POST, arena.webhooks; the bots' URL policy); None: nowhere.
    webhook_url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    #: The HMAC secret signing the webhook's requests (shown to the owner once), encrypted
    #: like a bot's; deferred: read only where a delivery is signed.
    webhook_secret: Mapped[str | None] = mapped_column(
        EncryptedText(), nullable=True, deferred=True, deferred_group="secrets"
    )
    #: The last delivery: ``{"event", "id", "at", "attempt", "status", "ok", "error"}``.
    webhook_last: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)

    bots: Mapped[list[Bot]] = relationship(back_populates="owner")


class UiSession(Base):
    """A signed-in web page session (``/ui``); logout deletes the row, which ends it."""

    __tablename__ = "ui_sessions"

    #: SHA-256 hex digest of the session cookie's random value.
    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column()


class Bot(Base):
    __tablename__ = "bots"
    __table_args__ = (
        CheckConstraint(_in("status", BotStatus), name="status"),
        CheckConstraint(_in("transport", BotTransport), name="transport"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="RESTRICT"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    #: ``http`` (the arena calls ``url``) or ``connect`` (the bot dials out; ``url`` is None),
    #: arena.status.BotTransport.
    transport: Mapped[str] = mapped_column(
        String(8), default=BotTransport.HTTP.value, server_default=BotTransport.HTTP.value
    )
    #: The URL the arena calls; None for a bot that connects.
    url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    #: Rule-set ids the bot plays, e.g. ``["million_doubt"]``.
    rulesets: Mapped[list[str]] = mapped_column(JSONType)
    #: HMAC signing secret shared with the bot (shown to the owner once, used by the worker);
    #: stored encrypted (arena.crypto), plain in Python. Deferred (group ``secrets``):
    #: loaded, and decrypted, only where it is read (a claim, a check, a rotation), so
    #: reading bots never needs the key (a lost key is then a 500 on those paths only).
    secret: Mapped[str] = mapped_column(EncryptedText(), deferred=True, deferred_group="secrets")
    #: The secret before the last rotation, still sent as a second signature until
    #: ``previous_secret_until`` (the grace period, arena.security.SECRET_GRACE_S).
    previous_secret: Mapped[str | None] = mapped_column(
        EncryptedText(), nullable=True, deferred=True, deferred_group="secrets"
    )
    previous_secret_until: Mapped[datetime | None] = mapped_column(nullable=True)
    #: ``unchecked`` (new or changed), ``checking`` (a check is queued or running), ``ready``
    #: (passed the check), ``failed``, ``deleted`` (arena.status.BotStatus).
    status: Mapped[str] = mapped_column(String(16), default=BotStatus.UNCHECKED.value)
    last_check_at: Mapped[datetime | None] = mapped_column(nullable=True)
    #: The owner's bot this one is a new version of (a ladder entry of the parent passes to
    #: it once its check passes: :func:`arena.lifecycle.ladders.promote_version`), else NULL.
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("bots.id", ondelete="SET NULL"), nullable=True)
    #: Outcome of the last check: ``{"ok", "health": {...}, "conformance": {...}}``.
    last_check: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    #: Its owner lets people play it at their tables (docs/tables.md); its owner always may.
    play_people: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    owner: Mapped[Account] = relationship(back_populates="bots")

    def grace_secret(self, now: datetime | None = None) -> str | None:
        """The previous secret while its grace period runs, else None."""
        if self.previous_secret is None or self.previous_secret_until is None:
            return None
        until = self.previous_secret_until
        if until.tzinfo is None:  # SQLite gives naive datetimes back
            until = until.replace(tzinfo=UTC)
        return self.previous_secret if (now or utcnow()) < until else None


class BotCheck(Base):
    """One run of the bot check (``POST /api/v1/bots/{id}/check``, the task ``arena.check_bot``).

    ``url`` and ``rulesets`` are the bot's at the time the check was asked: the outcome
    decides the bot's status only if they are still the bot's. ``previous_status`` is the
    bot's status before ``checking`` (restored when the check cannot be sent to a worker).
    ``progress``: ``{ruleset: {kind: {"asked": n, "faults": n}}}`` while it runs; ``result``:
    the outcome of :func:`arena.conformance.check_bot`. ``updated_at`` is the heartbeat.
    ``client``: who asked for it (:func:`arena.clients.client_key`), the key of the queue's fair
    order; ``run_by``: the id of the check whose task message runs it
    (:func:`arena.lifecycle.checks.claim_check`).
    """

    __tablename__ = "bot_checks"
    __table_args__ = (
        CheckConstraint(_in("status", CheckStatus), name="status"),
        Index("ix_bot_checks_bot_status", "bot_id", "status"),
        Index("ix_bot_checks_account_status", "account_id", "status"),
        Index("ix_bot_checks_status_created", "status", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"))
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(16), default=CheckStatus.QUEUED.value)
    #: The bot's URL when the check was asked; None for a bot that connects.
    url: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    rulesets: Mapped[list[str]] = mapped_column(JSONType)
    previous_status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    progress: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    #: Why the check is ``error`` (it could not be run), else NULL.
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    client: Mapped[str | None] = mapped_column(String(100), nullable=True)
    run_by: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Tournament(Base):
    __tablename__ = "tournaments"
    __table_args__ = (
        CheckConstraint(_in("status", TournamentStatus), name="status"),
        CheckConstraint("games_per_pairing >= 1", name="games_per_pairing"),
        CheckConstraint("max_faults >= 1", name="max_faults"),
        CheckConstraint(_in("stop_reason", StopReason), name="stop_reason"),
        CheckConstraint(_in("format", TournamentFormat), name="format"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    #: Where its matches come from (arena.status.TournamentFormat, the match source of
    #: arena.sources): ``round_robin``, ``until_settled`` or ``ladder`` (the sets of a ladder).
    format: Mapped[str] = mapped_column(
        String(16), default=TournamentFormat.ROUND_ROBIN.value, server_default=TournamentFormat.ROUND_ROBIN.value
    )
    #: Never two bots of one owner at one table (the schedule leaves such tables out).
    separate_owners: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    organizer_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="RESTRICT"), index=True)
    ruleset: Mapped[str] = mapped_column(String(32))
    #: Validated rule-set options (``engine.make_options(...).to_dict()``).
    options: Mapped[dict[str, Any]] = mapped_column(JSONType)
    #: TIME-1, seconds: ``{"initial": 60.0, "increment": 10.0, "cap": 60.0}``.
    time_rules: Mapped[dict[str, Any]] = mapped_column(JSONType)
    games_per_pairing: Mapped[int] = mapped_column(Integer)
    #: The tournament seed (arena.fairness): drawn when the tournament starts, in the
    #: transaction that publishes its commitment; NULL before, unless the organizer set it
    #: (``seed_chosen``). Shown to nobody until revealed (arena.access.can_see_seed).
    seed: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    #: The organizer set the seed (a reproducible test): the tournament is marked as such and
    #: left out of the ratings (arena.ratings.rebuild_ratings).
    seed_chosen: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: Play until settled (arena.sequential): ``{"max_rounds", "delta", "alpha", "beta"}``, or
    #: NULL for a tournament of one round.
    until_settled: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    #: Rounds of the schedule stored so far (each a whole schedule with fresh match indices).
    rounds: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    #: Why a tournament played until settled stopped (arena.status.StopReason), else NULL.
    stop_reason: Mapped[str | None] = mapped_column(String(16), nullable=True)
    #: The sequential test's last verdict (arena.sequential.Verdict.to_dict), else NULL.
    settle: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    #: FAULT-3: faults in one match after which a seat forfeits the rest of the match.
    max_faults: Mapped[int] = mapped_column(Integer, default=3)
    fill_with_house_bots: Mapped[bool] = mapped_column(Boolean, default=False)
    #: The sample bot every house seat plays (``arena.schedule.HOUSE_BOTS``, the names of
    #: ``bots_sdk.samples.SAMPLE_BOTS``); stored whether or not there are house seats.
    house_bot: Mapped[str] = mapped_column(String(32), default=DEFAULT_HOUSE_BOT, server_default=DEFAULT_HOUSE_BOT)
    #: Pages, matches and logs become readable by anyone (no token) once the tournament is
    #: finished (the web pages under ``/ui``); false keeps them to the API's access rules.
    public_when_finished: Mapped[bool] = mapped_column(Boolean, default=True, server_default="1")
    status: Mapped[str] = mapped_column(String(16), default=TournamentStatus.CREATED.value)
    #: Provably fair deals (arena.fairness): the secret salt (64 hex digits) and the
    #: published commitment SHA-256(salt || seed), both set when the tournament starts.
    salt: Mapped[str | None] = mapped_column(String(64), nullable=True)
    commitment: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)
    #: The last roll call of the entrants (arena.roll_call): ``{"checked_at", "offline":
    #: [{"bot_id", "name", "transport", "reason", "detail"}]}``; None before the first start.
    roll_call: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    #: While a start waits for offline entrants (the tournament is still ``created``): when it
    #: starts whoever is online; None otherwise (arena.lifecycle.waits).
    waiting_until: Mapped[datetime | None] = mapped_column(nullable=True)
    #: When the owners' webhooks were told of the tournament's end (arena.notices); None
    #: while it is not over, or its end is still to announce.
    end_notified_at: Mapped[datetime | None] = mapped_column(nullable=True)

    participants: Mapped[list[TournamentParticipant]] = relationship(
        back_populates="tournament", cascade="all, delete-orphan", order_by="TournamentParticipant.bot_id"
    )
    matches: Mapped[list[Match]] = relationship(back_populates="tournament", order_by="Match.index")


class TournamentParticipant(Base):
    __tablename__ = "tournament_participants"

    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"), primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="RESTRICT"), primary_key=True, index=True)

    tournament: Mapped[Tournament] = relationship(back_populates="participants")
    bot: Mapped[Bot] = relationship()


class Match(Base):
    __tablename__ = "matches"
    __table_args__ = (
        UniqueConstraint("tournament_id", "index", name="uq_matches_tournament_index"),
        CheckConstraint(_in("status", MatchStatus), name="status"),
        Index("ix_matches_tournament_status", "tournament_id", "status"),
        Index("ix_matches_status_lease", "status", "lease_expires_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"))
    #: Position in the tournament's schedule, from 0; ratings are updated in this order.
    index: Mapped[int] = mapped_column(Integer)
    #: Table (the group of bots) this match belongs to, from 0 (see arena.schedule).
    table: Mapped[int] = mapped_column(Integer, default=0)
    #: Seed of the match (derived from the tournament seed, see arena.schedule.derive_seed).
    seed: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16), default=MatchStatus.PENDING.value)
    #: Deliveries of the task that started playing this match (re-deliveries count).
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    #: Why the match is ``failed`` (not a bot's fault: an internal error, retries spent).
    failure: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: Who plays a ``running`` match (``host:pid:token`` of the claiming delivery) and until
    #: when its lease holds (renewed every few seconds while it plays; arena.lifecycle).
    lease_owner: Mapped[str | None] = mapped_column(String(128), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(nullable=True)
    #: When the match was last sent to the broker (the reaper's check for lost messages).
    queued_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)

    tournament: Mapped[Tournament] = relationship(back_populates="matches")
    seats: Mapped[list[MatchSeat]] = relationship(
        back_populates="match", cascade="all, delete-orphan", order_by="MatchSeat.seat"
    )
    result: Mapped[MatchResult | None] = relationship(back_populates="match", uselist=False)


#: The CHECK of ``match_seats``: exactly one occupant, a bot, a house bot or a person.
ONE_OCCUPANT = (
    "(CASE WHEN bot_id IS NULL THEN 0 ELSE 1 END) + (CASE WHEN house_bot IS NULL THEN 0 ELSE 1 END)"
    " + (CASE WHEN account_id IS NULL THEN 0 ELSE 1 END) = 1"
)


class MatchSeat(Base):
    __tablename__ = "match_seats"
    __table_args__ = (CheckConstraint(ONE_OCCUPANT, name="one_occupant"),)

    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True)
    seat: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot_id: Mapped[int | None] = mapped_column(ForeignKey("bots.id", ondelete="RESTRICT"), nullable=True, index=True)
    #: Name of a built-in house sample bot filling the seat (``"house-1"``...), else NULL.
    house_bot: Mapped[str | None] = mapped_column(String(32), nullable=True)
    #: The person playing the seat at a table (docs/tables.md), else NULL.
    account_id: Mapped[int | None] = mapped_column(
        ForeignKey("accounts.id", ondelete="RESTRICT"), nullable=True, index=True
    )

    match: Mapped[Match] = relationship(back_populates="seats")

    @property
    def entrant(self) -> int | str:
        """Who the standings and ratings count in this seat: the bot id, ``person:<account
        id>``, or the house bot's name."""
        if self.bot_id is not None:
            return self.bot_id
        if self.account_id is not None:
            return f"person:{self.account_id}"
        return self.house_bot or "house"


class MatchResult(Base):
    """The result of one match, written once (primary key ``match_id``).

    Shapes (lists are indexed by seat):
        ``scores``: match score per seat (numbers; higher is better).
        ``places``: final place per seat, 1 = first; equal places allowed.
        ``faults``: fault count per seat (FAULT-1).
        ``games``: per game ``{"scores": [...], "places": [...]}`` (MD game, TM game, JDF game),
            plus ``"par": [...]`` once the pars are computed (``par_status`` ``done``;
            arena.par, docs/ranking.md): the adjusted score of a seat is ``scores - par``.
        ``timings``: ``{"decisions": [...], "elapsed_ms": [...], "wall_s": float}`` or any
            JSON object the runner records (milliseconds / seconds as named).
    """

    __tablename__ = "match_results"
    __table_args__ = (CheckConstraint(_in("par_status", ParStatus), name="par_status"),)

    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True)
    scores: Mapped[list[float]] = mapped_column(JSONType)
    places: Mapped[list[int]] = mapped_column(JSONType)
    faults: Mapped[list[int]] = mapped_column(JSONType)
    games: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    timings: Mapped[dict[str, Any]] = mapped_column(JSONType)
    #: ``pending``, ``done``, ``skipped`` (arena.status.ParStatus); NULL: stored before pars.
    par_status: Mapped[str | None] = mapped_column(String(16), nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: Times the row was updated after it was stored (a par added to ``games`` later): every
    #: UPDATE through SQLAlchemy adds 1, so the standings cache sees that a folded result
    #: changed (arena.standings.tournament_standings) without the writer's help.
    changes: Mapped[int] = mapped_column(Integer, default=0, server_default="0", onupdate=text("changes + 1"))

    match: Mapped[Match] = relationship(back_populates="result")


class MatchLog(Base):
    """The full log of a match, gzip-compressed UTF-8 JSON, stored once (unique ``match_id``)."""

    __tablename__ = "match_logs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), unique=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    #: Size of the uncompressed JSON, bytes.
    size: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Rating(Base):
    """openskill Plackett-Luce rating of a bot in one rule set (across tournaments)."""

    __tablename__ = "ratings"

    ruleset: Mapped[str] = mapped_column(String(32), primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"), primary_key=True)
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    #: Games rated (one rating update per game; see rebuild_ratings).
    games: Mapped[int] = mapped_column(Integer, default=0)
    #: Finished matches rated.
    matches: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: When the bot's last rated match finished (None for ratings rebuilt before 0013).
    last_played_at: Mapped[datetime | None] = mapped_column(nullable=True)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class RatingHistory(Base):
    """A bot's cross-tournament rating in one rule set after each finished tournament it
    played (``position``: the tournament's place in the rating order, from 0), written with
    the ``ratings`` rows by :func:`arena.ratings.rebuild_ratings` (the whole rule
    set's rows are rewritten at each rebuild, like ``ratings``)."""

    __tablename__ = "rating_history"

    ruleset: Mapped[str] = mapped_column(String(32), primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"), primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    #: Games rated so far, this tournament included (as ``ratings.games``).
    games: Mapped[int] = mapped_column(Integer)


class StandingsCache(Base):
    """The standings fold of a tournament's longest finished prefix of the schedule
    (:func:`arena.standings.tournament_standings`): matches with ``index <=
    prefix_index`` are folded into ``state``; a read folds only what came after."""

    __tablename__ = "standings_cache"

    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"), primary_key=True)
    prefix_index: Mapped[int] = mapped_column(Integer)
    state: Mapped[dict[str, Any]] = mapped_column(JSONType)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Ladder(Base):
    """A ladder that never closes (docs/ladder.md): its entrants are matched tick by tick
    into duplicate sets (arena.sources.ladder), each set rated once as it is stored.

    Its sets are the matches of ``tournament_id``, a tournament of format ``ladder`` that
    runs as long as the ladder (it holds the rules every set is played with: the ladder's
    ``options``, ``time_rules``, ``max_faults``). ``open_ruleset`` is the rule set of the one
    open ladder of that rule set (created by an operator; any ready bot may enter), NULL
    for a private ladder (an organizer's: only its members' bots enter, only they read it).
    ``config``: the matchmaking knobs (:class:`arena.sources.ladder.LadderConfig`).
    ``last_tick``: the number of the last tick that formed sets (a tick is safe to run twice).
    """

    __tablename__ = "ladders"
    __table_args__ = (CheckConstraint(_in("status", LadderStatus), name="status"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    ruleset: Mapped[str] = mapped_column(String(32))
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="RESTRICT"), unique=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="RESTRICT"), index=True)
    open_ruleset: Mapped[str | None] = mapped_column(String(32), nullable=True, unique=True)
    status: Mapped[str] = mapped_column(String(16), default=LadderStatus.ACTIVE.value)
    description: Mapped[str] = mapped_column(Text, default="", server_default="")
    config: Mapped[dict[str, Any]] = mapped_column(JSONType)
    last_tick: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    last_tick_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    closed_at: Mapped[datetime | None] = mapped_column(nullable=True)

    tournament: Mapped[Tournament] = relationship()


class LadderMember(Base):
    """An account whose bots may enter a private ladder (and who may read it)."""

    __tablename__ = "ladder_members"

    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)


class LadderEntry(Base):
    """An entrant of a ladder: a bot (``bot_id``, ``owner_id`` its owner's) or a house
    sample bot filling tables (``house_bot``; status ``house``), with its rating.

    ``mu``/``sigma``: openskill Plackett-Luce, one update per rated set; ``sets``/``games``:
    rated so far; ``faults``: its faults over its stored sets; ``fault_streak``: its stored
    sets in a row in which it forfeited (``max_faults``), ``forfeits`` which of its last
    stored sets it forfeited (bits, newest in bit 0): the health rule reads them.
    ``res_n``/``res_sum``/``res_sumsq``: its rated sets' residuals (score minus the score its
    rating expected), for the operators' collusion view. ``max_concurrent``/``max_sets_per_hour``:
    what its owner lets the ladder ask of it. ``parent_entry_id``: the entry it replaced as a
    new version; ``compare``: its comparison with that parent on identical deals.
    """

    __tablename__ = "ladder_entries"
    __table_args__ = (
        CheckConstraint(_in("status", EntryStatus), name="status"),
        CheckConstraint(_in("paused_by", PausedBy), name="paused_by"),
        CheckConstraint("(bot_id IS NULL) <> (house_bot IS NULL)", name="bot_or_house"),
        UniqueConstraint("ladder_id", "bot_id", name="uq_ladder_entries_ladder_bot"),
        UniqueConstraint("ladder_id", "house_bot", name="uq_ladder_entries_ladder_house"),
        Index("ix_ladder_entries_ladder_status", "ladder_id", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    bot_id: Mapped[int | None] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"), nullable=True, index=True)
    house_bot: Mapped[str | None] = mapped_column(String(32), nullable=True)
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), nullable=True)
    status: Mapped[str] = mapped_column(String(16), default=EntryStatus.ACTIVE.value)
    paused_by: Mapped[str | None] = mapped_column(String(16), nullable=True)
    paused_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: Why, as a code and its parameters (arena.lifecycle.ladders.PAUSE_REASONS): what the pages
    #: translate; ``paused_reason`` is its English sentence.
    pause: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    paused_at: Mapped[datetime | None] = mapped_column(nullable=True)
    max_concurrent: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    max_sets_per_hour: Mapped[int] = mapped_column(Integer, default=30, server_default="30")
    parent_entry_id: Mapped[int | None] = mapped_column(
        ForeignKey("ladder_entries.id", ondelete="SET NULL"), nullable=True
    )
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    sets: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    games: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    faults: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    fault_streak: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: Its last stored sets, newest in bit 0: 1 where its bot reached ``max_faults`` (forfeited).
    forfeits: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    res_n: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    res_sum: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    res_sumsq: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    #: Its rated sets' **recall**: its score in the set's last game minus its score in the first
    #: (the same deal, other hands: a bot that remembers the deal knows its opponents' hands
    #: by the last game), for the operators' view (arena.batchfit.recall).
    recall_n: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    recall_sum: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    recall_sumsq: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    compare: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    #: The last health probe of an HTTP bot's entry (docs/ladder.md, "Health"): when, and
    #: whether it passed (an entry passed its check when it entered: true until probed).
    probed_at: Mapped[datetime | None] = mapped_column(nullable=True)
    probe_ok: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    last_set_at: Mapped[datetime | None] = mapped_column(nullable=True)
    entered_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    bot: Mapped[Bot | None] = relationship()


class LadderSet(Base):
    """A set of a ladder: the ladder side of one match (``match_id``) of its tournament.

    ``entries``: the entry id per seat of the match (house entries included); ``salt`` and
    ``commitment``: the set's own seed commitment (arena.fairness: the match's ``seed`` is
    the set's, drawn when the tick formed it, shown once the set is stored); ``kind``
    ``rated`` or ``comparison`` (a new version and its parent on identical deals);
    ``rating``: arena.status.SetRating; ``placement``: the place per seat the rating used,
    ``adjusted`` true when it came from luck-adjusted scores; ``twin``: a comparison set's
    other half (the same deal, the other version of the bot, the same opponents).
    """

    __tablename__ = "ladder_sets"
    __table_args__ = (
        CheckConstraint(_in("rating", SetRating), name="rating"),
        Index("ix_ladder_sets_ladder_created", "ladder_id", "created_at"),
        Index("ix_ladder_sets_rating", "rating", "ladder_id"),
    )

    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(16), default="rated")
    entries: Mapped[list[int]] = mapped_column(JSONType)
    tick: Mapped[int] = mapped_column(BigInteger, default=0)
    salt: Mapped[str] = mapped_column(String(64))
    commitment: Mapped[str] = mapped_column(String(64))
    rating: Mapped[str] = mapped_column(String(16), default=SetRating.PENDING.value)
    placement: Mapped[list[int] | None] = mapped_column(JSONType, nullable=True)
    adjusted: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    twin: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: Its entries' next sets were formed when it was done (a refill: once per set).
    refilled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    rated_at: Mapped[datetime | None] = mapped_column(nullable=True)


class LadderRating(Base):
    """An entry's rating after one rated set (the rating history of the profile's chart)."""

    __tablename__ = "ladder_rating_history"

    entry_id: Mapped[int] = mapped_column(ForeignKey("ladder_entries.id", ondelete="CASCADE"), primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True)
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    sets: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(default=utcnow)


class LadderPair(Base):
    """What two entries of a ladder did when seated together (``a < b``), summed over their
    rated sets: ``sets``; ``a_wins`` (a placed above b: 1, equal: 1/2); each one's residual
    sums (score minus what the ratings expected) for the collusion view; ``last_met_at``.
    The batch fit (arena.batchfit) and the collusion view read these sums, never the sets."""

    __tablename__ = "ladder_pairs"

    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), primary_key=True)
    a: Mapped[int] = mapped_column(ForeignKey("ladder_entries.id", ondelete="CASCADE"), primary_key=True)
    b: Mapped[int] = mapped_column(ForeignKey("ladder_entries.id", ondelete="CASCADE"), primary_key=True)
    sets: Mapped[int] = mapped_column(Integer, default=0)
    a_wins: Mapped[float] = mapped_column(Float, default=0.0)
    res_a_sum: Mapped[float] = mapped_column(Float, default=0.0)
    res_a_sumsq: Mapped[float] = mapped_column(Float, default=0.0)
    res_b_sum: Mapped[float] = mapped_column(Float, default=0.0)
    res_b_sumsq: Mapped[float] = mapped_column(Float, default=0.0)
    last_met_at: Mapped[datetime | None] = mapped_column(nullable=True)


class LadderFit(Base):
    """The ladder's official table: the last periodic batch fit over all its rated sets
    (arena.batchfit): ``table`` (rows best first), ``matrix`` (pairwise significance of the
    top of the table), ``collusion`` (pairs whose results together differ from apart),
    ``recall`` (entries that score better in a set's last game than in its first: they may
    remember the deal)."""

    __tablename__ = "ladder_fits"

    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), primary_key=True)
    sets: Mapped[int] = mapped_column(Integer)
    table: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    matrix: Mapped[dict[str, Any]] = mapped_column(JSONType)
    collusion: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    recall: Mapped[list[dict[str, Any]]] = mapped_column(JSONType, default=list)
    computed_at: Mapped[datetime] = mapped_column(default=utcnow)


class Table(Base):
    """A table where people play (docs/tables.md): the one match of ``tournament_id`` (format
    ``table``, which holds the rule set, options, the bots' time rules and the status:
    ``created`` while people's seats wait to be taken, ``running``, ``finished``,
    ``cancelled``).

    ``seats``: per seat ``{"kind": "person", "account_id": id | null}`` (null: free, a class
    table's), ``{"kind": "bot", "bot_id": id}`` or ``{"kind": "house", "house_bot": name}``
    (arena.status.SeatKind). ``person_time_rules``: the people's own TIME-1 values, seconds
    ``{"initial", "increment", "cap"}``. ``join_key``: the key of a class table's link, which
    signed-in students follow to take a seat (NULL for a solo table).
    """

    __tablename__ = "tables"
    __table_args__ = (CheckConstraint(_in("kind", TableKind), name="kind"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"), unique=True)
    kind: Mapped[str] = mapped_column(String(8), default=TableKind.SOLO.value)
    opened_by: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="RESTRICT"), index=True)
    seats: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    person_time_rules: Mapped[dict[str, Any]] = mapped_column(JSONType)
    join_key: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    tournament: Mapped[Tournament] = relationship()


class PersonRating(Base):
    """A person's rating in the people's pool of one rule set (docs/tables.md, "Ratings"):
    openskill Plackett-Luce from the games at tables, rebuilt from scratch
    (arena.people.rebuild_people_ratings); never mixed with the bots' ``ratings``."""

    __tablename__ = "person_ratings"

    ruleset: Mapped[str] = mapped_column(String(32), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    games: Mapped[int] = mapped_column(Integer, default=0)
    matches: Mapped[int] = mapped_column(Integer, default=0)
    last_played_at: Mapped[datetime | None] = mapped_column(nullable=True)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
