"""What the state machines of :mod:`arena.lifecycle` share: their errors, row locks and
the one lock-or-404 helper, and the status vocabulary (re-exported from :mod:`arena.status`).

Errors: :class:`Conflict` (the transition is not allowed from the current status; the API
answers 409), :class:`NotFound` (404); both are :class:`LifecycleError`, whose ``str`` is a
message for the user.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar, cast, overload

from sqlalchemy import CursorResult
from sqlalchemy.orm import Session

from arena.status import ACTIVE_CHECKS, DONE, UNFINISHED, BotStatus, CheckStatus, MatchStatus, TournamentStatus

__all__ = [
    "ACTIVE_CHECKS",
    "DONE",
    "MAX_FAILURE_CHARS",
    "UNFINISHED",
    "BotStatus",
    "CheckStatus",
    "Conflict",
    "LifecycleError",
    "MatchStatus",
    "NotFound",
    "TournamentStatus",
    "aware",
    "failure_text",
    "is_postgresql",
    "lock_or_404",
    "locked",
    "rows_changed",
]

#: Longest failure reason stored (characters).
MAX_FAILURE_CHARS = 500

Row = TypeVar("Row")


class LifecycleError(Exception):
    """A transition that cannot be made; ``str(exc)`` is a message for the user."""


class Conflict(LifecycleError):
    """The transition is not allowed from the current status (HTTP 409)."""


class NotFound(LifecycleError):
    """No such row: a tournament, or a bot missing or deleted (HTTP 404)."""


def is_postgresql(session: Session) -> bool:
    """True when ``session`` is bound to PostgreSQL (row locks, ``COPY``, ``SKIP LOCKED``)."""
    return session.get_bind().dialect.name == "postgresql"


def rows_changed(session: Session, stmt: Any) -> int:
    """Execute an ``UPDATE`` statement; returns how many rows it changed."""
    result = cast(CursorResult[Any], session.execute(stmt))
    return int(result.rowcount or 0)


def locked(session: Session, model: type[Row], key: int, *, no_key: bool = False) -> Row | None:
    """``session.get`` with the row locked ``FOR UPDATE`` on PostgreSQL (SQLite: a plain get).
    ``no_key``: ``FOR NO KEY UPDATE`` instead, which excludes the other lockers of the row but
    not the inserts of rows that refer to it (their foreign key's ``KEY SHARE`` lock): a
    transaction that locks rows referring to this one and then inserts one cannot deadlock
    with the holder."""
    if is_postgresql(session):
        lock: Any = {"key_share": True} if no_key else True
        return session.get(model, key, with_for_update=lock, populate_existing=True)
    return session.get(model, key)


def lock_or_404(
    session: Session,
    model: type[Row],
    key: int,
    noun: str,
    *,
    gone: Callable[[Row], bool] | None = None,
    lock: bool = True,
) -> Row:
    """The row ``key`` of ``model``, locked as by :func:`locked` (a plain get with
    ``lock=False``).

    Raises:
        NotFound: ``"{noun} {key} not found"`` when there is no such row or ``gone(row)``
            (e.g. a deleted bot); the transaction is rolled back first.
    """
    row = locked(session, model, key) if lock else session.get(model, key)
    if row is None or (gone is not None and gone(row)):
        session.rollback()
        raise NotFound(f"{noun} {key} not found")
    return row


def failure_text(reason: str, default: str) -> str:
    """``reason`` on one line, at most :data:`MAX_FAILURE_CHARS` characters (``default``
    when it is blank): what a failed match or a check in error stores."""
    return " ".join(reason.split())[:MAX_FAILURE_CHARS] or default


@overload
def aware(value: datetime) -> datetime: ...
@overload
def aware(value: None) -> None: ...
@overload
def aware(value: datetime | None) -> datetime | None: ...
def aware(value: datetime | None) -> datetime | None:
    """``value`` as a timezone-aware UTC datetime (SQLite gives naive datetimes back; every
    stored time is UTC); None stays None."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value
