"""The arena's outage is never charged to its bots (issue 38), on the real stack
(``dial_stack``: the API, a worker process, a gateway process, PostgreSQL, Redis) with bots
that dial out as ``arena bots connect`` processes.

Before: a gateway killed mid-tournament and restarted 20 s later cost its bots 6
``connection_error`` faults ("no connection to a gateway for 15,053 ms") and 15-18 s of their
banks: the worker measured from send to answer and charged every second of the arena's own
outage to the bot. Now the worker knows whose fault a wait is (arena.runner.connected): no
gateway alive, or the bot's gateway dead, is the arena's time; a decision the arena failed is
asked again with the bank it had (arena.runner.match), and the log says so (``arena_faults``).
A gateway that stays down past the runner's retries stops the match, and the worker plays it
again by itself once the gateway is back (arena.delivery): no organizer presses Retry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import redis
from sqlalchemy import select

from arena import relay
from arena.db.models import Match, MatchResult
from arena.runner.gameplay import MAX_ARENA_RETRIES
from bots_sdk.connect import SERVED_S
from tests.gateway.conftest import REPO, DialStack, GatewayProcess
from tests.helpers import mark_bot_checked, paced, wait_until

pytestmark = [pytest.mark.services, pytest.mark.slow]

#: A bank of 3 s: an outage of the gateway longer than a bank, as a 20 s one is with the defaults.
TIME_RULES = {"initial": 3.0, "increment": 0.5, "cap": 3.0}


def restart_gateway(stack: DialStack, port: int) -> GatewayProcess:
    """``arena gateway --port PORT`` again (where the bots dial), once listening."""
    log_path, out_path = stack.folder / "gateway-again.log", stack.folder / "gateway-again.out"
    env = {**os.environ, "ARENA_DATABASE_URL": stack.db, "ARENA_BROKER_URL": stack.broker}
    with open(log_path, "wb") as err, open(out_path, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "daifugo_arena.cli", "gateway", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=err,
        )
    gw = GatewayProcess(proc, log_path)
    stack.processes.append(gw)
    wait_until(lambda: " listening on " in out_path.read_text() or not gw.alive(), "the gateway listening again", 60)
    assert gw.alive(), gw.log()
    gw.port = port
    return gw


def queued_requests(client: redis.Redis, bot_ids: list[int], match_id: str) -> list[str]:
    """The ids of the requests of protocol match ``match_id`` waiting in the bots' request lists."""
    found = []
    for bot_id in bot_ids:
        for raw in client.lrange(relay.request_key(bot_id), 0, -1):
            env = relay.parse_envelope(raw)
            if env is not None and env.kind == "request" and f'"{match_id}"' in env.frame:
                found.append(env.rid)
    return found


def dial_out(stack: DialStack, gw: GatewayProcess, marker: Path, specs: dict[str, str]) -> dict[str, int]:
    """One account and one checked Million Doubt bot per ``specs`` item (name: the bot's spec),
    each connected to ``gw`` (one connection); the bots' ids by name."""
    players: dict[str, int] = {}
    for name, spec in specs.items():
        owner = stack.account(name)
        bot = stack.register(owner, f"dials-out-{name}", "million_doubt")
        stack.connect_bot(
            bot["id"], bot["secret"], [gw.url], pool=1, spec=spec, env={"ARENA_TEST_STALL_FILE": str(marker)}
        )
        stack.connections(owner, bot["id"], 1)
        players[name] = bot["id"]
        assert mark_bot_checked(stack.sessions, bot["id"]) == "ready"
    return players


