"""CLI commands of the API and the database: ``arena api``, ``arena db upgrade``,
``arena accounts create [--organizer] NAME``. Registered in daifugo_arena.cli.COMMANDS."""

from __future__ import annotations

from pathlib import Path

import click
from gunicorn.app.base import BaseApplication

from arena import crypto
from arena.accounts import NAME_RE, NameTaken, create_account
from arena.config import Settings
from arena.db.migrate import current, upgrade
from arena.db.migrate import upgrade as run_upgrade
from arena.db.session import make_engine, make_sessionmaker, normalize_url
from daifugo_arena.cli.compose import make_app
from daifugo_arena.cli.servers import RequestReadingWorker

#: Threads per gunicorn worker (gthread worker class, reading requests first:
#: :class:`daifugo_arena.cli.servers.RequestReadingWorker`).
GUNICORN_THREADS = 16
#: Seconds a gunicorn worker may go without heartbeat before it is killed and restarted.
GUNICORN_TIMEOUT_S = 60


@click.command("api")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--workers",
    default=2,
    show_default=True,
    type=click.IntRange(1, 64),
    help="gunicorn worker processes (production mode)",
)
@click.option("--dev", is_flag=True, help="Flask development server (reloader off) instead of gunicorn")
@click.option(
    "--upgrade/--no-upgrade", default=True, show_default=True, help="run the database migrations before serving"
)
@click.option(
    "--control-socket",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="gunicorn control socket of this server (for gunicornc); default: none",
)
def api(host: str, port: int, workers: int, dev: bool, upgrade: bool, control_socket: Path | None) -> None:
    """Serve the REST API (gunicorn; --dev: Flask development server).

    gunicorn's control socket (``gunicornc``) is off unless ``--control-socket PATH`` names
    one for this server: gunicorn's default path (``$XDG_RUNTIME_DIR/gunicorn.ctl`` or
    ``~/.gunicorn/gunicorn.ctl``) is shared by every server of a user, so a second API would
    take it over and remove it when it stops.
    """
    settings = Settings.from_env()
    if upgrade:
        run_upgrade(settings.database_url)

    if dev:
        make_app(settings).run(host=host, port=port, debug=False, use_reloader=False)
        return

    ApiServer(lambda: make_app(settings), host=host, port=port, workers=workers, control_socket=control_socket).run()


class ApiServer(BaseApplication):
    """gunicorn serving the app made by ``factory()`` (called in each worker process).

    ``host``/``port``: the bind address; ``workers``: worker processes (gthread, each with
    :data:`GUNICORN_THREADS` threads, each request read whole by the worker's event loop
    before a thread serves it, within deadlines: :class:`~daifugo_arena.cli.servers.RequestReadingWorker`;
    access log on stdout). ``control_socket``: the path of
    this server's gunicorn control socket, or None for none (gunicorn's default path is
    shared by every server of the user: a second server would take it over and remove it
    when it stops).
    """

    def __init__(self, factory, *, host: str, port: int, workers: int, control_socket: Path | None = None):
        self.factory, self.host, self.port, self.workers = factory, host, port, workers
        self.control_socket = control_socket
        super().__init__()

    def load_config(self):
        self.cfg.set("bind", f"{self.host}:{self.port}")
        self.cfg.set("workers", self.workers)
        # gthread, whose event loop reads each request whole before a thread serves it: a
        # slow client holds a connection until its deadline, never a thread; idle keep-alive
        # connections wait in the event loop too
        self.cfg.set("worker_class", RequestReadingWorker)
        self.cfg.set("threads", GUNICORN_THREADS)
        self.cfg.set("worker_connections", 1000)
        self.cfg.set("keepalive", 5)  # seconds an idle keep-alive connection is kept
        self.cfg.set("timeout", GUNICORN_TIMEOUT_S)  # a worker silent this long is restarted
        self.cfg.set("graceful_timeout", 30)
        self.cfg.set("limit_request_line", 4094)
        self.cfg.set("limit_request_fields", 100)
        self.cfg.set("limit_request_field_size", 8190)
        self.cfg.set("accesslog", "-")
        if self.control_socket is None:
            self.cfg.set("control_socket_disable", True)
        else:
            self.cfg.set("control_socket", str(Path(self.control_socket).resolve()))

    def load(self):
        return self.factory()


@click.group("db")
def db() -> None:
    """Database schema (Alembic migrations on ARENA_DATABASE_URL)."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
def db_upgrade(revision: str) -> None:
    """Create or upgrade the tables of ARENA_DATABASE_URL."""

    settings = Settings.from_env()
    click.echo(_database_line(settings.database_url), err=True)
    engine = make_engine(settings.database_url)
    try:
        upgrade(engine=engine, revision=revision)
        click.echo(f"database at revision {current(engine)}")
    finally:
        engine.dispose()


@click.group("accounts")
def accounts() -> None:
    """Accounts (operator commands)."""


@accounts.command("create")
@click.option("--organizer", is_flag=True, help="grant the organizer role")
@click.argument("name")
def accounts_create(organizer: bool, name: str) -> None:
    """Create an account and print its bearer token (shown this once)."""
    import re

    if not re.match(NAME_RE, name):
        raise click.BadParameter("1-64 letters, digits, '_', '.', '-'", param_hint="NAME")
    settings = Settings.from_env()
    click.echo(_database_line(settings.database_url), err=True)
    engine = make_engine(settings.database_url)
    try:
        upgrade(engine=engine)  # idempotent: a fresh database gets its tables first
        with make_sessionmaker(engine)() as session:
            try:
                account, token = create_account(session, name, "organizer" if organizer else "contestant")
            except NameTaken:
                raise click.ClickException(f"account name {name!r} is taken") from None
        click.echo(f"account {account.id} {account.name} ({account.role})", err=True)
        click.echo(token)
    finally:
        engine.dispose()


def _database_line(url: str) -> str:
    """``database: <url without password>``: commands name their database."""
    from sqlalchemy.engine import make_url

    return f"database: {make_url(normalize_url(url)).render_as_string(hide_password=True)}"


@click.group("secrets")
def secrets_group() -> None:
    """Encryption of bot signing secrets at rest (ARENA_ENCRYPTION_KEYS, arena.crypto)."""


@secrets_group.command("new-key")
def secrets_new_key() -> None:
    """Print a fresh Fernet key for ARENA_ENCRYPTION_KEYS."""
    click.echo(crypto.new_key())


@secrets_group.command("reencrypt")
def secrets_reencrypt() -> None:
    """Re-encrypt every stored bot secret with the first key of ARENA_ENCRYPTION_KEYS (key
    rotation step 2; the other keys must still be listed to decrypt)."""
    from sqlalchemy import text

    settings = Settings.from_env()
    click.echo(_database_line(settings.database_url), err=True)
    engine = make_engine(settings.database_url)
    count = 0
    try:
        with engine.begin() as conn:
            for column in ("secret", "previous_secret"):
                rows = conn.execute(text(f"SELECT id, {column} FROM bots WHERE {column} IS NOT NULL")).all()
                for bot_id, stored in rows:
                    conn.execute(
                        text(f"UPDATE bots SET {column} = :v WHERE id = :i"),
                        {"v": crypto.reencrypt(stored), "i": bot_id},
                    )
                    count += 1
    finally:
        engine.dispose()
    click.echo(f"re-encrypted {count} secrets")
