"""``arena demo`` as a newcomer runs it: a subprocess on embedded defaults (SQLite, eager
matches, sample bots over HTTP), then ``arena logs verify`` on the logs it wrote."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests import children
from tests.tables_play import http_calls, play_through_api

REPO = Path(__file__).resolve().parents[2]
ARENA = [sys.executable, "-m", "daifugo_arena.cli"]
DEMO_BOTS = ("heuristic", "greedy", "random-1", "random-2")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env["COLUMNS"] = "100"
    return env


@pytest.mark.slow
def test_demo_million_doubt(tmp_path):
    # a deep folder: every path printed is longer than the 80 columns rich assumes for a pipe
    out = tmp_path / "a-folder-with-a-long-name-so-that-paths-pass-80-columns" / "demo"
    out.parent.mkdir()
    env = _env()
    env.pop("COLUMNS")  # output captured, no COLUMNS: as in `arena demo > demo.txt`
    done = children.run(
        [*ARENA, "demo", "--out", str(out), "--seed", "11"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    stdout = done.stdout
    assert "Standings: million_doubt tournament 1" in stdout
    # One standings row per bot: rank, name, games (3 pairings x 10 games), wins...
    rows = {}
    for line in stdout.splitlines():
        m = re.match(r"\s*([1-4])\s+(\S+)\s+(\d+)\s+(\d+)\s+([+-]\d+\.\d\d)", line)
        if m and m.group(2) in DEMO_BOTS:
            rows[m.group(2)] = (int(m.group(1)), int(m.group(3)), int(m.group(4)), float(m.group(5)))
    assert set(rows) == set(DEMO_BOTS), stdout
    assert sorted(r[0] for r in rows.values()) == [1, 2, 3, 4]
    assert all(r[1] == 30 for r in rows.values()), rows
    assert sum(r[2] for r in rows.values()) == 60  # one winner per Million Doubt game
    by_rank = sorted(rows.values())
    assert [r[3] for r in by_rank] == sorted((r[3] for r in by_rank), reverse=True)
    assert "6 match logs" in stdout and "6 verified, 0 failed" in stdout
    assert re.search(r"http://127\.0\.0\.1:8000/ui/tournaments/1\b", stdout)
    # no line is cut: the database path, the URLs and the commands to copy are whole lines' parts;
    # paths below the current directory are printed relative to it (what one types next)
    lines = stdout.splitlines()
    here = out.relative_to(tmp_path)
    assert any(f"SQLite at {here / 'arena.db'}, matches run in-process" in ln for ln in lines), stdout
    assert any(
        re.search(r"API on http://127\.0\.0\.1:\d+/api/v1 \(OpenAPI at http://\S+/openapi\.json\)", ln) for ln in lines
    )
    assert f"  check again with: arena logs verify {here / 'logs'}" in lines, stdout
    assert any(ln.endswith(f"accounts' tokens in {here / 'demo.json'}") for ln in lines), stdout
    assert str(tmp_path) not in stdout
    # the pages: the --serve way, not a command to serve the database by hand
    assert any(
        "(bash infra/demo.sh --serve, or arena demo --serve)" in ln
        and ln.endswith("Open: http://127.0.0.1:8000/ui/tournaments/1")
        for ln in lines
    ), stdout
    assert max(map(len, lines)) > 120  # the test means something: these lines are long

    logs = sorted((out / "logs").glob("match-*.json.gz"))
    assert len(logs) == 6
    verify = subprocess.run(
        [*ARENA, "logs", "verify", str(out / "logs")], env=_env(), capture_output=True, text=True, timeout=300
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert verify.stdout.strip().splitlines()[-1] == "6 verified, 0 failed"

    info = json.loads((out / "demo.json").read_text())
    assert info["tournament_id"] == 1 and info["ruleset"] == "million_doubt"
    assert set(info["tokens"]) == {"organizer", "alice", "bob", "carol", "dave"}
    engine = create_engine(f"sqlite:///{out / 'arena.db'}")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT status FROM tournaments WHERE id = 1")).scalar() == "finished"
        assert conn.execute(text("SELECT count(*) FROM match_results")).scalar() == 6
        assert conn.execute(text("SELECT count(*) FROM match_logs")).scalar() == 6
        # eager mode computes each match's pars at once (docs/ranking.md); verify recomputed them
        assert conn.execute(text("SELECT count(*) FROM match_results WHERE par_status = 'done'")).scalar() == 6
        assert conn.execute(text("SELECT count(*) FROM bots WHERE status = 'ready'")).scalar() == 4
    engine.dispose()


@pytest.mark.slow
def test_demo_serve_keeps_the_api_up(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "demo"
    proc = children.spawn(
        [*ARENA, "demo", "--ruleset", "jdf", "--out", str(out), "--serve", "--port", str(port), "--seed", "5"],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    lines = []
    try:
        deadline = time.monotonic() + 300
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Open: "):
                break
            assert time.monotonic() < deadline, "".join(lines)
        else:
            raise AssertionError(f"demo exited {proc.wait()} without an Open: line:\n{''.join(lines)}")
        assert lines[-1].strip() == f"Open: http://127.0.0.1:{port}/ui/tournaments/1"
        token = json.loads((out / "demo.json").read_text())["tokens"]["organizer"]
        r = httpx.get(
            f"http://127.0.0.1:{port}/api/v1/tournaments/1",
            headers={"Authorization": f"Bearer {token}"},
            trust_env=False,
            timeout=10,
        )
        assert r.status_code == 200 and r.json()["status"] == "finished"
        assert r.json()["progress"] == {"finished": 4, "total": 4, "queued": 4}
        assert r.json()["ruleset"] == "jdf" and r.json()["options"]["sets"] == 1
        _play_a_table(f"http://127.0.0.1:{port}", out, lines)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, "".join(lines) + proc.stdout.read()


def _play_a_table(site: str, out: Path, lines: list[str]) -> None:
    """The served demo offers a table (docs/tables.md): ``player`` plays a Million Doubt game
    against the demo's greedy bot through the API, to its end."""
    if shutil.which("redis-server") is None:  # the demo said it has no table to offer
        assert any("no table to play at" in line for line in lines), "".join(lines)
        return
    assert any(line.startswith(f"Play: {site}/ui/play") for line in lines), "".join(lines)
    player = {"Authorization": f"Bearer {json.loads((out / 'demo.json').read_text())['tokens']['player']}"}
    with httpx.Client(base_url=site, headers=player, trust_env=False, timeout=30) as c:
        r = c.post("/api/v1/tables", json={"ruleset": "million_doubt", "opponents": ["greedy"], "games": 1})
        assert r.status_code == 201, r.text
        play_through_api(*http_calls(c), r.json()["id"])
        assert c.get(f"/api/v1/tables/{r.json()['id']}").json()["status"] == "finished"


