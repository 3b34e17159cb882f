"""Isolation benchmark (issue 24): one contestant's slow bot, or a flood of slow bot checks,
against everyone else's matches.

    .venv/bin/python bench/isolation_bench.py [--think-ms 10] [--quick]

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

Goal: X <= 1.2 x Y in both. ``--quick``: a JDF field of 6 (60 matches) and 12 checks.
"""

from __future__ import annotations

import argparse
import json
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


def main() -> None:
    from tests.worker.conftest import Arena, SwitchBot

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--think-ms", type=int, default=10, help="the honest bots' thinking time per decision")
    ap.add_argument("--quick", action="store_true", help="a field of 6 and 12 checks")
    args = ap.parse_args()
    think = args.think_ms / 1000
    started = time.perf_counter()
    services = Services()
    tmp = Path(tempfile.mkdtemp(prefix="arena-isobench-"))
    servers: list = []
    worker = None
    try:
        db, broker = services.stack("isobench")
        arena = Arena(db, broker, tmp_path=tmp)
        field = 6 if args.quick else 8
        servers += [_bank_sleeper(SwitchBot(SAMPLE_BOTS["greedy"]()), think) for _ in range(field)]
        ids = [arena.register(s, ["jdf", "million_doubt"], f"b{i}") for i, s in enumerate(servers)]
        worker = DefaultWorker(broker, db, tmp, None, None, None)
        details: dict = {"think_ms": args.think_ms, "field": field, "slots": worker.slots}
        base = slow_bot_round(arena, servers, ids, db, hold=False)
        slow = slow_bot_round(arena, servers, ids, db, hold=True)
        details["slow_bot"] = {"baseline": base, "slow": slow}
        line1 = f"isolation slow bot: others {slow['others_s']:.1f} s, baseline {base['others_s']:.1f} s"

        flood_n = 12 if args.quick else 24
        holders = [SwitchBot(SAMPLE_BOTS["greedy"](), mode="gate") for _ in range(flood_n)]
        servers += holders
        alone = check_flood_round(arena, ids[:4], db, None)
        flood = check_flood_round(arena, ids[:4], db, holders)
        details["check_flood"] = {"baseline": alone, "flood": flood}
        line2 = (
            f"isolation check flood: tournament {flood['tournament_s']:.1f} s, baseline {alone['tournament_s']:.1f} s"
        )
        details["bench_s"] = round(time.perf_counter() - started, 1)
        print(json.dumps(details), file=sys.stderr)
        print(line1)
        print(line2)
        arena.close()
    finally:
        if worker is not None:
            worker.stop()
        for s in servers:
            s.gate.set()
            s.close()
        services.stop()


if __name__ == "__main__":
    main()
