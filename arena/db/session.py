"""Engines and sessions for the Daifugo Arena database.

``make_engine(url)`` accepts any SQLAlchemy URL; ``postgresql://`` and ``postgres://`` URLs are
served by psycopg 3 (``postgresql+psycopg://``). SQLite gets foreign keys switched on and its
parent folder created, so the embedded default (a file under ``ARENA_DATA_DIR``) just works.

:func:`shared_sessions` is the process's one session factory (and connection pool) per
database URL, for every long-lived process (workers, the reaper, eager mode); its pool is
sized by :data:`POOL` (:meth:`PoolSettings.size_for`, before the first use).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker


def normalize_url(url: str) -> str:
    """Return ``url`` with the psycopg 3 driver for PostgreSQL URLs; others unchanged."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Create an engine for ``url`` (see module docstring). ``kwargs`` go to ``create_engine``."""
    url = normalize_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        db = parsed.database
        if db and db != ":memory:" and not db.startswith("file:"):
            Path(db).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, **kwargs)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):  # pragma: no cover - trivial
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=5000")
            cur.close()

        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """A session factory bound to ``engine``; objects stay usable after commit."""
    return sessionmaker(engine, expire_on_commit=False)


#: Most database connections a process keeps open (its pool size, SQLAlchemy's QueuePool;
#: opened ahead by the worker's prewarm), and how many more it may open in a burst (closed
#: again when given back). A match holds a connection only for a few milliseconds at a time
#: (claim, lease renewals, store), so a burst of claims waits its turn for one of these
#: rather than opening one per thread: an idle worker must not hold a connection per thread
#: (4 processes of 32 threads would take more than PostgreSQL's default 100).
POOL_SIZE, POOL_OVERFLOW = 10, 5
#: Seconds to open a database connection before giving up (a server that accepts and never
#: answers must not hang a worker's start-up or a match's claim).
DB_CONNECT_TIMEOUT_S = 10


@dataclass
class PoolSettings:
    """The PostgreSQL pool of :func:`shared_sessions`: kept-open connections, burst, and
    seconds to wait for a free one."""

    pool_size: int = POOL_SIZE
    max_overflow: int = POOL_OVERFLOW
    pool_timeout: int = 60

    def size_for(self, threads: int) -> None:
        """Keep ``min(threads, POOL_SIZE)`` connections open (plus :data:`POOL_OVERFLOW` in a
        burst), for the engines built from now on."""
        self.pool_size = min(max(1, int(threads)), POOL_SIZE)
        self.max_overflow = POOL_OVERFLOW


#: The process's pool settings (see :class:`PoolSettings`).
POOL = PoolSettings()


def is_postgres(database_url: str) -> bool:
    """True for a PostgreSQL URL (``postgresql...`` or ``postgres:``)."""
    return database_url.startswith(("postgresql", "postgres:"))


@lru_cache(maxsize=4)
def shared_sessions(database_url: str) -> sessionmaker[Session]:
    """The process's session factory for ``database_url``: one engine per URL and process,
    built lazily (so after a prefork fork). For PostgreSQL its pool is :data:`POOL` (kept
    open, so a burst of claims finds open ones) with a :data:`DB_CONNECT_TIMEOUT_S` connect
    timeout; SQLite gets SQLAlchemy's default."""
    pool: dict[str, Any] = {}
    if is_postgres(database_url):
        pool = {
            "pool_size": POOL.pool_size,
            "max_overflow": POOL.max_overflow,
            "pool_timeout": POOL.pool_timeout,
            "connect_args": {"connect_timeout": DB_CONNECT_TIMEOUT_S},
        }
    return make_sessionmaker(make_engine(database_url, **pool))
