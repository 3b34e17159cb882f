"""``arena tournament ...`` and ``arena logs download`` error handling against a real API
server on 127.0.0.1 (SQLite, no worker): one clear line, exit status 1, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import httpx
import pytest
from click.testing import CliRunner
from rich.console import Console
from sqlalchemy import select

from arena.accounts import create_account
from arena.config import Settings
from arena.db.session import make_engine, make_sessionmaker
from daifugo_arena.cli import main
from daifugo_arena.cli.display import standings_table
from daifugo_arena.cli.servers import WsgiServer
from tests.helpers import mark_bot_checked, migrated_sqlite_url

REPO = Path(__file__).resolve().parents[2]
ARENA = [sys.executable, "-m", "daifugo_arena.cli"]


@pytest.fixture
def api(tmp_path):
    url = migrated_sqlite_url(tmp_path / "arena.db")
    engine = make_engine(url)
    with make_sessionmaker(engine)() as s:
        _, organizer = create_account(s, "boss", "organizer")
        _, contestant = create_account(s, "alice")
    from api import create_app

    server = WsgiServer(
        create_app(Settings(data_dir=tmp_path, database_url=url, broker_url="redis://127.0.0.1:1/0"), engine=engine)
    )
    yield {
        "url": server.url,
        "organizer": organizer,
        "contestant": contestant,
        "sessions": make_sessionmaker(engine),
    }
    server.close()
    engine.dispose()


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    return subprocess.run(
        [*ARENA, *args], cwd=REPO, env={**base, **(env or {})}, capture_output=True, text=True, timeout=60
    )


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_unknown_tournament_is_one_line(api):
    done = run("tournament", "status", "99", "--api", api["url"], "--token", api["organizer"])
    assert done.returncode == 1
    assert _one_error_line(done) == "Error: HTTP 404 on GET /api/v1/tournaments/99: tournament 99 not found"


@pytest.mark.slow
def test_bad_token_and_missing_token(api):
    done = run("tournament", "standings", "1", "--api", api["url"], "--token", "nope")
    assert _one_error_line(done) == "Error: HTTP 401 on GET /api/v1/tournaments/1/standings: invalid token"
    done = run("tournament", "start", "1", env={"ARENA_API_URL": api["url"]})
    assert done.returncode == 2 and "no token: pass --token or set ARENA_TOKEN" in done.stderr
    # a read the pages allow without a token is tried without one; the API's 401 says how to give one
    done = run("tournament", "status", "1", env={"ARENA_API_URL": api["url"]})
    assert _one_error_line(done) == (
        "Error: HTTP 401 on GET /api/v1/tournaments/1: missing bearer token (Authorization: Bearer <token>): "
        "the tournament is not public (pass --token or set ARENA_TOKEN)"
    )


@pytest.mark.slow
def test_contestant_cannot_create_and_bad_participants_are_named(api):
    env = {"ARENA_API_URL": api["url"], "ARENA_TOKEN": api["contestant"]}
    done = run("tournament", "create", "--ruleset", "jdf", "--bot", "1", env=env)
    assert _one_error_line(done) == "Error: HTTP 403 on POST /api/v1/tournaments: organizer role required"
    env["ARENA_TOKEN"] = api["organizer"]
    done = run("tournament", "create", "--ruleset", "jdf", "--bot", "7", env=env)
    assert _one_error_line(done) == (
        "Error: HTTP 422 on POST /api/v1/tournaments: invalid request: json.participants: bot 7 does not exist"
    )
    done = run("tournament", "create", "--ruleset", "jdf", "--bot", "7", "--options", "[1]", env=env)
    assert done.returncode == 2 and "must be a JSON object" in done.stderr


@pytest.mark.slow
def test_api_down_is_one_line(api, free_port):
    port = free_port()
    done = run("logs", "download", "1", "--out", "x", "--api", f"http://127.0.0.1:{port}", "--token", "t")
    line = _one_error_line(done)
    assert line.startswith(f"Error: GET http://127.0.0.1:{port}/api/v1/tournaments/1: ConnectError")


def test_create_chooses_the_house_bot(api):
    """``--house-bot search`` reaches the API and comes back in the answer; a name that is no
    sample bot is refused by the command itself (exit 2), before any request."""
    r = httpx.post(
        f"{api['url']}/api/v1/bots",
        json={"name": "b", "url": "https://93.184.215.14/decide", "rulesets": ["million_doubt"]},
        headers={"Authorization": f"Bearer {api['contestant']}"},
    )
    assert r.status_code == 201, r.text
    assert mark_bot_checked(api["sessions"], r.json()["id"]) == "ready"
    base = ["tournament", "create", "-r", "million_doubt", "--bot", str(r.json()["id"]), "--fill-with-house-bots"]
    base += ["--api", api["url"], "--token", api["organizer"]]
    done = CliRunner().invoke(main, [*base, "--house-bot", "search", "--json"])
    assert done.exit_code == 0, done.output
    t = json.loads(done.stdout)
    assert (t["house_bot"], t["fill_with_house_bots"]) == ("search", True)
    summary = CliRunner().invoke(main, base)
    assert summary.exit_code == 0 and "house seats heuristic" in summary.stderr
    bad = CliRunner().invoke(main, [*base, "--house-bot", "alphazero"])
    assert bad.exit_code == 2 and "'alphazero' is not one of" in bad.output


def test_create_until_settled_and_with_a_chosen_seed(api):
    """``--until-settled N [--settle-delta X]`` reaches the API; the summary says the round and
    whether the organizer chose the seed (never the seed itself before the end)."""
    r = httpx.post(
        f"{api['url']}/api/v1/bots",
        json={"name": "b", "url": "https://93.184.215.14/decide", "rulesets": ["million_doubt"]},
        headers={"Authorization": f"Bearer {api['contestant']}"},
    )
    assert r.status_code == 201 and mark_bot_checked(api["sessions"], r.json()["id"]) == "ready"
    base = ["tournament", "create", "-r", "million_doubt", "--bot", str(r.json()["id"]), "--fill-with-house-bots"]
    base += ["--api", api["url"], "--token", api["organizer"]]
    done = CliRunner().invoke(main, [*base, "--until-settled", "5", "--settle-delta", "2.5", "--json"])
    assert done.exit_code == 0, done.output
    t = json.loads(done.stdout)
    assert t["until_settled"] == {"max_rounds": 5, "delta": 2.5, "alpha": 0.05, "beta": 0.05}
    assert not t["seed_chosen"] and t["seed"] is None
    summary = CliRunner().invoke(main, [*base, "--until-settled", "3", "--seed", "42"])
    assert summary.exit_code == 0, summary.output
    assert "play until settled: round 1 of at most 3" in summary.stderr
    assert "seed secret (chosen by the organizer: not rated)" in summary.stderr and "42" not in summary.stderr
    lone = CliRunner().invoke(main, [*base, "--settle-delta", "2"])
    assert lone.exit_code == 2 and "--settle-delta needs --until-settled" in lone.output
    zero = CliRunner().invoke(main, [*base, "--until-settled", "0"])
    assert zero.exit_code == 2


def _offline_field(api) -> int:
    """A Million Doubt tournament of two ready bots nobody serves (127.0.0.1:9, refused by this
    API's URL policy too): both offline at the roll call. Returns its id."""
    from arena.db.models import Account, Bot

    with api["sessions"]() as s:
        owner = s.scalars(select(Account.id).where(Account.name == "alice")).one()
        ids = []
        for name in ("sleepy", "dozy"):
            bot = Bot(owner_id=owner, name=name, url="http://127.0.0.1:9/", rulesets=["million_doubt"], secret="s")
            s.add(bot)
            s.flush()
            ids.append(bot.id)
        s.commit()
    for bot_id in ids:
        assert mark_bot_checked(api["sessions"], bot_id) == "ready"
    r = httpx.post(
        f"{api['url']}/api/v1/tournaments",
        json={"ruleset": "million_doubt", "participants": ids},
        headers={"Authorization": f"Bearer {api['organizer']}"},
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_start_lists_the_offline_entrants_and_starts_nothing(api):
    """Issue 42: not on a terminal, a start with offline entrants names them and the options,
    exit status 1, and the tournament is not started."""
    tid = _offline_field(api)
    done = run("tournament", "start", str(tid), "--api", api["url"], "--token", api["organizer"])
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"tournament {tid} was not started: 2 entrant(s) offline:" in done.stderr
    assert "  sleepy #1: health check failed: " in done.stderr and "  dozy #2: health check failed: " in done.stderr
    assert "--if-offline wait" in done.stderr and "--if-offline start" in done.stderr
    status = run("tournament", "status", str(tid), "--api", api["url"], "--token", api["organizer"])
    assert ", created, " in status.stdout


def test_start_asks_on_a_terminal_and_waits_or_starts_as_told(api):
    """On a terminal the organizer is asked; ``wait`` makes the start wait (here the broker is
    down: the API says the tournament waits and starts once it is back), ``status`` then says
    whom it waits for and until when."""
    from daifugo_arena.cli.client import ApiClient
    from daifugo_arena.cli.tournament import _start_asking, waiting_line

    tid = _offline_field(api)
    runner = CliRunner()
    with ApiClient(api["url"], api["organizer"]) as client, runner.isolation(input="wait\n") as (out, err, _):
        with pytest.raises(click.ClickException) as refused:
            _start_asking(client, tid, "ask", 120, interactive=True)
        asked = err.getvalue().decode()
    assert "sleepy #1" in asked and "wait for them (up to 120 s), start without them, or leave it" in asked
    assert "HTTP 503" in refused.value.message and "waits for its entrants" in refused.value.message
    with ApiClient(api["url"], api["organizer"]) as client:
        t = client.tournament(tid)
    assert t["status"] == "created" and t["waiting_until"]
    line = waiting_line(t)
    assert line.startswith(f"tournament {tid}: waiting for 2 offline entrant(s) (sleepy #1: health check failed")
    assert "s left)" in line
    status = run("tournament", "status", str(tid), "--api", api["url"], "--token", api["organizer"])
    assert f"tournament {tid}: waiting for 2 offline entrant(s)" in status.stdout


def test_an_entrant_without_games_has_no_rank_in_the_standings_table() -> None:
    """The API's rank 0 (no game yet) reads as a dash, as on the tournament page."""
    row = {"bot_id": 1, "bot_name": "idle", "house_bot": None, "games": 0, "wins": 0, "faults": 0}
    standings = {
        "tournament_id": 1,
        "ruleset": "million_doubt",
        "tie_break": "raw mean",
        "settled": False,
        "top_settled": False,
        "order_by": "raw",
        "games": 0,
        "games_with_par": 0,
        "neighbours": [],
        "rows": [{**row, "rank": 0, "mean_score": None, "ci95": None, "ordinal": 0.0}],
    }
    console = Console(record=True, width=200)
    console.print(standings_table(standings))
    [line] = [line for line in console.export_text().splitlines() if "idle" in line]
    assert line.split()[:2] == ["-", "idle"]
