"""Alembic environment: online migrations only, against ``config.attributes['engine']``
or ``sqlalchemy.url`` (see arena.db.migrate)."""

from alembic import context

from arena.db.models import Base
from arena.db.session import make_engine

config = context.config
target_metadata = Base.metadata


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = config.attributes.get("engine")
    owned = engine is None
    if engine is None:
        url = config.get_main_option("sqlalchemy.url")
        if not url:
            raise RuntimeError("alembic: no database URL (sqlalchemy.url) and no engine given")
        engine = make_engine(url)
    try:
        with engine.connect() as connection:
            _run(connection)
            connection.commit()
    finally:
        if owned:
            engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported; run `arena db upgrade`")
run_migrations_online()
