"""Isolation benchmark (issues 24 and 38): one contestant's slow bot, a flood of slow bot
checks, or a stranger flooding the gateway, against everyone else's matches and checks.

    .venv/bin/python bench/isolation_bench.py [--think-ms 10] [--quick] [--parts slow,checks,gateway]

Starts everything it needs and stops it afterwards: PostgreSQL and Redis (``infra/postgres.sh``,
``infra/redis.sh`` on free ports), one real ``arena worker`` with its DEFAULT settings (one
match process per core of 32 threads each, and the check process), and the bots, served by
the SDK's server (waitress) on 127.0.0.1 in this process. Tournaments go through the real
API app. Prints two lines:

* ``isolation slow bot: others X s, baseline Y s``: a JDF field of 8 bots (280 one-game
  matches, time rules 1 s / +0.2 s / cap 1 s). In one run bot 0 answers just inside its bank
  (each decision waits its remaining bank less 60 ms: about 0.2 s a decision once the first
  one has spent its second); in the other it thinks like the rest (``--think-ms``). X and Y:
  seconds from the start request until every match that does NOT seat bot 0 is stored.
* ``isolation check flood: tournament X s, baseline Y s``: a Million Doubt tournament of 4
  bots (6 matches of 4 games), alone (Y), then started while 24 checks of bots that hold
  every decision (12 accounts, 2 checks each, the API's limit) are queued or running (X):
  seconds from the start request to the tournament finished.

* ``isolation gateway flood: tournament X s, baseline Y s, faults F`` (issue 38): a Million
  Doubt tournament of 4 bots that dial out (``arena bots connect`` processes through one real
  ``arena gateway``; 6 matches of 10 games, the default time rules), alone (Y), then while 64
  loops of a stranger (one process, no account) each open a connection to the gateway,
  answer its challenge with a 63 KB auth frame of valid JSON (a list of 21,000 empty objects)
  and start again once refused (X). Two rounds of each in turn; X and Y are the shorter of
  their two (the machine is shared: a drift weighs on both). F: the faults of the flooded
  tournaments' bots, both rounds. The
  details on stderr add the gateway's and the flooding process's CPU seconds, the gateway's
  ``/health`` latency and how long an honest bot took to be welcomed, now and then, meanwhile.
* ``isolation check flood: honest check waited X s, baseline Y s`` (issue 38): an honest
  contestant's check, asked from its own address, alone (Y), then right after 66 checks of
  bots that use their whole bank (33 fresh accounts on 11 addresses, 2 checks each) are
  queued or running on the worker's 4 check threads (X): seconds from the check's request to
  its start.

Goals: X <= 1.2 x Y in the first three (F = 0); X <= Y + one check's time limit
(``ARENA_CHECK_TIME_LIMIT_S``, printed in the details) in the last. ``--quick``: a JDF field of
6 (60 matches), 12 checks, 16 flooding loops and 22 checks of the check flood. ``--parts``:
which parts to run (default all; the details on stderr say which ran).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from orchestration_bench import Services, wait_finished  # noqa: E402
from tournament_bench import DefaultWorker  # noqa: E402

from arena.config import Settings  # noqa: E402
from bots_sdk.samples import SAMPLE_BOTS  # noqa: E402

JDF_RULES = {"initial": 1.0, "increment": 0.2, "cap": 1.0}
JDF_OPTIONS = {"sets": 1, "games_per_set": 1}
#: What a bot answering "just inside its bank" leaves of it, seconds.
MARGIN_S = 0.06


def _bank_sleeper(server, think_s: float):
    """Make ``server`` (a SwitchBot) wait its remaining bank less :data:`MARGIN_S` before
    each decision when ``server.hold_bank`` is set, else ``think_s``."""
    inner = server.wsgi

    def wsgi(environ, start_response):
        if environ["REQUEST_METHOD"] == "POST" and getattr(server, "hold_bank", False):
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length)
            try:
                req = json.loads(body)
                if req.get("type") == "decision":
                    time.sleep(max(0.0, req["time"]["remaining_ms"] / 1000 - MARGIN_S))
            except (ValueError, KeyError, TypeError):
                pass
            import io

            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
            server.mode = "ok"
            return inner(environ, start_response)
        server.mode, server.sleep_s = "slow", think_s
        return inner(environ, start_response)

    server._server.application = wsgi
    return server


def others_finished_s(arena, tid: int, slow_bot: int) -> tuple[float, int]:
    """Seconds from the tournament's start to the last stored match without ``slow_bot``,
    and how many such matches."""
    from arena.db.models import Tournament

    stored = arena.stored(tid)
    with arena.sessions() as s:
        t0 = s.get(Tournament, tid).started_at
    ends = [
        (m.finished_at - t0).total_seconds()
        for m, _res, _log in stored
        if all(seat.bot_id != slow_bot for seat in m.seats)
    ]
    return max(ends), len(ends)


def slow_bot_round(arena, servers, ids: list[int], db: str, hold: bool) -> dict:
    servers[0].hold_bank = hold
    tid = arena.create("jdf", ids, games_per_pairing=1, time_rules=JDF_RULES, options=JDF_OPTIONS)
    t0 = time.perf_counter()
    arena.start(tid)
    wait_finished(db, tid)
    wall = time.perf_counter() - t0
    others, n = others_finished_s(arena, tid, ids[0])
    stored = arena.stored(tid)
    # timeout faults of the other bots: in the matches without bot 0, and in those with it
    timeouts = {"without_bot0": 0, "with_bot0": 0}
    for m, _res, log in stored:
        seat_bot = {s.seat: s.bot_id for s in m.seats}
        where = "with_bot0" if ids[0] in seat_bot.values() else "without_bot0"
        timeouts[where] += sum(1 for f in log["faults"] if f["kind"] == "timeout" and seat_bot[f["player"]] != ids[0])
    deferred = sum(1 for m, _r, _l in stored if m.attempts > 1)
    return {
        "others_s": round(others, 2),
        "others": n,
        "matches": len(stored),
        "all_s": round(wall, 2),
        "attempts_over_1": deferred,
        "timeouts_of_other_bots": timeouts,
    }


def check_flood_round(arena, ids: list[int], db: str, holders: list | None) -> dict:
    checks = []
    if holders:
        for i in range(0, len(holders), 2):
            tok = arena.client.post("/api/v1/accounts", json={"name": f"flood-{uuid.uuid4().hex[:8]}"})
            owner = {"Authorization": f"Bearer {tok.json['token']}"}
            for h in holders[i : i + 2]:
                r = arena.client.post(
                    "/api/v1/bots",
                    json={
                        "name": f"slow-{uuid.uuid4().hex[:4]}",
                        "url": h.url,
                        "rulesets": ["million_doubt", "trump_millionaire", "jdf"],
                    },
                    headers=owner,
                )
                h.set_secret(r.json["secret"])
                c = arena.client.post(f"/api/v1/bots/{r.json['id']}/check", headers=owner)
                assert c.status_code == 202, c.json
                checks.append(c.json["id"])
        _wait_running(arena, checks)
    tid = arena.create("million_doubt", ids, games_per_pairing=4, time_rules=JDF_RULES)
    t0 = time.perf_counter()
    arena.start(tid)
    wait_finished(db, tid)
    took = time.perf_counter() - t0
    out = {"tournament_s": round(took, 2), "checks": len(checks)}
    if holders:
        out["checks_active_at_end"] = _active(arena, checks)
        for h in holders:
            h.gate.set()
    return out


def _active(arena, checks: list[int]) -> int:
    from arena.db.models import BotCheck

    with arena.sessions() as s:
        return sum(1 for c in checks if s.get(BotCheck, c).status in ("queued", "running"))


def _wait_running(arena, checks: list[int]) -> None:
    from arena.db.models import BotCheck

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with arena.sessions() as s:
            if sum(1 for c in checks if s.get(BotCheck, c).status == "running") >= min(4, len(checks)):
                return
        time.sleep(0.1)


#: The auth frame of the gateway flood: valid JSON, 63 KB, under the frame cap (issue 38).
POISON = json.dumps([{}] * 21_000, separators=(",", ":"))
#: Rounds of the gateway flood, each a quiet tournament then a flooded one (the best of each counts).
ROUNDS = 2
#: Games per pairing of the gateway flood's tournament (6 pairings of 4 bots).
GAMES = 10
#: Default time rules (the gateway flood's tournament).
DEFAULT_RULES = {"initial": 60.0, "increment": 10.0, "cap": 60.0}


def flood_child(url: str, loops: int) -> None:
    """``--child-flood URL N``: N loops, each from an address of 127.0.5.0/24, connecting,
    answering the challenge with :data:`POISON`, reading the close, again; until killed."""
    import asyncio

    from websockets.asyncio.client import connect as ws_connect

    async def loop(i: int) -> None:
        while True:
            try:
                async with ws_connect(
                    url, max_size=None, open_timeout=30, close_timeout=2, local_addr=(f"127.0.5.{i % 250 + 1}", 0)
                ) as ws:
                    await ws.recv()
                    await ws.send(POISON)
                    await ws.recv()
            except Exception:
                await asyncio.sleep(0.01)

    async def run() -> None:
        await asyncio.gather(*(loop(i) for i in range(loops)))

    asyncio.run(run())


class Gateway:
    """A real ``arena gateway`` process on a free port."""

    def __init__(self, db: str, broker: str, log_dir: Path):
        import os
        import subprocess

        self.out = log_dir / f"gateway-{uuid.uuid4().hex[:6]}.out"
        env = {**os.environ, "ARENA_DATABASE_URL": db, "ARENA_BROKER_URL": broker}
        with open(self.out, "wb") as fh:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "daifugo_arena.cli", "gateway", "--port", "0"],
                cwd=REPO,
                env=env,
                stdout=fh,
                stderr=fh,
            )
        deadline = time.monotonic() + 60
        while not any(x.startswith("gateway ") and " listening on " in x for x in self.out.read_text().splitlines()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the gateway did not start:\n{self.out.read_text()[-2000:]}")
            time.sleep(0.05)
        line = next(x for x in self.out.read_text().splitlines() if x.startswith("gateway ") and " listening on " in x)
        self.url = line.split()[-1]
        self.port = int(self.url.rsplit(":", 1)[1].split("/")[0])

    def cpu_s(self) -> float:
        return _cpu_s(self.proc.pid)

    def health_ms(self) -> float:
        import httpx

        t = time.perf_counter()
        httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=30, trust_env=False)
        return (time.perf_counter() - t) * 1000

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except Exception:
            self.proc.kill()


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` used so far (/proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tournament_faults(arena, tid: int) -> int:
    return sum(sum(res.faults) for _m, res, _log in arena.stored(tid))


def _connect_ms(url: str, bot_id: int, secret: str) -> float:
    """Milliseconds an honest bot takes to be welcomed (connect, challenge, proof, welcome)."""
    from websockets.sync.client import connect

    from bots_sdk import wire

    t = time.perf_counter()
    with connect(url, open_timeout=60) as ws:
        nonce = json.loads(ws.recv(timeout=60))["nonce"]
        ws.send(wire.auth_frame(bot_id, secret, nonce))
        assert json.loads(ws.recv(timeout=60))["type"] == "welcome"
        took = (time.perf_counter() - t) * 1000
    return took


def gateway_flood_round(
    arena, db: str, gw: Gateway, ids: list[int], loops: int, log_dir: Path, probe: tuple[int, str]
) -> dict:
    """One tournament of the bots ``ids`` (that dial out), with ``loops`` flooding loops (0:
    quiet); meanwhile the bot ``probe`` (id, secret) connects now and then: how long it takes."""
    import subprocess
    import threading

    flood = None
    if loops:
        flood = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--child-flood", gw.url, str(loops)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=open(log_dir / "flood.log", "wb"),
        )
        time.sleep(3.0)  # the loops at full speed before the tournament starts
    health: list[float] = []
    connects: list[float] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            health.append(gw.health_ms())
            connects.append(_connect_ms(gw.url, *probe))
            time.sleep(0.25)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    flood_cpu = 0.0
    try:
        tid = arena.create("million_doubt", ids, games_per_pairing=GAMES, time_rules=DEFAULT_RULES)
        gw_cpu = gw.cpu_s()
        flood_cpu = _cpu_s(flood.pid) if flood is not None else 0.0
        t0 = time.perf_counter()
        arena.start(tid)
        wait_finished(db, tid)
        took = time.perf_counter() - t0
        gw_cpu = gw.cpu_s() - gw_cpu
        flood_cpu = (_cpu_s(flood.pid) - flood_cpu) if flood is not None else 0.0
    finally:
        done.set()
        watcher.join(30)
        if flood is not None:
            flood.kill()
            flood.wait(15)
    arena_faults = sum(len(g.get("arena_faults", [])) for _m, _r, log in arena.stored(tid) for g in log["games"])
    return {
        "tournament_s": round(took, 2),
        "faults": _tournament_faults(arena, tid),
        "arena_faults": arena_faults,
        "loops": loops,
        "gateway_cpu_s": round(gw_cpu, 2),
        "flood_process_cpu_s": round(flood_cpu, 2),
        "honest_connect_ms_max": round(max(connects), 1) if connects else None,
        "honest_connects": len(connects),
        "health_ms_max": round(max(health), 1) if health else None,
        "health_ms_median": round(sorted(health)[len(health) // 2], 1) if health else None,
    }


def gateway_flood(arena, db: str, broker: str, tmp: Path, loops: int) -> tuple[str, dict]:
    import os
    import subprocess

    from tests.helpers import mark_bot_checked

    gw = Gateway(db, broker, tmp)
    bots: list = []
    try:
        ids = []
        probe = arena.client.post(
            "/api/v1/bots",
            json={"name": "probe", "transport": "connect", "rulesets": ["million_doubt"]},
            headers=arena.owner,
        ).json
        for i in range(4):
            r = arena.client.post(
                "/api/v1/bots",
                json={"name": f"dial-{i}", "transport": "connect", "rulesets": ["million_doubt"]},
                headers=arena.owner,
            )
            assert r.status_code == 201, r.json
            assert mark_bot_checked(arena.sessions, r.json["id"]) == "ready"
            env = {**os.environ, "ARENA_BOT_SECRET": r.json["secret"]}
            env.pop("ARENA_GATEWAY_URL", None)
            cmd = [
                sys.executable,
                "-m",
                "daifugo_arena.cli",
                "bots",
                "connect",
                "random",
                "--bot-id",
                str(r.json["id"]),
            ]
            bots.append(
                subprocess.Popen(
                    [*cmd, "--gateway", gw.url, "--seed", str(i)],
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=open(tmp / f"dial-{i}.log", "wb"),
                )
            )
            ids.append(r.json["id"])
        deadline = time.monotonic() + 60
        while arena.get(f"/bots/{ids[-1]}").get("presence", {}).get("connections", 0) < 1:
            if time.monotonic() > deadline:
                raise RuntimeError("the bots that dial out did not connect")
            time.sleep(0.1)
        probe_key = (probe["id"], probe["secret"])
        rounds: dict[str, list[dict]] = {"baseline": [], "flood": []}
        for _ in range(ROUNDS):  # quiet and flooded in turn: a drift of the machine weighs on both
            rounds["baseline"].append(gateway_flood_round(arena, db, gw, ids, 0, tmp, probe_key))
            rounds["flood"].append(gateway_flood_round(arena, db, gw, ids, loops, tmp, probe_key))
        base = min(rounds["baseline"], key=lambda r: r["tournament_s"])
        flood = min(rounds["flood"], key=lambda r: r["tournament_s"])
        flood["faults_all_rounds"] = sum(r["faults"] for r in rounds["flood"])
        held = cap_flood(gw, probe_key)
    finally:
        for b in bots:
            b.terminate()
            b.wait(15)
        gw.stop()
    line = (
        f"isolation gateway flood: tournament {flood['tournament_s']:.1f} s, baseline {base['tournament_s']:.1f} s,"
        f" faults {flood['faults_all_rounds']}"
    )
    return line, {"rounds": rounds, "cap_flood": held}


def cap_flood(gw: Gateway, probe: tuple[int, str]) -> dict:
    """Issue 38's other flood: 60 connections that never authenticate from each of 36
    addresses of 127.0.6.0/24, held; then 12 honest connections from 127.0.0.1: how many were
    welcomed, and how long each took."""
    from tests.gateway.test_gateway_attacks import RawBot

    held, refused = [], 0
    try:
        for i in range(36):
            for _ in range(60):
                try:
                    bot = RawBot(gw.url, source=f"127.0.6.{i + 1}")
                    bot.recv_json()
                    held.append(bot)
                except (OSError, EOFError, AssertionError):
                    refused += 1
        took = [_connect_ms(gw.url, *probe) for _ in range(12)]
    finally:
        for bot in held:
            bot.close()
    return {"held": len(held), "refused": refused, "honest_welcomed": len(took), "honest_ms_max": round(max(took), 1)}


def _check_wait_s(arena, check_id: int) -> float:
    from arena.db.models import BotCheck

    deadline = time.monotonic() + 3600
    while True:
        with arena.sessions() as s:
            c = s.get(BotCheck, check_id)
            if c.started_at is not None:
                return (c.started_at - c.created_at).total_seconds()
        if time.monotonic() > deadline:
            raise RuntimeError(f"check {check_id} never started")
        time.sleep(0.05)


def _honest_check(arena, server) -> float:
    r = arena.client.post("/api/v1/accounts", json={"name": f"honest-{uuid.uuid4().hex[:8]}"})
    owner = {"Authorization": f"Bearer {r.json['token']}"}
    b = arena.client.post(
        "/api/v1/bots", json={"name": "honest", "url": server.url, "rulesets": ["million_doubt"]}, headers=owner
    )
    server.set_secret(b.json["secret"])
    c = arena.client.post(
        f"/api/v1/bots/{b.json['id']}/check", headers=owner, environ_base={"REMOTE_ADDR": "203.0.113.5"}
    )
    assert c.status_code == 202, c.json
    return _check_wait_s(arena, c.json["id"])


def check_queue_flood(arena, servers: list, checks: int, think_s: float) -> tuple[str, dict]:
    """The honest check alone, then after ``checks`` checks of bots that use their whole bank."""
    from tests.worker.conftest import SwitchBot

    honest = SwitchBot(SAMPLE_BOTS["greedy"]())
    servers.append(honest)
    alone = _honest_check(arena, honest)
    holders = [_bank_sleeper(SwitchBot(SAMPLE_BOTS["greedy"]()), think_s) for _ in range(checks)]
    servers += holders
    flood_ids = []
    for i in range(0, checks, 2):  # an account per two checks, three accounts an address
        address = f"198.51.100.{(i // 2) // 3 + 1}"
        tok = arena.client.post("/api/v1/accounts", json={"name": f"cflood-{uuid.uuid4().hex[:8]}"})
        owner = {"Authorization": f"Bearer {tok.json['token']}"}
        for h in holders[i : i + 2]:
            h.hold_bank = True
            r = arena.client.post(
                "/api/v1/bots",
                json={"name": f"whole-bank-{uuid.uuid4().hex[:4]}", "url": h.url, "rulesets": ["million_doubt"]},
                headers=owner,
            )
            h.set_secret(r.json["secret"])
            c = arena.client.post(
                f"/api/v1/bots/{r.json['id']}/check", headers=owner, environ_base={"REMOTE_ADDR": address}
            )
            assert c.status_code == 202, c.json
            flood_ids.append(c.json["id"])
    _wait_running(arena, flood_ids)
    waited = _honest_check(arena, honest)
    for h in holders:  # the flood ends: its bots answer at once
        h.hold_bank = False
    line = f"isolation check flood: honest check waited {waited:.1f} s, baseline {alone:.1f} s"
    return line, {"baseline_s": round(alone, 2), "flood_s": round(waited, 2), "checks": checks}


def main() -> None:
    from tests.worker.conftest import Arena, SwitchBot

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--think-ms", type=int, default=10, help="the honest bots' thinking time per decision")
    ap.add_argument("--quick", action="store_true", help="a field of 6 and 12 checks")
    ap.add_argument(
        "--parts", default="slow,checks,gateway,queue", help="slow, checks, gateway, queue (comma-separated)"
    )
    ap.add_argument("--child-flood", nargs=2, metavar=("URL", "LOOPS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_flood:
        flood_child(args.child_flood[0], int(args.child_flood[1]))
        return
    parts = set(args.parts.split(","))
    think = args.think_ms / 1000
    started = time.perf_counter()
    services = Services()
    tmp = Path(tempfile.mkdtemp(prefix="arena-isobench-"))
    servers: list = []
    worker = None
    lines: list[str] = []
    try:
        db, broker = services.stack("isobench")
        arena = Arena(db, broker, tmp_path=tmp)
        worker = DefaultWorker(broker, db, tmp, None, None, None)
        details: dict = {"think_ms": args.think_ms, "slots": worker.slots, "parts": sorted(parts)}
        details["check_time_limit_s"] = Settings.from_env().check_time_limit_s
        details["load_before"] = os.getloadavg()
        if "slow" in parts:
            field = 6 if args.quick else 8
            field_servers = [_bank_sleeper(SwitchBot(SAMPLE_BOTS["greedy"]()), think) for _ in range(field)]
            servers += field_servers
            ids = [arena.register(s, ["jdf", "million_doubt"], f"b{i}") for i, s in enumerate(field_servers)]
            base = slow_bot_round(arena, field_servers, ids, db, hold=False)
            slow = slow_bot_round(arena, field_servers, ids, db, hold=True)
            details["slow_bot"] = {"field": field, "baseline": base, "slow": slow}
            lines.append(f"isolation slow bot: others {slow['others_s']:.1f} s, baseline {base['others_s']:.1f} s")
        if "checks" in parts:
            four = [_bank_sleeper(SwitchBot(SAMPLE_BOTS["greedy"]()), think) for _ in range(4)]
            servers += four
            ids4 = [arena.register(s, ["million_doubt"], f"m{i}") for i, s in enumerate(four)]
            flood_n = 12 if args.quick else 24
            holders = [SwitchBot(SAMPLE_BOTS["greedy"](), mode="gate") for _ in range(flood_n)]
            servers += holders
            alone = check_flood_round(arena, ids4, db, None)
            flood = check_flood_round(arena, ids4, db, holders)
            details["check_flood"] = {"baseline": alone, "flood": flood}
            took, base_s = flood["tournament_s"], alone["tournament_s"]
            lines.append(f"isolation check flood: tournament {took:.1f} s, baseline {base_s:.1f} s")
        if "gateway" in parts:
            line, details["gateway_flood"] = gateway_flood(arena, db, broker, tmp, 16 if args.quick else 64)
            lines.append(line)
        if "queue" in parts:
            line, details["check_queue"] = check_queue_flood(arena, servers, 22 if args.quick else 66, think)
            lines.append(line)
        details["load_after"] = os.getloadavg()
        details["bench_s"] = round(time.perf_counter() - started, 1)
        print(json.dumps(details), file=sys.stderr)
        for line in lines:
            print(line)
        arena.close()
    finally:
        if worker is not None:
            worker.stop()
        for s in servers:
            s.hold_bank = False
            s.gate.set()
            s.close()
        services.stop()


if __name__ == "__main__":
    main()
