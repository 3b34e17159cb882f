"""``arena ladder ...`` against a real API server on 127.0.0.1 (SQLite): create (organizers), list,
enter, pause, resume, withdraw (the owner), show (the live table), sets and official once ticks
have played sets between HTTP sample bots; errors are one line."""

from __future__ import annotations

import dataclasses
import json
import random
import re
from datetime import timedelta

import httpx
import pytest
from click.testing import CliRunner

from api import create_app
from arena.accounts import create_account
from arena.config import Settings
from arena.db.models import utcnow
from arena.db.session import make_engine, make_sessionmaker
from arena.inprocess import InProcessDispatcher
from arena.usecases import ladders
from bots_sdk.samples import SAMPLE_BOTS
from daifugo_arena.cli import main
from daifugo_arena.cli.servers import WsgiServer
from tests.fakes import FakeBot
from tests.helpers import mark_bot_checked, migrated_sqlite_url

RS = "million_doubt"


@pytest.fixture
def api(tmp_path):
    url = migrated_sqlite_url(tmp_path / "arena.db")
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    with sessions() as s:
        _, organizer = create_account(s, "boss", "organizer")
    settings = Settings(
        data_dir=tmp_path,
        database_url=url,
        broker_url="redis://127.0.0.1:1/0",
        allow_private_bot_urls=True,
        rate_limits=False,
        par_rollouts=0,
    )
    server = WsgiServer(create_app(settings, engine=engine))
    bots: list[FakeBot] = []
    yield {"url": server.url, "organizer": organizer, "sessions": sessions, "settings": settings, "servers": bots}
    for b in bots:
        b.close()
    server.close()
    engine.dispose()


def arena(api, *args: str, token: str | None = None):
    base = [*args, "--api", api["url"]] + (["--token", token] if token else [])
    return CliRunner().invoke(main, base)