def test_a_gateway_killed_and_restarted_later_costs_its_bots_no_fault_and_no_time(dial_stack, tmp_path) -> None:
    stack: DialStack = dial_stack(gateways=1)
    (gw,) = stack.gateways
    marker = tmp_path / "stalled.json"
    players = dial_out(stack, gw, marker, {"a": "tests.gateway.stallbot:StallOnce", "b": "random", "c": "random"})

    tid = stack.tournament("million_doubt", list(players.values()), TIME_RULES, games_per_pairing=2)
    stalled = wait_until(lambda: marker.exists() and json.loads(marker.read_text()), "bot A holding a request", 120)
    client = redis.Redis.from_url(stack.broker)
    gw.kill()  # while bot A thinks on the request it relayed: every bot loses its connection

    seen: set[str] = set()

    def asked_again() -> bool:  # a new request for the same decision: the bank ran out, the arena's
        seen.update(queued_requests(client, [players["a"]], stalled["match_id"]))
        return len(seen) >= 2

    wait_until(asked_again, "bot A's decision asked again while no gateway runs", 120)
    restart_gateway(stack, gw.port)  # the bots come back by themselves (at once, then backing off)

    final = stack.wait_finished(tid)
    assert final["status"] == "finished" and final["progress"]["finished"] == final["progress"]["total"] == 3
    matches = stack.matches(tid)
    stored = stack.stored(tid)
    assert stored["result_match_ids"] == sorted(m["id"] for m in matches)  # exactly one result each
    logs = {m["id"]: stack.log(m["id"]) for m in matches}
    assert {i: log["faults"] for i, log in logs.items()} == {i: [] for i in logs}  # before: connection_error
    assert all(r["faults"] == 0 for r in stack.standings(tid).values())
    held = next(m for m in matches if f"arena-{m['id']}" == stalled["match_id"])
    game = logs[held["id"]]["games"][stalled["game"]]
    seat = next(s["seat"] for s in held["seats"] if s["bot_id"] == players["a"])
    arena = [f for f in game.get("arena_faults", []) if f["player"] == seat]
    assert len(arena) >= 1 and "gateway" in arena[0]["detail"], game.get("arena_faults")
    asked = next(x for x in game["exchanges"] if x["n"] == arena[0]["n"])
    assert asked["player"] == seat and asked["fault"] is None and asked["response"] is not None
    assert asked["bank_before_ms"] == 3000  # the bank it had before the outage, whole
    assert stack.worker.alive(), stack.worker.log()


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="Linux")
def test_the_sdk_is_connected_again_at_once_after_its_gateway_restarts(dial_stack) -> None:
    """A welcomed connection that drops is dialled again at once (before, the backoff of its
    earlier failures was never reset: a bot that had run a while waited 17-30 s, past the
    arena's 15 s wait)."""
    stack: DialStack = dial_stack(gateways=1)
    (gw,) = stack.gateways
    owner = stack.account("again")
    bot = stack.register(owner, "dials-out-again", "million_doubt")
    proc = stack.connect_bot(bot["id"], bot["secret"], [gw.url], pool=1)
    since = datetime.fromisoformat(stack.connections(owner, bot["id"], 1)["since"]).timestamp()
    # a connection that served (1 s, bots_sdk.connect.SERVED_S), not one dropped at its welcome
    wait_until(lambda: time.time() - since > SERVED_S + 0.5, "the connection serving a while", 60)
    gw.stop()  # a restart: 1001, "connect again"
    wait_until(lambda: "reconnecting in" in proc.log(), "the bot reconnecting", 60)
    first = next(line for line in proc.log().splitlines() if "reconnecting in" in line)
    assert "reconnecting in 0.0 s" in first, proc.log()
    restart_gateway(stack, gw.port)
    stack.connections(owner, bot["id"], 1)


def assert_banks_kept(log: dict, rules: dict[str, float]) -> None:
    """Every exchange of ``log`` took from its seat's bank only the bot's own time (TIME-2: its
    ``elapsed_ms`` less the arena's ``arena_ms``, then the increment, up to the cap), and the
    next request of the seat started from what was left: a request the arena failed
    (``arena_faults``) took nothing."""
    initial, increment, cap = (round(rules[k] * 1000) for k in ("initial", "increment", "cap"))
    for game in log["games"]:
        left: dict[tuple[int, int], int] = {}
        for ex in game["exchanges"]:
            assert ex["fault"] is None, ex
            key = (ex["unit"], ex["seat"])
            assert ex["bank_before_ms"] == left.get(key, initial), (ex, left)
            own = ex["elapsed_ms"] - ex.get("arena_ms", 0)
            assert ex["bank_after_ms"] == min(cap, ex["bank_before_ms"] - own + increment), ex
            left[key] = ex["bank_after_ms"]


