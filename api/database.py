"""The request's database session (``db()``), from the app's session factory."""

from __future__ import annotations

from flask import current_app, g
from sqlalchemy.orm import Session


def db() -> Session:
    """The SQLAlchemy session of this request (closed, rolled back if uncommitted, at teardown)."""
    if "db" not in g:
        g.db = current_app.extensions["arena"]["sessionmaker"]()
    return g.db


def close_db(_exc: BaseException | None = None) -> None:
    session = g.pop("db", None)
    if session is not None:
        session.close()


def settings():
    """The app's :class:`arena.config.Settings`."""
    return current_app.extensions["arena"]["settings"]
