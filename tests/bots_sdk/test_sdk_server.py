"""A sample bot served with bots_sdk on 127.0.0.1: real HTTP, signatures, full games by URL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import engine
from arena.matchlog import read_log
from arena.runner.match import run_match
from arena.runner.players import HttpPlayer
from arena.runner.replay import replay
from bots_sdk import protocol
from bots_sdk.samples import GreedyBot, HeuristicBot, RandomBot
from bots_sdk.server import start
from engine.timebank import TimeRules
from tests import children

REPO = Path(__file__).resolve().parents[2]


def _request_body():
    g = engine.new_game("million_doubt", {}, 11)
    d = g.decision()
    return (
        g,
        d,
        protocol.dumps(
            protocol.build_request(g, d.seat, match_id="m", game=0, time_rules=TimeRules(), remaining_ms=60_000)
        ),
    )


def test_health_and_signed_decisions(bot_server):
    srv = bot_server(GreedyBot(), "s3cret")
    with httpx.Client(trust_env=False) as c:
        h = c.get(srv.url)
        assert h.status_code == 200
        assert h.json() == {"name": "greedy", "protocol": 1, "protocols": [1]}
        assert protocol.schema_errors("health", h.json()) == []

        g, d, body = _request_body()
        ok = c.post(srv.url, content=body, headers=protocol.sign("s3cret", body))
        assert ok.status_code == 200
        action = ok.json()
        assert protocol.schema_errors("action-response", action) == []
        g.apply(d.seat, action)  # legal

        bad = c.post(srv.url, content=body, headers=protocol.sign("wrong", body))
        assert bad.status_code == 401 and "signature" in bad.json()["error"]
        unsigned = c.post(srv.url, content=body, headers={"Content-Type": "application/json"})
        assert unsigned.status_code == 401 and "missing" in unsigned.json()["error"]
        stale = c.post(srv.url, content=body, headers=protocol.sign("s3cret", body, now=1_000_000))
        assert stale.status_code == 401

        junk = b"not json"
        assert c.post(srv.url, content=junk, headers=protocol.sign("s3cret", junk)).status_code == 400
        notice = protocol.dumps(
            protocol.match_start_notice(
                match_id="m",
                ruleset="million_doubt",
                options={},
                time_rules=TimeRules(),
                players=["a", "b"],
                you=0,
                games=2,
            )
        )
        n = c.post(srv.url, content=notice, headers=protocol.sign("s3cret", notice))
        assert n.status_code == 200 and n.json() == {"ok": True}
        assert c.put(srv.url).status_code == 405


def test_bot_exception_is_a_500(bot_server):
    class Broken(GreedyBot):
        def play(self, req):
            raise KeyError("oops")

    srv = bot_server(Broken())
    _, _, body = _request_body()
    r = httpx.post(srv.url, content=body, headers=protocol.sign(None, body), trust_env=False)
    assert r.status_code == 500 and "KeyError" in r.json()["error"]


def test_full_games_by_url_with_signatures(bot_server):
    a = bot_server(HeuristicBot(seed=1), "ka")
    b = bot_server(RandomBot(seed=2), "kb")
    log = run_match(
        [HttpPlayer(a.url, "ka", name="heuristic"), HttpPlayer(b.url, "kb", name="random")],
        "million_doubt",
        seed=8,
        games=4,
    )
    assert log["faults"] == []
    assert log["result"]["games"] == 4
    assert sum(log["result"]["wins"]) == 4
    assert all(ex["status"] == 200 for gm in log["games"] for ex in gm["exchanges"])
    assert log["players"][0]["url"] == a.url
    assert replay(log) == log["result"]


def test_four_player_game_over_http(bot_server):
    srvs = [bot_server(RandomBot(seed=s)) for s in range(4)]
    log = run_match([HttpPlayer(s.url) for s in srvs], "jdf", {"sets": 1, "games_per_set": 2}, seed=3)
    assert log["faults"] == []
    assert sorted(log["result"]["ranks"])[0] == 1
    replay(log)


def test_bank_accounting_over_http(bot_server):
    srv = bot_server(GreedyBot())
    # a bank no stall of a loaded machine reaches (the arithmetic is the same as with 5 s / 6 s)
    rules = TimeRules(initial_ms=30_000, increment_ms=1_000, cap_ms=31_000)
    log = run_match(
        [srv.url, GreedyBot()],
        "trump_millionaire",
        {"target_score": 25},
        seed=2,
        game_specs=[{"seed": 5, "seats": [0, 1, 1, 1]}],
        time_rules=rules,
    )
    exchanges = log["games"][0]["exchanges"]
    seen_units = set()
    for ex in exchanges:
        key = (ex["unit"], ex["seat"])
        if key not in seen_units:  # the first request of a seat in a deal: a fresh bank (TIME-1)
            assert ex["bank_before_ms"] == 30_000
            seen_units.add(key)
        assert ex["bank_after_ms"] == min(31_000, ex["bank_before_ms"] - ex["elapsed_ms"] + 1_000)
    assert len({ex["unit"] for ex in exchanges}) > 1


@pytest.mark.slow
def test_arena_play_cli_by_url_and_logs_verify(bot_server, tmp_path):
    srv = bot_server(GreedyBot(), "k1")
    logs = tmp_path / "logs"
    cmd = [
        sys.executable,
        "-m",
        "daifugo_arena.cli",
        "play",
        "--ruleset",
        "million_doubt",
        "--games",
        "4",
        "--seed",
        "7",
        "--secret",
        "k1",
        "--time-bank",
        "5",
        "--increment",
        "1",
        "--logs",
        str(logs),
        "-q",
        srv.url,
        "random",
    ]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert srv.url in out.stdout and "random" in out.stdout and "win rate" in out.stdout
    files = sorted(logs.glob("*.json.gz"))
    assert len(files) == 2
    log = read_log(files[0])
    assert log["time_rules"] == {"initial_ms": 5000, "increment_ms": 1000, "cap_ms": 5000}
    assert log["players"][0]["kind"] == "http" and log["faults"] == []

    ok = subprocess.run(
        [sys.executable, "-m", "daifugo_arena.cli", "logs", "verify", str(logs)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0 and ok.stdout.strip().endswith("2 verified, 0 failed")

    # tamper: a different response in one exchange -> reported, exit 1
    log["games"][0]["exchanges"][0]["response"] = {"type": "pass"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(log))
    out = subprocess.run(
        [sys.executable, "-m", "daifugo_arena.cli", "logs", "verify", str(logs), str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1
    lines = out.stdout.strip().splitlines()
    assert lines[-1] == "2 verified, 1 failed"
    assert lines[0].startswith(f"FAILED {bad}")


@pytest.mark.slow
def test_server_answers_with_over_a_thousand_connections_open(bot_server):
    """The arena keeps one keep-alive connection per seat of every match it plays against a
    bot at once, from every worker process. waitress's defaults stop there: at 100
    connections it stops accepting (a new match's connection waits until an idle one times
    out, and the bot loses its bank waiting), and its select() loop dies on a socket
    numbered 1024 or more (the bot never answers again). The SDK server takes
    ``CONNECTION_LIMIT`` connections and polls."""
    import resource
    import socket

    from bots_sdk.server import CONNECTION_LIMIT

    idle = 1100  # over 1024: this process holds both ends, so the server's sockets pass 2,000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2 * idle + 500
    if hard != resource.RLIM_INFINITY and hard < want:
        pytest.skip(f"needs {want} open files, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    assert CONNECTION_LIMIT > idle
    server = bot_server(RandomBot())
    socks = []
    try:
        for _ in range(idle):
            socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=60))
        # each of them is accepted and served (waitress answers a request on each)
        for s in socks[-3:]:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(65536).startswith(b"HTTP/1.1 200")
        # and a new connection still gets its answer
        r = httpx.get(server.url, timeout=60)
        assert r.status_code == 200 and r.json()["protocol"] == 1
    finally:
        for s in socks:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.slow
def test_server_under_a_low_file_limit_stops_accepting_instead_of_spinning(tmp_path):
    """The attacker's flood of a bot whose process may open only 1,024 files (a common
    default) and cannot raise it: the server serves at most 1,024 - FILE_RESERVE connections,
    so waitress stops accepting instead of failing ``accept()`` ("too many open files") in a
    loop that spins and writes a traceback each time; once connections close, it accepts
    again."""
    import socket

    from bots_sdk.server import FILE_RESERVE

    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))\n"
        "from bots_sdk.samples import RandomBot\nfrom bots_sdk.server import BotServer\n"
        "s = BotServer(RandomBot(), '127.0.0.1', 0, None, 8)\n"
        "print(s.port, s.connection_limit, flush=True)\ns.run()\n"
    )
    err = (tmp_path / "server.err").open("w")
    proc = children.spawn([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True)
    socks = []
    try:
        port, limit = (int(x) for x in proc.stdout.readline().split())
        assert limit == 1024 - FILE_RESERVE
        for _ in range(limit + 80):  # the last 80 wait in the listen backlog
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        assert socks[0].sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") is None
        assert socks[0].recv(65536).startswith(b"HTTP/1.1 200")  # an accepted one is served
        for s in socks[1:201]:  # the flood eases: the backlog is accepted, and room is left
            s.close()
        r = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert r.status_code == 200
        assert proc.poll() is None
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        proc.wait(10)
        err.close()
    log = (tmp_path / "server.err").read_text()
    assert "Too many open files" not in log and log.count("\n") < 20, log[-2000:]


def test_close_ends_keep_alive_connections_too():
    """BotServer.close() stops the server thread while a client still holds a keep-alive
    connection (waitress's own close() left it served until it idled out)."""
    server = start(RandomBot(seed=1))
    with httpx.Client() as client:
        assert client.get(server.url + "health").status_code == 200
        server.close()
        assert server._thread is not None and not server._thread.is_alive()
        with pytest.raises(httpx.TransportError):
            client.get(server.url + "health", timeout=2)