def test_a_match_the_gateways_outage_stopped_is_played_again_by_itself(dial_stack, tmp_path) -> None:
    """The only gateway is killed mid-match and stays down: every decision of the match is the
    arena's failure, asked again until the runner gives up (``MAX_ARENA_RETRIES``,
    ``ArenaUnavailable``). Before issue 38 such a match ended ``failed`` and its tournament
    waited for an organizer's Retry. Now the worker queues it again itself
    (``arena.delivery._played_again``): its next attempt is claimed at once, asks the bots on
    fresh deals while the gateway is still down, and once the gateway is back the match is
    played to its end and stored once, as that attempt's, with no fault and no bank time
    charged to either bot (no beat, no reaper, no Retry in this stack)."""
    stack: DialStack = dial_stack(gateways=1)
    (gw,) = stack.gateways
    marker = tmp_path / "stalled.json"
    players = dial_out(stack, gw, marker, {"a": "tests.gateway.stallbot:ThinkEach", "b": "random"})

    tid = stack.tournament("million_doubt", list(players.values()), TIME_RULES, games_per_pairing=2)
    (match,) = stack.matches(tid)
    mid = match["id"]
    # bot A thinks a moment on each decision: the kill falls mid-match, while it holds a request
    # or between two, never with its bank near its end (the test does not race the bank)
    first = wait_until(lambda: marker.exists() and json.loads(marker.read_text()), "bot A asked", 120)
    assert first["match_id"] == f"arena-{mid}"  # the first attempt is under way
    gw.kill()  # and stays down: no bot can be reached

    client = redis.Redis.from_url(stack.broker)
    bots = list(players.values())

    def second_attempt_asking() -> list[str]:
        with stack.sessions() as s:
            status = s.get(Match, mid).status
        assert status != "failed", f"match {mid} failed: it waits for a Retry\n{stack.worker.log()[-3000:]}"
        return queued_requests(client, bots, f"arena-{mid}-attempt-2")

    # the first attempt gives up (11 requests of a 3 s bank, each the arena's) and the match is
    # queued and sent again by the worker itself: its second attempt asks a bot, on fresh deals
    wait_until(paced(second_attempt_asking), "the match's second attempt asking", 240)
    with stack.sessions() as s:
        assert (s.get(Match, mid).status, s.get(Match, mid).attempts) == ("running", 2)
    worker_log = stack.worker.log()
    assert f"match {mid} (attempt 1) stopped, to be played again" in worker_log, worker_log[-3000:]
    assert f"asked {MAX_ARENA_RETRIES + 1} times, the arena failed each" in worker_log, worker_log[-3000:]
    restart_gateway(stack, gw.port)  # the bots come back by themselves

    final = stack.wait_finished(tid)
    assert final["status"] == "finished" and final["progress"]["finished"] == final["progress"]["total"] == 1
    stored = stack.stored(tid)
    (attempt,) = stored["attempts"]  # 2 (3 only if the gateway took the whole second attempt to return)
    assert attempt >= 2 and stored == {"matches": 1, "result_match_ids": [mid], "logs": 1, "attempts": [attempt]}
    with stack.sessions() as s:
        result = s.scalars(select(MatchResult).where(MatchResult.match_id == mid)).one()
        assert (result.faults, result.timings["attempt"]) == ([0, 0], attempt)
    log = stack.log(mid)  # the stored attempt's: nothing of the first one
    assert log["match_id"] == f"arena-{mid}-attempt-{attempt}" and log["fairness"]["attempt"] == attempt
    assert log["faults"] == [] and log["result"]["faults"] == [0, 0]
    assert all(r["faults"] == 0 for r in stack.standings(tid).values())
    # the second attempt waited for the gateway's return: the arena's time, recorded as the arena's
    arena = [f for g in log["games"] for f in g.get("arena_faults", [])]
    assert arena or any(ex.get("arena_ms") for g in log["games"] for ex in g["exchanges"]), log["games"][0]
    assert all("gateway" in f["detail"] for f in arena), arena
    assert_banks_kept(log, TIME_RULES)
    assert stack.worker.alive(), stack.worker.log()
