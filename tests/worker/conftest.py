"""Fixtures of the match-runner tests: a fresh migrated PostgreSQL database, the real API app
(accounts, bots checked by their conformance game, tournaments started into real Redis), and
SDK bots served over HTTP on 127.0.0.1 whose behaviour can be switched after their check."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select

from api import create_app
from arena import matchlog
from arena.accounts import create_account
from arena.config import Settings
from arena.db.models import Match, MatchLog, MatchResult, Tournament
from arena.db.session import make_engine, make_sessionmaker
from arena.inprocess import InProcessDispatcher
from daifugo_arena.cli.compose import dispatcher_for
from tests.fakes import FakeBot
from tests.helpers import migrated_pg_database

#: Seconds a test waits for a tournament to finish before it fails (never a timed assertion:
#: only a guard against a hung task).
FINISH_TIMEOUT_S = 120.0


def fresh_pg_database(pg_url: str) -> str:
    """CREATE a database at the newest migration on the test server (a copy of the template
    migrated once per process); returns its URL."""
    return migrated_pg_database(pg_url, "w")


#: The match-runner tests' name for the shared fake bot (tests.fakes.FakeBot: the SDK's
#: server, behaviour switchable after the bot's check).
SwitchBot = FakeBot


class Arena:
    """The real API app on a database, with an organizer and a contestant account."""

    def __init__(self, database_url: str, broker_url: str, *, eager: bool = False, tmp_path=None):
        self.database_url = database_url
        self.settings = Settings(
            data_dir=tmp_path,
            database_url=database_url,
            broker_url=broker_url,
            allow_private_bot_urls=True,
            celery_eager=eager,
            rate_limits=False,
        )
        self.engine = make_engine(database_url)
        self.sessions = make_sessionmaker(self.engine)
        app = create_app(self.settings, engine=self.engine, dispatcher=dispatcher_for(self.settings))
        app.testing = True
        self.client = app.test_client()
        eager_settings = dataclasses.replace(self.settings, celery_eager=True)
        twin = create_app(eager_settings, engine=self.engine, dispatcher=InProcessDispatcher(eager_settings))
        twin.testing = True
        self.eager_client = twin.test_client()
        with self.sessions() as s:
            _, org = create_account(s, "org-" + uuid.uuid4().hex[:6], "organizer")
        self.org = {"Authorization": f"Bearer {org}"}
        r = self.client.post("/api/v1/accounts", json={"name": "c-" + uuid.uuid4().hex[:6]})
        assert r.status_code == 201, r.json
        self.owner = {"Authorization": f"Bearer {r.json['token']}"}

    def register(self, server: SwitchBot, rulesets: list[str], name: str) -> int:
        """Register ``server`` as a bot, give it its secret, check it (it must pass)."""
        r = self.client.post(
            "/api/v1/bots", json={"name": name, "url": server.url, "rulesets": rulesets}, headers=self.owner
        )
        assert r.status_code == 201, r.json
        server.set_secret(r.json["secret"])
        check = self.check(r.json["id"])
        assert check["status"] == "passed", check
        assert self.get(f"/bots/{r.json['id']}")["status"] == "ready"
        return r.json["id"]

    def check(self, bot_id: int) -> dict:
        """``POST /bots/{id}/check`` run in-process (eager mode, the same database): the check,
        done. Tests of the check on a worker post to ``self.client`` instead."""
        r = self.eager_client.post(f"/api/v1/bots/{bot_id}/check", headers=self.owner)
        assert r.status_code == 202, r.json
        return r.json

    def create(self, ruleset: str, participants: list[int], **kw: Any) -> int:
        body = {
            "ruleset": ruleset,
            "participants": participants,
            "time_rules": {"initial": 1.0, "increment": 0.1, "cap": 1.0},
            "separate_owners": False,  # the tests' bots are one contestant's
            **kw,
        }
        r = self.client.post("/api/v1/tournaments", json=body, headers=self.org)
        assert r.status_code == 201, r.json
        return r.json["id"]

    def start(self, tournament_id: int, if_offline: str = "start") -> dict:
        """Start; by default whoever is offline (these tests stop bots on purpose: a start that
        asks or waits is tests/worker/test_entrants_wait.py's)."""
        r = self.client.post(
            f"/api/v1/tournaments/{tournament_id}/start", query_string={"if_offline": if_offline}, headers=self.org
        )
        assert r.status_code == 202, r.json
        return r.json

    def get(self, path: str) -> Any:
        r = self.client.get(f"/api/v1{path}", headers=self.org)
        assert r.status_code == 200, r.json
        return r.json

    def wait_finished(self, tournament_id: int, timeout_s: float = FINISH_TIMEOUT_S, workers=()) -> dict:
        """Poll until the tournament is no longer running; fail (with worker logs) after
        ``timeout_s`` seconds: a hung task."""
        deadline = time.monotonic() + timeout_s
        while True:
            t = self.get(f"/tournaments/{tournament_id}")
            if t["status"] != "running":
                return t
            if time.monotonic() > deadline:
                logs = "\n".join(w.log()[-3000:] for w in workers)
                pytest.fail(f"tournament {tournament_id} still running after {timeout_s} s: {t['progress']}\n{logs}")
            time.sleep(0.2)

    def stored(self, tournament_id: int) -> list[tuple[Match, MatchResult, dict]]:
        """(match, result, decompressed log) of every finished match, in schedule order."""
        import json

        with self.sessions() as s:
            rows = s.execute(
                select(Match, MatchResult, MatchLog)
                .join(MatchResult, MatchResult.match_id == Match.id)
                .join(MatchLog, MatchLog.match_id == Match.id)
                .where(Match.tournament_id == tournament_id)
                .order_by(Match.index)
            ).all()
            out = []
            for m, res, lg in rows:
                _ = list(m.seats)
                out.append((m, res, json.loads(matchlog.decompress(lg.data))))
            return out

    def counts(self, tournament_id: int) -> dict[str, int]:
        with self.sessions() as s:
            ids = select(Match.id).where(Match.tournament_id == tournament_id)
            return {
                "matches": s.scalar(
                    select(func.count()).select_from(Match).where(Match.tournament_id == tournament_id)
                ),
                "results": s.scalar(select(func.count()).select_from(MatchResult).where(MatchResult.match_id.in_(ids))),
                "logs": s.scalar(select(func.count()).select_from(MatchLog).where(MatchLog.match_id.in_(ids))),
            }

    def tournament(self, tournament_id: int) -> Tournament:
        with self.sessions() as s:
            return s.get(Tournament, tournament_id)

    def close(self) -> None:
        self.engine.dispose()


@pytest.fixture
def pg_database(pg_url) -> str:
    return fresh_pg_database(pg_url)


@pytest.fixture
def arena(pg_database, redis_url, tmp_path) -> Iterator[Arena]:
    a = Arena(pg_database, redis_url, tmp_path=tmp_path)
    yield a
    a.close()


@pytest.fixture
def bots() -> Iterator[list[SwitchBot]]:
    """A list to put SwitchBot servers in; all are closed at teardown."""
    servers: list[SwitchBot] = []
    yield servers
    for s in servers:
        s.close()
