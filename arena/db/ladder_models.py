"""The ladder's models (docs/ladder.md): ``ladders``, ``ladder_members``, ``ladder_entries``,
``ladder_sets``, ``ladder_rating_history``, ``ladder_pairs``, ``ladder_fits``.

They share :class:`arena.db.base.Base` (one metadata) with :mod:`arena.db.models`, which
imports them, so that importing :mod:`arena.db.models` (the migrations' ``env.py``, every
caller) registers every table.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    true,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from arena.db.base import Base, JSONType, in_check, utcnow
from arena.status import EntryStatus, LadderStatus, PausedBy, SetRating

if TYPE_CHECKING:
    from arena.db.models import Bot, Tournament


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
    __table_args__ = (CheckConstraint(in_check("status", LadderStatus), name="status"),)

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
        CheckConstraint(in_check("status", EntryStatus), name="status"),
        CheckConstraint(in_check("paused_by", PausedBy), name="paused_by"),
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
        CheckConstraint(in_check("rating", SetRating), name="rating"),
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
