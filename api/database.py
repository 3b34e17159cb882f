"""The request's database session (``db()``), from the app's session factory; the app's
settings (``settings()``), dispatcher (``dispatcher()``) and Redis client (``redis_client()``)."""

from __future__ import annotations

import redis
from flask import Response, current_app, g
from sqlalchemy import select
from sqlalchemy.orm import Session

from arena import access, live, matchlog
from arena.config import Settings
from arena.db.models import MatchLog
from arena.dispatch import Dispatcher


def db() -> Session:
    """The SQLAlchemy session of this request (closed, rolled back if uncommitted, at teardown)."""
    if "db" not in g:
        g.db = current_app.extensions["arena"]["sessionmaker"]()
    return g.db


def close_db(_exc: BaseException | None = None) -> None:
    session = g.pop("db", None)
    if session is not None:
        session.close()


def settings() -> Settings:
    """The app's :class:`arena.config.Settings`."""
    return current_app.extensions["arena"]["settings"]


def dispatcher() -> Dispatcher:
    """The app's :class:`arena.dispatch.Dispatcher` (``api.create_app(dispatcher=...)``)."""
    return current_app.extensions["arena"]["dispatcher"]


def redis_client() -> redis.Redis | None:
    """The process's pooled client of the app's Redis (``ARENA_BROKER_URL``; short timeouts,
    :func:`arena.live.redis_client`): for small reads such as the presence of bots that connect.
    None when the broker is not Redis (``memory://`` in eager runs)."""
    url = settings().broker_url
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    return live.redis_client(url)


def match_log_download(match, viewer=None):
    """``(Response, None)`` with the match's stored log as a JSON download
    (``match-<id>.json``), bot URLs ``viewer`` may not see removed
    (:func:`arena.access.redact_log`), or ``(None, message)`` when it is not stored yet.
    The caller checks :func:`arena.access.can_read_log` first."""
    data = db().scalar(select(MatchLog.data).where(MatchLog.match_id == match.id))
    if data is None:
        return None, f"match {match.id} has no log yet (status {match.status})"
    raw = access.redact_log(matchlog.decompress(data), viewer, access.seat_owners(db(), match.id))
    return Response(
        raw,
        mimetype="application/json",
        headers={"Content-Disposition": f'attachment; filename="match-{match.id}.json"'},
    ), None
