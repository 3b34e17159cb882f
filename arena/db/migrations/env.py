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
            sqlite = connection.dialect.name == "sqlite"
            if sqlite:  # a batch migration recreates a table: its DROP must not cascade to children
                connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
                connection.commit()  # the migrations' transactions are alembic's, as without it
            try:
                _run(connection)
                connection.commit()
            finally:
                if sqlite:
                    connection.rollback()
                    connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                    connection.commit()
    finally:
        if owned:
            engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported; run `arena db upgrade`")
run_migrations_online()