def _contestant(api, name: str, sample: str) -> tuple[str, int]:
    """A contestant account with one ready bot served by ``sample`` over HTTP; (token, bot id)."""
    token = httpx.post(f"{api['url']}/api/v1/accounts", json={"name": name}).json()["token"]
    server = FakeBot(SAMPLE_BOTS[sample](seed=3))
    api["servers"].append(server)
    r = httpx.post(
        f"{api['url']}/api/v1/bots",
        json={"name": f"{name}-{sample}", "url": server.origin + "/", "rulesets": [RS]},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert r.status_code == 201, r.text
    return token, r.json()["id"]


def test_create_enter_pause_resume_withdraw_and_one_line_errors(api):
    done = arena(api, "ladder", "create", "-r", RS, "--name", "Open MD", "--open", token=api["organizer"])
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == "1" and "ladder 1 'Open MD': million_doubt, open" in done.stderr
    listed = arena(api, "ladder", "list")  # an open ladder: no token needed
    assert listed.exit_code == 0 and listed.stdout.startswith("1\tOpen MD\tmillion_doubt\topen\tactive\tlast tick ")
    token, bot = _contestant(api, "ann", "greedy")
    refused = arena(api, "ladder", "enter", "1", "--bot", str(bot), token=token)
    assert refused.exit_code == 1
    assert refused.output.strip() == (
        f"Error: HTTP 422 on POST /api/v1/ladders/1/entries: invalid request: json.bot_id: bot {bot} has not passed "
        "its check (status unchecked)"
    )
    assert mark_bot_checked(api["sessions"], bot) == "ready"
    entered = arena(api, "ladder", "enter", "1", "--bot", str(bot), "--max-concurrent", "2", token=token)
    assert entered.exit_code == 0, entered.output
    assert entered.stdout.strip() == f"bot {bot} in ladder 1: active; mu 25.00 sigma 8.33, 0 rated sets"
    paused = arena(api, "ladder", "pause", "1", "--bot", str(bot), "--json", token=token)
    e = json.loads(paused.stdout)
    assert (e["status"], e["paused_by"], e["max_concurrent"]) == ("paused", "owner", 2)
    again = arena(api, "ladder", "pause", "1", "--bot", str(bot), token=token)
    assert again.exit_code == 1 and "HTTP 409" in again.output and "is paused" in again.output
    assert "active" in arena(api, "ladder", "resume", "1", "--bot", str(bot), token=token).stdout
    gone = arena(api, "ladder", "withdraw", "1", "--bot", str(bot), token=token)
    assert gone.stdout.startswith(f"bot {bot} in ladder 1: withdrawn")
    # organizers only create; an open ladder has no members; a private one is not listed to others
    no = arena(api, "ladder", "create", "-r", RS, "--name", "x", token=token)
    assert no.exit_code == 1 and no.output.strip() == "Error: HTTP 403 on POST /api/v1/ladders: organizer role required"
    both = arena(api, "ladder", "create", "-r", RS, "--name", "x", "--open", "--member", "2", token=api["organizer"])
    assert both.exit_code == 2 and "give --open or --member, not both" in both.output
    bad = arena(
        api, "ladder", "create", "-r", "jdf", "--name", "x", "--config", '{"jitter": -1}', token=api["organizer"]
    )
    assert bad.exit_code == 1 and "json.config.jitter: jitter: from 0 to 50" in bad.output
    private = arena(api, "ladder", "create", "-r", "jdf", "--name", "Club", "--member", "2", token=api["organizer"])
    assert private.stdout.strip() == "2"
    assert [ln.split("\t")[0] for ln in arena(api, "ladder", "list").stdout.splitlines()] == ["1"]
    assert [ln.split("\t")[0] for ln in arena(api, "ladder", "list", token=token).stdout.splitlines()] == ["1", "2"]
    hidden = arena(api, "ladder", "show", "2")
    assert (
        hidden.exit_code == 1
        and hidden.output.strip() == "Error: HTTP 404 on GET /api/v1/ladders/2: ladder 2 not found"
    )


@pytest.mark.slow
def test_show_sets_and_official_after_ticks(api):
    assert (
        arena(api, "ladder", "create", "-r", RS, "--name", "Open MD", "--open", token=api["organizer"]).exit_code == 0
    )
    entrants = {}
    for name, sample in (("ann", "heuristic"), ("ben", "greedy"), ("cat", "random")):
        token, bot = _contestant(api, name, sample)
        assert mark_bot_checked(api["sessions"], bot) == "ready"
        assert arena(api, "ladder", "enter", "1", "--bot", str(bot), token=token).exit_code == 0
        entrants[bot] = f"{name}-{sample}"
    play = InProcessDispatcher(dataclasses.replace(api["settings"], celery_eager=True)).send_matches
    now, rng = utcnow(), random.Random(2)
    for k in range(4):
        ladders.tick(
            api["sessions"],
            play,
            tick_s=60,
            probe_s=3600,
            online=lambda ids: set(),
            now=now + timedelta(minutes=k),
            rng=rng,
        )
    with api["sessions"]() as s:
        ladders.fit_ladder(s, 1)
    body = httpx.get(f"{api['url']}/api/v1/ladders/1").json()
    shown = arena(api, "ladder", "show", "1")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert "ladder 1 'Open MD': million_doubt, open, active" in lines[0]
    for r in body["rows"]:
        line = next(ln for ln in lines if re.match(rf"\s*{r['rank']}\s", ln))
        assert r["name"] in line and f"{r['conservative']:.2f}" in line and f"{r['mu']:.2f}" in line
    assert json.loads(arena(api, "ladder", "show", "1", "--json").stdout) == body
    sets = httpx.get(f"{api['url']}/api/v1/ladders/1/sets").json()
    assert sets and json.loads(arena(api, "ladder", "sets", "1", "--json").stdout) == sets
    table = arena(api, "ladder", "sets", "1").stdout
    assert "ladder 1: sets done" in table
    assert [int(m) for m in re.findall(r"^\s*(\d+)\s+finished", table, re.M)] == [s["match_id"] for s in sets]
    assert "sets playing now" in arena(api, "ladder", "sets", "1", "--playing").stdout
    bot = next(iter(entrants))
    mine = json.loads(arena(api, "ladder", "sets", "1", "--bot", str(bot), "--json").stdout)
    assert mine and all(entrants[bot] in s["names"] for s in mine)
    official = arena(api, "ladder", "official", "1")
    assert official.exit_code == 0, official.output
    assert "official table" in official.stdout and "significance matrix" in official.stdout
    fit = httpx.get(f"{api['url']}/api/v1/ladders/1/official").json()
    for r in fit["table"]:
        assert re.search(rf"^\s*{r['rank']}\s.*{re.escape(format(r['strength'], '+.2f'))}", official.stdout, re.M)
