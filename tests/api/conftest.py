"""Fixtures of the API tests: a migrated database (SQLite file and real PostgreSQL), the app,
accounts, and tiny real HTTP bot servers on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from api import create_app
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.session import make_engine, make_sessionmaker
from arena.inprocess import InProcessDispatcher
from tests.helpers import create_pg_database


def _fresh_pg_database(pg_url: str) -> str:
    return create_pg_database(pg_url, "t")


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path) -> str:
    """URL of an empty database: a SQLite file, or a fresh database on the real PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'arena.db'}"
    return _fresh_pg_database(request.getfixturevalue("pg_url"))


@pytest.fixture
def engine(database_url):
    upgrade(database_url)
    eng = make_engine(database_url)
    yield eng
    eng.dispose()


@pytest.fixture
def unreachable_broker(free_port) -> str:
    return f"redis://127.0.0.1:{free_port()}/0"


@pytest.fixture
def make_app(engine, database_url, tmp_path, unreachable_broker):
    """``make_app(allow_private=True, broker_url=None)`` -> Flask app on the migrated database."""

    def make(allow_private: bool = True, broker_url: str | None = None):
        settings = Settings(
            data_dir=tmp_path,
            database_url=database_url,
            broker_url=broker_url or unreachable_broker,
            allow_private_bot_urls=allow_private,
            rate_limits=False,
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


class BotServer:
    """A real HTTP server on 127.0.0.1 answering like a bot's health endpoint.

    Paths: ``/`` -> 200 {"name": "tiny", "protocol": 1}; ``/protocols`` -> 200 with a list;
    ``/error`` -> 500; ``/redirect`` -> 302 to ``/``; ``/text`` -> 200 not JSON;
    ``/noname`` -> 200 {"protocol": 1}. ``hits`` lists the paths requested by GET.
    ``POST`` (any path) plays: a decision request is answered by the greedy sample bot, a
    notice with ``{"ok": true}`` (so the conformance game of a bot check passes).
    """

    def __init__(self) -> None:
        from bots_sdk.samples import SAMPLE_BOTS

        self.hits: list[str] = []
        self.player = SAMPLE_BOTS["greedy"]()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: bytes, ctype: str = "application/json", extra=None):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                message = json.loads(body)
                if message.get("type") == "decision":
                    answer = server.player.decide(message)
                else:
                    answer = {"ok": True}
                self._send(200, json.dumps(answer).encode())

            def do_GET(self):
                server.hits.append(self.path)
                if self.path == "/":
                    self._send(200, json.dumps({"name": "tiny", "protocol": 1}).encode())
                elif self.path == "/protocols":
                    self._send(200, json.dumps({"name": "multi", "protocols": [1, 2]}).encode())
                elif self.path == "/error":
                    self._send(500, b'{"error": "boom"}')
                elif self.path == "/redirect":
                    self._send(302, b"", extra={"Location": "/"})
                elif self.path == "/text":
                    self._send(200, b"hello", "text/plain")
                elif self.path == "/noname":
                    self._send(200, b'{"protocol": 1}')
                else:
                    self._send(404, b"{}")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def bot_server() -> Iterator[BotServer]:
    server = BotServer()
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
    assert check["status"] == "passed" and bot["status"] == "ready", check
    return bot_id