@pytest.mark.slow
@pytest.mark.services
@pytest.mark.parametrize("redis_source", ["throwaway", "given"])
def test_demo_connect_plays_bots_that_dial_out(tmp_path, request, redis_source):
    """``arena demo --connect``: the four sample bots are registered as bots that connect, dial
    out to the demo's gateway through Redis (a redis-server the demo starts and stops, or the
    one ``--redis-url`` names), pass their checks and play the tournament; bot URLs on
    127.0.0.1 stay refused (the demo sets no private-URL exception)."""
    out = tmp_path / "demo"
    extra = ["--redis-url", request.getfixturevalue("redis_url")] if redis_source == "given" else []
    done = children.run(
        [*ARENA, "demo", "--connect", "--out", str(out), "--seed", "11", *extra],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    stdout = " ".join(done.stdout.split())  # rich wraps long lines
    how = re.search(r"4 sample bots dialing out to a gateway \((ws://127\.0\.0\.1:\d+/v1/bots), Redis (\S+)\)", stdout)
    assert how, stdout
    gateway, redis_url = how.group(1), how.group(2)
    if redis_source == "given":
        assert redis_url == extra[1]
    for account, bot in (("alice", "heuristic"), ("bob", "greedy"), ("carol", "random-1"), ("dave", "random-2")):
        assert f"account {account}: bot '{bot}'" in stdout
    assert stdout.count("dialing out -> id") == 4 and stdout.count("check passed") == 4
    assert "Standings: million_doubt tournament 1" in stdout
    assert "6 match logs" in stdout and "6 verified, 0 failed" in stdout

    info = json.loads((out / "demo.json").read_text())
    assert (info["transport"], info["gateway_url"]) == ("connect", gateway)
    engine = create_engine(f"sqlite:///{out / 'arena.db'}")
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT transport, url, status FROM bots ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [("connect", None, "ready")] * 4
        assert conn.execute(text("SELECT status FROM tournaments WHERE id = 1")).scalar() == "finished"
        assert conn.execute(text("SELECT count(*) FROM match_results")).scalar() == 6
        faults = conn.execute(text("SELECT faults FROM match_results")).scalars().all()
    engine.dispose()
    assert all(sum(json.loads(f) if isinstance(f, str) else f) == 0 for f in faults), faults
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as s:
        reachable = s.connect_ex(("127.0.0.1", port)) == 0
    assert reachable == (redis_source == "given")  # a throwaway Redis is stopped with the demo


@pytest.mark.slow  # two CLI processes: 3 to 10 s, the longest test of the fast lane
def test_demo_connect_says_what_it_needs_without_redis(tmp_path):
    """No redis-server on the PATH: one clear line naming what to install or give, exit 1,
    nothing started."""
    env = _env()
    env["PATH"] = str(tmp_path / "empty")
    done = subprocess.run(
        [*ARENA, "demo", "--connect", "--out", str(tmp_path / "demo")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    err = " ".join(done.stderr.split())
    assert "Error: --connect needs Redis" in err and "apt-get install redis-server" in err and "--redis-url" in err
    assert not (tmp_path / "demo" / "demo.json").exists()
    wrong = subprocess.run(
        [*ARENA, "demo", "--redis-url", "redis://127.0.0.1:1/0"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert wrong.returncode == 2 and "--redis-url goes with --connect" in wrong.stderr


@pytest.mark.slow
def test_demo_ladder_short_form(tmp_path):
    """``arena demo --ladder --ticks 3``: four sample bots of graded strength enter an open ladder,
    the demo's loop runs three ticks (two Million Doubt sets each, played in-process and rated as
    stored), then prints the live table and the official table."""
    out = tmp_path / "demo"
    done = subprocess.run(
        [*ARENA, "demo", "--ladder", "--ticks", "3", "--out", str(out)],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    stdout = done.stdout
    assert "the demo drives the ladder's tick itself for 3 ticks" in stdout
    assert re.search(r"watch it: http://127\.0\.0\.1:\d+/ui/ladders/1\b", stdout)
    assert re.search(r"ladder demo: 3 ticks, 6 sets played in \d+ s", stdout), stdout
    rows = {}
    for line in stdout.splitlines():
        m = re.match(r"\s*([1-4])\s+(search|heuristic|greedy|random) #\d", line)
        if m and m.group(2) not in rows:
            rows[m.group(2)] = int(m.group(1))
    assert sorted(rows.values()) == [1, 2, 3, 4], stdout  # the live table: each bot once, ranked
    assert "official table (6 pairwise results" in stdout and "significance matrix" in stdout
    assert "Open: http://127.0.0.1:8000/ui/ladders/1" in stdout
    info = json.loads((out / "demo.json").read_text())
    assert info["ladder_id"] == 1 and set(info["tokens"]) == {"organizer", "alice", "bob", "carol", "dave"}
    engine = create_engine(f"sqlite:///{out / 'arena.db'}")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM ladder_sets WHERE rating = 'rated'")).scalar() == 6
        assert conn.execute(text("SELECT sum(sets) FROM ladder_entries")).scalar() == 12  # 2 seats a set
        assert conn.execute(text("SELECT count(*) FROM match_results WHERE par_status = 'done'")).scalar() == 6
    engine.dispose()
    usage = subprocess.run([*ARENA, "demo", "--ticks", "3"], env=_env(), capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "--ticks goes with --ladder" in usage.stderr
