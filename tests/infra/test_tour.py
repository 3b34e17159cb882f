"""``infra/tour.sh`` as a newcomer runs the README's quick tour: the whole local service started
by the script (its own PostgreSQL, Redis, site, worker, beat and gateway, on ports of its own),
with ``ARENA_ALLOW_PRIVATE_BOT_URLS`` unset. Its two sample bots dial out and are ready, entered
in its open Million Doubt ladder, which beat's tick and the worker make move; a
contestant registers a bot that connects through the pages, runs the very command the bot's
page shows, passes the check and plays a tournament against the sample bots; ``stop`` ends
every process it started."""

from __future__ import annotations

import html
import os
import re
import shlex
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import children
from tests.helpers import paced, wait_until
from tests.tables_play import http_calls, play_through_api

pytestmark = [pytest.mark.services, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
TOUR = REPO / "infra" / "tour.sh"
PROCESSES = ("site", "worker", "beat", "gateway", "bot1", "bot2")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: Each asking is a request to the tour's site, which shares the machine with the worker
#: playing the matches: asked at most every 0.1 s.
_paced = paced


def _listening_inodes_of(pid: int) -> set[str]:
    """Inodes of the listening TCP sockets (/proc/net/tcp{,6}, state 0A) held by process ``pid``
    and its children."""
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":
                listening.add(fields[9])
    held = set()
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        pids += [int(c) for c in (task / "children").read_text().split()]
    for p in pids:
        for fd in Path(f"/proc/{p}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                held.add(target[8:-1])
    return listening & held


class Tour:
    def __init__(self, tmp_path: Path):
        self.dir = tmp_path / "tour"
        self.port, self.gateway_port = _free_port(), _free_port()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        self.env.update(
            ARENA_TOUR_DIR=str(self.dir),
            ARENA_TOUR_PORT=str(self.port),
            ARENA_TOUR_GATEWAY_PORT=str(self.gateway_port),
            ARENA_PG_PORT=str(_free_port()),
            ARENA_REDIS_PORT=str(_free_port()),
        )
        assert "ARENA_ALLOW_PRIVATE_BOT_URLS" not in self.env
        self.site = f"http://127.0.0.1:{self.port}"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(TOUR), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )

    def pid(self, name: str) -> int:
        return int((self.dir / f"{name}.pid").read_text())

    @property
    def token(self) -> str:
        return (self.dir / "organizer-token").read_text().strip()

    def api(self, token: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.site, headers={"Authorization": f"Bearer {token}"}, trust_env=False, timeout=30
        )


@pytest.fixture
def tour(tmp_path: Path) -> Iterator[Tour]:
    t = Tour(tmp_path)
    try:
        yield t
    finally:
        t.run("stop")


def _bot_pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_quick_tour_with_bots_that_dial_out(tour: Tour) -> None:
    started = tour.run("start")
    assert started.returncode == 0, started.stdout + started.stderr
    out = started.stdout
    gateway = f"ws://127.0.0.1:{tour.gateway_port}/v1/bots"
    assert f"gateway          {gateway}" in out
    assert "sample bots      #1 greedy, #2 heuristic: ready, dialing out" in out
    assert f"play a game      {tour.site}/ui/play" in out
    assert f"organizer token  {tour.token}" in out
    status = tour.run("status").stdout.splitlines()
    assert [line.split(" (")[0] for line in status] == [f"{n}: running" for n in PROCESSES[:4]] + [
        "bot1: running",
        "bot2: running",
    ]

    organizer = tour.api(tour.token)
    # the sample bots: the organizer's, bots that connect, connected, ready without a warning,
    # and listening on no port
    for bot_id, name, process in ((1, "greedy", "bot1"), (2, "heuristic", "bot2")):
        b = organizer.get(f"/api/v1/bots/{bot_id}").json()
        assert (b["name"], b["transport"], b["url"], b["status"]) == (name, "connect", None, "ready")
        assert b["presence"]["connected"] is True and b["presence"]["connections"] == 1
        assert sorted(b["rulesets"]) == ["jdf", "million_doubt", "trump_millionaire"]
        assert b["last_check"]["ok"] is True and b["warnings"] == []
        assert b["play_people"] is True  # a newcomer may sit down against them (docs/tables.md)
        assert _listening_inodes_of(tour.pid(process)) == set()

    # the open Million Doubt ladder: both sample bots entered, and beat's tick (every 10 s)
    # forms sets that the worker plays, each stored set rated once: the ladder moves
    assert (
        f"  ladder           {tour.site}/ui/ladders/1  (open, Million Doubt: both sample bots entered; "
        "a tick every 10 s)" in out
    )
    public = httpx.Client(base_url=tour.site, trust_env=False, timeout=30)
    ladders = public.get("/api/v1/ladders").json()  # an open ladder: no token
    assert [(ld["id"], ld["ruleset"], ld["open"]) for ld in ladders] == [(1, "million_doubt", True)]
    rows = {r["bot_id"]: r for r in public.get("/api/v1/ladders/1").json()["rows"] if r["bot_id"] is not None}
    assert set(rows) == {1, 2} and all(r["status"] == "active" and r["online"] for r in rows.values())
    rated = wait_until(
        _paced(lambda: [s for s in public.get("/api/v1/ladders/1/sets").json() if s["rating"] == "rated"]),
        "a rated set of the tour's ladder",
        timeout_s=180,
    )
    assert all({"greedy", "heuristic"} & set(s["names"]) for s in rated)  # a sample bot against a house bot
    assert all(s["seed"] is not None and s["salt"] for s in rated)  # revealed once stored
    page = public.get("/ui/ladders/1").text
    assert 'id="ladder-table"' in page and f'<tr data-match="{rated[-1]["match_id"]}"' in page

    # a contestant: signs up, signs in on the pages with its token
    token = httpx.post(f"{tour.site}/api/v1/accounts", json={"name": "mika"}, trust_env=False).json()["token"]
    contestant = tour.api(token)
    # bots on this machine served over HTTP are refused, as on a real site (no private URLs)
    refused = contestant.post(
        "/api/v1/bots", json={"name": "local", "url": "http://127.0.0.1:9001/", "rulesets": ["million_doubt"]}
    )
    assert refused.status_code == 422 and "url" in refused.text
    pages = httpx.Client(base_url=tour.site, trust_env=False, timeout=30)
    assert pages.post("/ui/login", data={"token": token, "next": "/ui/bots"}).status_code == 303
    form = pages.get("/ui/bots").text
    answer = pages.post(
        "/ui/bots",
        data={
            "csrf": re.search(r'name="csrf" value="([^"]+)"', form).group(1),  # type: ignore[union-attr]
            "form_id": re.search(r'name="form_id" value="([0-9a-f]{32})"', form).group(1),  # type: ignore[union-attr]
            "name": "laptop",
            "transport": "connect",
            "rulesets": ["million_doubt"],
        },
    )
    assert answer.status_code == 201
    command = html.unescape(
        re.search(r'<code id="connect-command" data-with-secret="1">([^<]+)</code>', answer.text).group(1)  # type: ignore[union-attr]
    )
    bot_id = int(re.search(r"--bot-id (\d+)", command).group(1))  # type: ignore[union-attr]
    assert bot_id == 3 and f"--gateway {gateway} greedy" in command
    # the page's command, run as the newcomer runs it (with the tour's .venv activated)
    words = shlex.split(command)
    assert words[0].startswith("ARENA_BOT_SECRET=") and words[1] == "arena"
    env = {k: v for k, v in tour.env.items() if not k.startswith("ARENA_")}
    env["ARENA_BOT_SECRET"] = words[0].split("=", 1)[1]
    bot = children.spawn(
        [str(REPO / ".venv" / "bin" / "arena"), *words[2:]],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_until(
            _paced(lambda: (contestant.get(f"/api/v1/bots/{bot_id}").json()["presence"] or {}).get("connected")),
            "the contestant's bot connected",
        )
        assert _listening_inodes_of(bot.pid) == set()
        page = pages.get(f"/ui/bots/{bot_id}").text
        assert 'id="presence" data-connected="1" data-connections="1"' in page
        # the check, from the page's button
        check = pages.post(
            f"/ui/bots/{bot_id}/check",
            data={"csrf": re.search(r'name="csrf" value="([^"]+)"', page).group(1)},  # type: ignore[union-attr]
        )
        assert check.status_code == 303
        mine = wait_until(
            _paced(
                lambda: (b := contestant.get(f"/api/v1/bots/{bot_id}").json())["status"] in ("ready", "failed") and b
            ),
            "the check over",
        )
        assert mine["status"] == "ready" and mine["warnings"] == [], mine["last_check"]
        page = pages.get(f"/ui/bots/{bot_id}").text
        assert 'id="check-result" class="ok"' in page
        assert "Authentication check (a connection with a wrong proof)" in page and "closed with 4401" in page

        # the organizer: a tournament of the three ready bots
        t = organizer.post(
            "/api/v1/tournaments",
            json={
                "name": "tour",
                "ruleset": "million_doubt",
                "participants": [1, 2, bot_id],
                "separate_owners": False,  # the two sample bots are the organizer's
                "games_per_pairing": 2,
                "time_rules": {"initial": 10, "increment": 1, "cap": 10},
            },
        )
        assert t.status_code == 201, t.text
        tid = t.json()["id"]
        assert organizer.post(f"/api/v1/tournaments/{tid}/start").status_code in (200, 202)
        done = wait_until(
            _paced(
                lambda: (
                    (x := organizer.get(f"/api/v1/tournaments/{tid}").json())["status"] in ("finished", "failed") and x
                )
            ),
            "the tournament over",
            timeout_s=300,
        )
        assert done["status"] == "finished" and done["progress"]["finished"] == done["progress"]["total"] == 3
        rows = organizer.get(f"/api/v1/tournaments/{tid}/standings").json()["rows"]
        assert sorted(r["bot_id"] for r in rows) == [1, 2, bot_id]
        assert all(r["games"] == 4 and r["faults"] == 0 for r in rows), rows
    finally:
        bot.send_signal(signal.SIGINT)
        bot.wait(timeout=30)

    # the newcomer learns the game first: a table against the sample bot greedy, which dials out
    table = contestant.post("/api/v1/tables", json={"ruleset": "million_doubt", "opponents": [1], "games": 1})
    assert table.status_code == 201, table.text
    play_through_api(*http_calls(contestant), table.json()["id"], timeout_s=300)
    assert contestant.get(f"/api/v1/tables/{table.json()['id']}").json()["status"] == "finished"

    pids = {name: tour.pid(name) for name in PROCESSES}
    stopped = tour.run("stop")
    assert stopped.returncode == 0 and stopped.stdout.strip().endswith("tour.sh: stopped"), stopped.stderr
    assert [p for p in pids.values() if _bot_pid_alive(p)] == []
    assert tour.run("status").stdout.splitlines() == [f"{n}: stopped" for n in PROCESSES]
    assert not (tour.dir / "env").exists()
