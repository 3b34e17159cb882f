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
``ladders`` ...    the ladder's tables, in :mod:`arena.db.ladder_models` (imported here)
``tables``         a table where people play (its tournament of format ``table``): who
                   sits where, the people's time rules, the class link (docs/tables.md)
``person_ratings`` the people's own pool: a rating per (rule set, account) from tables
================== ===================================================================

Times are timezone-aware UTC datetimes. JSON columns use JSONB on PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from arena.crypto import EncryptedText
from arena.db.base import Base, JSONType, in_check, utcnow
from arena.db.ladder_models import (  # noqa: F401  (the ladder's tables, for the callers and migrations)
    Ladder,
    LadderEntry,
    LadderFit,
    LadderMember,
    LadderPair,
    LadderRating,
    LadderSet,
)
from arena.schedule import DEFAULT_HOUSE_BOT
from arena.status import (
    BotStatus,
    BotTransport,
    CheckStatus,
    MatchStatus,
    ParStatus,
    StopReason,
    TableKind,
    TournamentFormat,
    TournamentStatus,
)

ROLES = ("contestant", "organizer")


class Account(Base):
    __tablename__ = "accounts"
    __table_args__ = (CheckConstraint(in_check("role", ROLES), name="role"),)

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
        CheckConstraint(in_check("status", BotStatus), name="status"),
        CheckConstraint(in_check("transport", BotTransport), name="transport"),
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
        CheckConstraint(in_check("status", CheckStatus), name="status"),
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
        CheckConstraint(in_check("status", TournamentStatus), name="status"),
        CheckConstraint("games_per_pairing >= 1", name="games_per_pairing"),
        CheckConstraint("max_faults >= 1", name="max_faults"),
        CheckConstraint(in_check("stop_reason", StopReason), name="stop_reason"),
        CheckConstraint(in_check("format", TournamentFormat), name="format"),
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
        CheckConstraint(in_check("status", MatchStatus), name="status"),
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
    __table_args__ = (CheckConstraint(in_check("par_status", ParStatus), name="par_status"),)

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


class Table(Base):
    """A table where people play (docs/tables.md): the one match of ``tournament_id`` (format
    ``table``, which holds the rule set, options, the bots' time rules and the status:
    ``created`` while people's seats wait to be taken, ``running``, ``finished``,
    ``cancelled``).

    ``seats``: per seat ``{"kind": "person", "account_id": id | null}`` (null: free, a class
    table's), ``{"kind": "bot", "bot_id": id}`` or ``{"kind": "house", "house_bot": name}``
    (arena.status.SeatKind). ``person_time_rules``: the people's own TIME-1 values, seconds
    ``{"initial", "increment", "cap"}``. ``join_key``: the key of a class table's link, which
    signed-in students follow to take a seat (NULL for a solo table). ``client``: the client
    that opened it (:func:`arena.clients.client_key`; NULL when not known), counted by the
    per-client limit of open tables.
    """

    __tablename__ = "tables"
    __table_args__ = (CheckConstraint(in_check("kind", TableKind), name="kind"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournaments.id", ondelete="CASCADE"), unique=True)
    kind: Mapped[str] = mapped_column(String(8), default=TableKind.SOLO.value)
    opened_by: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="RESTRICT"), index=True)
    seats: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    person_time_rules: Mapped[dict[str, Any]] = mapped_column(JSONType)
    join_key: Mapped[str | None] = mapped_column(String(64), nullable=True)
    client: Mapped[str | None] = mapped_column(String(100), nullable=True)
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
