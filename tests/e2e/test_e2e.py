"""End to end, against the real stack: the API served over HTTP on 127.0.0.1 (waitress, in a
thread), a real Celery worker process, PostgreSQL and Redis, four SDK sample bots as HTTP
servers verifying their signing secrets, and the ``arena`` command line as a user runs it.

For each rule set: an organizer made by ``arena accounts create --organizer``; four contestants
sign up, register and check their bots over HTTP; the organizer creates and starts a
round-robin tournament (``arena tournament create|start``), polls it to completion
(``arena tournament status --watch``), reads the standings (checked against the stored match
results), downloads every log (``arena logs download``) and every log is replayed through the
engine to the result the API stored (and ``arena logs verify`` agrees).

Sizes are small (short games, 5 s time banks) so the three rule sets take about a minute.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from arena.config import Settings
from arena.db.migrate import upgrade
from arena.fairness import attempt_seed
from arena.matchlog import read_log
from arena.runner.replay import replay
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import start as start_bot
from daifugo_arena.cli.servers import WsgiServer
from tests import children
from tests.helpers import create_pg_database

pytestmark = pytest.mark.services

REPO = Path(__file__).resolve().parents[2]
ARENA = [sys.executable, "-m", "daifugo_arena.cli"]
BOTS = (("alice", "heuristic"), ("bob", "greedy"), ("carol", "random"), ("dave", "random"))
#: Per rule set: games_per_pairing, options, matches expected with 4 participants.
SIZES = {
    "million_doubt": (2, {}, 6),  # 6 pairs, one match of 2 games each
    "trump_millionaire": (1, {"target_score": 20}, 4),  # 1 table x 4 seat rotations
    "jdf": (1, {"sets": 1, "games_per_set": 2}, 4),
}
TIME_RULES = {"initial": 5.0, "increment": 1.0, "cap": 5.0}
#: Seconds the whole tournament may take before the test gives up (not a timing assertion).
TOURNAMENT_TIMEOUT_S = 240


def _fresh_pg_database(pg_url: str) -> str:
    return create_pg_database(pg_url, "e2e")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _arena(*args: str, env: dict[str, str], timeout: float = TOURNAMENT_TIMEOUT_S) -> subprocess.CompletedProcess:
    done = children.run(
        [*ARENA, *args],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"arena {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture
def stack(pg_url, redis_url, celery_worker_factory, tmp_path):
    """A fresh PostgreSQL database, a Redis database of its own, the API on 127.0.0.1 and a worker."""
    db_url = _fresh_pg_database(pg_url)
    upgrade(db_url)
    broker = redis_url.rsplit("/", 1)[0] + "/7"  # keep other tests' queued tasks away
    from api import create_app

    settings = Settings(
        data_dir=tmp_path,
        database_url=db_url,
        broker_url=broker,
        allow_private_bot_urls=True,
        rate_limit_prefix=f"e2e-{uuid.uuid4().hex}",
    )
    server = WsgiServer(create_app(settings))
    worker = celery_worker_factory(broker_url=broker, database_url=db_url, concurrency=2)
    yield {"api": server.url, "db": db_url, "worker": worker}
    server.close()


@pytest.mark.parametrize("ruleset", list(SIZES))
def test_tournament_end_to_end(stack, ruleset, tmp_path):
    api = stack["api"]
    gpp, options, expected_matches = SIZES[ruleset]
    db_env = {"ARENA_DATABASE_URL": stack["db"]}

    # The operator makes an organizer account with the CLI (token on stdout).
    done = _arena("accounts", "create", "--organizer", "boss", env=db_env, timeout=60)
    organizer_token = done.stdout.strip().splitlines()[-1]
    cli_env = {"ARENA_API_URL": api, "ARENA_TOKEN": organizer_token}

    http = httpx.Client(base_url=api + "/api/v1", timeout=60, trust_env=False)
    servers = []
    try:
        # Contestants sign up, register their bots over HTTP, and check them.
        bot_ids: dict[int, str] = {}
        for i, (account, sample) in enumerate(BOTS):
            r = http.post("/accounts", json={"name": account})
            assert r.status_code == 201, r.text
            assert r.json()["role"] == "contestant"
            auth = {"Authorization": f"Bearer {r.json()['token']}"}
            port = _free_port()
            r = http.post(
                "/bots",
                headers=auth,
                json={"name": f"{sample}-{i}", "url": f"http://127.0.0.1:{port}/", "rulesets": [ruleset]},
            )
            assert r.status_code == 201, r.text
            bot = r.json()
            assert bot["status"] == "unchecked"
            servers.append(start_bot(SAMPLE_BOTS[sample](seed=i), "127.0.0.1", port, bot["secret"]))
            r = http.post(f"/bots/{bot['id']}/check", headers=auth)  # 202: the worker checks it
            assert r.status_code == 202, r.text
            check, deadline = r.json(), time.monotonic() + TOURNAMENT_TIMEOUT_S
            while check["status"] in ("queued", "running") and time.monotonic() < deadline:
                time.sleep(0.2)
                check = http.get(check["check_url"].removeprefix("/api/v1"), headers=auth).json()
            assert check["status"] == "passed", check
            assert http.get(f"/bots/{bot['id']}", headers=auth).json()["status"] == "ready"
            bot_ids[bot["id"]] = sample

        # The organizer creates and starts the tournament with the CLI, and watches it finish.
        done = _arena(
            "tournament",
            "create",
            "--ruleset",
            ruleset,
            *sum((["--bot", str(b)] for b in bot_ids), []),
            "--games-per-pairing",
            str(gpp),
            "--options",
            json.dumps(options),
            "--seed",
            "2024",
            "--time-bank",
            str(TIME_RULES["initial"]),
            "--increment",
            str(TIME_RULES["increment"]),
            "--cap",
            str(TIME_RULES["cap"]),
            "--name",
            f"e2e {ruleset}",
            env=cli_env,
            timeout=60,
        )
        tid = int(done.stdout.strip().splitlines()[-1])
        _arena("tournament", "start", str(tid), env=cli_env, timeout=60)
        done = _arena("tournament", "status", str(tid), "--watch", "--poll", "0.3", "--json", env=cli_env)
        final = json.loads(done.stdout)
        assert final["status"] == "finished", final
        assert final["progress"] == {
            "finished": expected_matches,
            "total": expected_matches,
            "queued": expected_matches,
        }

        org = {"Authorization": f"Bearer {organizer_token}"}
        matches = http.get(f"/tournaments/{tid}/matches", headers=org, params={"per_page": 100}).json()
        assert matches["total"] == expected_matches
        assert all(m["status"] == "finished" and m["result"] is not None for m in matches["items"])
        by_id = {m["id"]: m for m in matches["items"]}

        # Standings agree with the stored results (games, wins = places 1, total score, faults).
        done = _arena("tournament", "standings", str(tid), "--json", env=cli_env, timeout=60)
        standings = json.loads(done.stdout)
        assert standings == http.get(f"/tournaments/{tid}/standings", headers=org).json()
        expected = {b: {"games": 0, "wins": 0, "score": 0.0, "faults": 0} for b in bot_ids}
        for m in matches["items"]:
            res = m["result"]
            for seat in m["seats"]:
                e, s = expected[seat["bot_id"]], seat["seat"]
                for game in res["games"]:
                    e["games"] += 1
                    e["wins"] += game["places"][s] == 1
                    e["score"] += game["scores"][s]
                e["faults"] += res["faults"][s]
        rows = {r["bot_id"]: r for r in standings["rows"]}
        assert set(rows) == set(bot_ids)
        assert sorted(r["rank"] for r in rows.values()) == [1, 2, 3, 4]
        for bot_id, e in expected.items():
            row = rows[bot_id]
            assert (row["games"], row["wins"], row["faults"]) == (e["games"], e["wins"], e["faults"]), (bot_id, row, e)
            assert row["total_score"] == pytest.approx(e["score"])
            assert row["games"] > 0
        means = [rows[r["bot_id"]]["mean_score"] for r in standings["rows"]]
        assert means == sorted(means, reverse=True)  # first tie-break key

        # Every log downloaded, replayed through the engine to the result the API stored.
        logs_dir = tmp_path / "logs"
        done = _arena("logs", "download", str(tid), "--out", str(logs_dir), env=cli_env, timeout=120)
        files = sorted(logs_dir.glob("match-*.json.gz"))
        assert len(files) == expected_matches, done.stdout
        for f in files:
            match_id = int(f.name.split("-")[1].split(".")[0])
            log = read_log(f)
            assert log["ruleset"] == ruleset and log["seed"] == attempt_seed(by_id[match_id]["seed"], 1)
            again = replay(log)
            stored = by_id[match_id]["result"]
            assert again["scores"] == pytest.approx(stored["scores"])  # player index = seat
            assert again["faults"] == stored["faults"]
            assert len(log["games"]) == len(stored["games"])
            assert [p["url"] for p in log["players"]] == [None] * len(by_id[match_id]["seats"])  # no URLs
        # The seed is revealed: verify checks the commitment and every deal against it too.
        revealed = json.loads((logs_dir / "tournament.json").read_text())
        assert revealed["seed"] == 2024 and revealed["seed_revealed"] and revealed["commitment"]
        done = _arena("logs", "verify", str(logs_dir), env={}, timeout=120)
        assert "deals checked against the revealed seed 2024" in done.stdout
        assert done.stdout.strip().splitlines()[-1] == f"{expected_matches} verified, 0 failed"
    finally:
        http.close()
        for s in servers:
            s.close()
    assert stack["worker"].alive(), stack["worker"].log()
