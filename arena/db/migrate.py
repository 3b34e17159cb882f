"""Alembic migrations, configured in code (no ``alembic.ini``), so they run from an installed package.

``upgrade(url)`` brings the database at ``url`` to the newest revision; ``arena db upgrade``
calls it with ``ARENA_DATABASE_URL``. Migration scripts live in ``arena/db/migrations/versions``.
"""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text

from arena.db.session import make_engine, normalize_url

SCRIPT_LOCATION = "arena.db:migrations"


def alembic_config(url: str | None = None, engine: Engine | None = None) -> Config:
    """An Alembic ``Config`` for our scripts, bound to ``engine`` or ``url``."""
    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    if url is not None:
        cfg.set_main_option("sqlalchemy.url", normalize_url(url).replace("%", "%%"))
    if engine is not None:
        cfg.attributes["engine"] = engine
    return cfg


#: Key of the PostgreSQL advisory lock that serializes migrations ("arena-db").
MIGRATION_LOCK = 0x6172656E612D6462


def upgrade(url: str | None = None, revision: str = "head", engine: Engine | None = None) -> None:
    """Upgrade the database (``engine``, or one made from ``url``) to ``revision`` (default head).

    On PostgreSQL, processes upgrading at the same time (an ``arena api`` starting while
    ``arena db upgrade`` or ``arena accounts create`` runs) take turns on an advisory lock:
    the first migrates, the others find the database at the head and do nothing.
    """
    owned = engine is None
    if engine is None:
        if url is None:
            raise ValueError("upgrade() needs a url or an engine")
        engine = make_engine(url)
    try:
        if engine.dialect.name == "postgresql":
            with engine.connect() as lock:
                lock.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK})
                try:
                    command.upgrade(alembic_config(engine=engine), revision)
                finally:
                    lock.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK})
                    lock.commit()
        else:
            command.upgrade(alembic_config(engine=engine), revision)
    finally:
        if owned:
            engine.dispose()


def current(engine: Engine) -> str | None:
    """The revision the database is at, or None for an empty database."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
