"""Fixtures of the API tests: a migrated database (SQLite file and real PostgreSQL), the app,
accounts, and tiny real HTTP bot servers on 127.0.0.1.

``engine`` copies a template migrated once per process (tests.helpers) instead of running
Alembic per test. ``register_ready_bot`` runs the real check (its games against the bot);
``register_checked_bot`` stores a passed check through the models (no game): the fixtures
that only need ready bots use it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from api import create_app
from arena.accounts import create_account
from arena.config import Settings
from arena.db.session import make_engine, make_sessionmaker
from arena.inprocess import InProcessDispatcher
from bots_sdk.samples import SAMPLE_BOTS
from tests.fakes import FakeBot
from tests.helpers import create_pg_database, mark_bot_checked, migrate_pg_database_in_place, migrated_sqlite_url


def _fresh_pg_database(pg_url: str) -> str:
    return create_pg_database(pg_url, "t")


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path) -> str:
    """URL of an empty database: a SQLite file, or a fresh database on the real PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'arena.db'}"
    return _fresh_pg_database(request.getfixturevalue("pg_url"))


@pytest.fixture
def engine(request, database_url):
    """An engine on ``database_url`` brought to the newest migration (a copy of the template)."""
    if database_url.startswith("sqlite:///"):
        migrated_sqlite_url(database_url.removeprefix("sqlite:///"))
    else:
        migrate_pg_database_in_place(database_url, request.getfixturevalue("pg_url"))
    eng = make_engine(database_url)
    yield eng
    eng.dispose()


@pytest.fixture
def unreachable_broker(free_port) -> str:
    return f"redis://127.0.0.1:{free_port()}/0"


@pytest.fixture
def make_app(engine, database_url, tmp_path, unreachable_broker):
    """``make_app(allow_private=True, broker_url=None, **settings)`` -> Flask app on the
    migrated database (``settings``: other :class:`Settings` fields)."""

    def make(allow_private: bool = True, broker_url: str | None = None, **more):
        settings = Settings(
            data_dir=tmp_path,
            database_url=database_url,
            broker_url=broker_url or unreachable_broker,
            allow_private_bot_urls=allow_private,
            rate_limits=False,
            **more,
        )
        app = create_app(settings, engine=engine)
        app.testing = True
        return app

    return make


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def sessionmaker(engine):
    return make_sessionmaker(engine)


class Accounts:
    """Creates accounts; ``headers(name)`` gives the bearer header of an account."""

    def __init__(self, client, sessionmaker):
        self.client, self.sessionmaker = client, sessionmaker
        self.tokens: dict[str, str] = {}
        self.ids: dict[str, int] = {}

    def contestant(self, name: str) -> dict[str, str]:
        r = self.client.post("/api/v1/accounts", json={"name": name})
        assert r.status_code == 201, r.json
        self.tokens[name], self.ids[name] = r.json["token"], r.json["id"]
        return self.headers(name)

    def organizer(self, name: str) -> dict[str, str]:
        with self.sessionmaker() as s:
            account, token = create_account(s, name, "organizer")
        self.tokens[name], self.ids[name] = token, account.id
        return self.headers(name)

    def headers(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}


@pytest.fixture
def accounts(client, sessionmaker) -> Accounts:
    return Accounts(client, sessionmaker)


def tiny_bot_server() -> FakeBot:
    """A real bot on 127.0.0.1 (tests.fakes.FakeBot: the SDK's server) answering like a bot's
    health endpoint, with ``url`` its origin (no last slash) for paths to be added.

    Paths: ``/`` -> 200 {"name": "tiny", "protocol": 1, "protocols": [1]}; ``/protocols`` -> 200
    with a list; ``/error`` -> 500; ``/redirect`` -> 302 to ``/``; ``/text`` -> 200 not JSON;
    ``/noname`` -> 200 {"protocol": 1}. ``hits`` lists the paths requested by GET.
    ``POST`` (any path) plays: a decision is answered by the greedy sample bot, a notice with
    ``{"ok": true}`` (so the conformance game of a bot check passes); signatures unchecked.
    """
    player = SAMPLE_BOTS["greedy"]()
    player.name = "tiny"
    server = FakeBot(player)
    server.url = server.origin
    return server


@pytest.fixture
def bot_server() -> Iterator[FakeBot]:
    server = tiny_bot_server()
    yield server
    server.close()


def eager_client(client):
    """A test client of the same app and database in eager mode (``ARENA_CELERY_EAGER``): a
    ``POST /bots/{id}/check`` runs the check in-process and answers 202 with it done."""
    app = client.application
    twin = app.extensions.get("arena-eager-twin")
    if twin is None:
        ext = app.extensions["arena"]
        eager = dataclasses.replace(ext["settings"], celery_eager=True)
        twin = create_app(eager, engine=ext["engine"], dispatcher=InProcessDispatcher(eager))
        twin.testing = True
        app.extensions["arena-eager-twin"] = twin
    return twin.test_client()


def run_check(client, bot_id: int, headers) -> tuple[dict, dict]:
    """``POST /bots/{id}/check`` in eager mode; returns (the finished check, the bot)."""
    r = eager_client(client).post(f"/api/v1/bots/{bot_id}/check", headers=headers)
    assert r.status_code == 202, r.json
    assert r.headers["Location"] == r.json["check_url"] == f"/api/v1/bots/{bot_id}/checks/{r.json['id']}"
    assert r.json["status"] in ("passed", "failed"), r.json
    bot = client.get(f"/api/v1/bots/{bot_id}", headers=headers)
    assert bot.status_code == 200, bot.json
    return r.json, bot.json


def register_ready_bot(client, headers, url: str, rulesets: list[str], name: str = "bot") -> int:
    """POST a bot and check it (it must pass); returns its id."""
    r = client.post("/api/v1/bots", json={"name": name, "url": url, "rulesets": rulesets}, headers=headers)
    assert r.status_code == 201, r.json
    bot_id = r.json["id"]
    check, bot = run_check(client, bot_id, headers)
    why = {k: check.get(k) for k in ("status", "error", "result")}  # whole, not cut short by pytest
    assert check["status"] == "passed" and bot["status"] == "ready", f"the check did not pass: {why}"
    return bot_id


def register_checked_bot(client, headers, url: str, rulesets: list[str], name: str = "bot") -> int:
    """POST a bot and store a passed check of it (no game played: tests.helpers.mark_bot_checked);
    returns its id, the bot ``ready``."""
    r = client.post("/api/v1/bots", json={"name": name, "url": url, "rulesets": rulesets}, headers=headers)
    assert r.status_code == 201, r.json
    engine = client.application.extensions["arena"]["engine"]
    assert mark_bot_checked(make_sessionmaker(engine), r.json["id"]) == "ready"
    return r.json["id"]
