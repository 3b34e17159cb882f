"""``arena demo`` as a newcomer runs it: a subprocess on embedded defaults (SQLite, eager
matches, sample bots over HTTP), then ``arena logs verify`` on the logs it wrote."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

REPO = Path(__file__).resolve().parents[2]
ARENA = [sys.executable, "-m", "cli"]
DEMO_BOTS = ("heuristic", "greedy", "random-1", "random-2")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env["COLUMNS"] = "100"
    return env


@pytest.mark.slow
def test_demo_million_doubt(tmp_path):
    out = tmp_path / "demo"
    done = subprocess.run(
        [*ARENA, "demo", "--out", str(out), "--seed", "11"],
        cwd=tmp_path,
        env=_env(),
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
    proc = subprocess.Popen(
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
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, "".join(lines) + proc.stdout.read()
