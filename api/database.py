"""The request's database session (``db()``), from the app's session factory; the app's
settings (``settings()``), dispatcher (``dispatcher()``) and Redis client (``redis_client()``)."""

from __future__ import annotations

import json
from typing import Any

import redis
from flask import Response, current_app, g, stream_with_context
from sqlalchemy import select
from sqlalchemy.orm import Session

from arena import access, live, matchlog
from arena.config import Settings
from arena.db.models import Match, MatchLog, Tournament
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


def tournament_logs_download(t: Tournament, viewer, tournament: dict[str, Any]) -> Response:
    """The JSON Lines download of every log of ``t`` that ``viewer`` may read (the API's
    ``GET /api/v1/tournaments/<id>/logs`` and the page's ``logs.jsonl``, one format):
    first ``{"tournament": {...}}`` (``tournament``: the API's tournament object as the viewer
    sees it, with the ``commitment``, and ``seed`` and ``salt`` once revealed), then one
    ``{"match_id": n, "log": {...}}`` per stored log in match id order, bot URLs ``viewer``
    may not see removed. ``arena logs verify FILE`` replays it and, with the seed revealed,
    checks the commitment (docs/fairness.md). Rows are fetched in batches while streaming,
    in a session of their own. The caller checks :func:`arena.access.can_download_tournament_logs`."""
    cond = [Match.tournament_id == t.id]
    visible = access.visible_matches_condition(db(), viewer, t)
    if visible is not None:
        cond.append(visible)
    ids = select(Match.id).where(*cond)
    factory = current_app.extensions["arena"]["sessionmaker"]
    header = matchlog.lines_header_line(json.loads(json.dumps(tournament, default=_iso)))

    def generate():
        yield header
        with factory() as session:
            rows = session.execute(
                select(MatchLog.match_id, MatchLog.data)
                .where(MatchLog.match_id.in_(ids))
                .order_by(MatchLog.match_id)
                .execution_options(yield_per=20)
            )
            for match_id, data in rows:
                raw = matchlog.decompress(data)
                if b'"url":"' in raw:  # an old log stored with URLs
                    raw = access.redact_log(raw, viewer, access.seat_owners(session, match_id))
                yield b'{"match_id":%d,"log":' % match_id + raw + b"}\n"

    return Response(
        stream_with_context(generate()),
        mimetype="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="tournament-{t.id}-logs.jsonl"'},
    )


def _iso(value: Any) -> str:
    """JSON for the datetimes of a tournament object: ISO 8601, as the API writes them."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")
