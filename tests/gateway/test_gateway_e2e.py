"""Issue 27's first "done when", end to end: a bot that never opens a listening socket
(checked in /proc: no listening TCP socket, no UDP socket, only its connections to the
gateways) registers through the API as ``"transport": "connect"``, passes the check on a real
Celery worker (the bad-authentication probe included, ``ARENA_GATEWAY_URL`` set) and plays a
round-robin tournament against three HTTP bots through two real ``arena gateway`` processes,
real Redis and PostgreSQL. Once as ``arena bots connect`` (a process, two connections, one to
each gateway), once as the Node starter (``starters/node``, the ``ws`` package)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.gateway.conftest import DialStack, Process, assert_binds_no_port
from tests.starter_builds import command

pytestmark = [pytest.mark.services, pytest.mark.slow]

TIME_RULES = {"initial": 5.0, "increment": 1.0, "cap": 5.0}
#: Million Doubt round robin of 4 bots: 6 matches of 2 games, 3 for each bot.
MATCHES, GAMES = 6, 2


def start_client(stack: DialStack, client: str, bot: dict) -> tuple[Process, int]:
    """The bot that dials out, as a process; and how many connections it opens."""
    if client == "node":
        node = command("node")  # skipped without node, except under CI
        env = {
            "PATH": os.environ.get("PATH", ""),
            "ARENA_BOT_ID": str(bot["id"]),
            "ARENA_BOT_SECRET": bot["secret"],
            "ARENA_GATEWAY_URL": stack.gateways[1].url,
        }
        return stack.start("node-starter", node, env), 1
    return stack.connect_bot(bot["id"], bot["secret"], [g.url for g in stack.gateways], pool=2), 2


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="reads the sockets of a process in /proc (Linux)")
@pytest.mark.parametrize("client", ["arena bots connect", "node"])
def test_a_bot_that_dials_out_registers_passes_the_check_and_plays_a_tournament(dial_stack, client: str) -> None:
    stack: DialStack = dial_stack(gateways=2)
    ports = {g.port for g in stack.gateways}
    owner = stack.account("behind-nat")
    bot = stack.register(owner, "laptop", "million_doubt")
    assert bot["url"] is None and bot["presence"] == {"connected": False, "connections": 0, "since": None}

    proc, pool = start_client(stack, client, bot)
    presence = stack.connections(owner, bot["id"], pool)
    assert presence["connected"] and presence["since"] is not None
    assert_binds_no_port(proc.pid, ports, pool)
    if pool == 2:  # connection n dials gateway n first: one to each
        assert [g.health()["connections"] for g in stack.gateways] == [1, 1]

    check = stack.check(owner, bot["id"])
    assert check["status"] == "passed", check
    assert check["url"] is None and check["warnings"] == []
    assert check["result"]["signature"] == {"ok": True, "status": 4401, "warning": None}  # a wrong proof refused
    assert stack.bot(owner, bot["id"])["status"] == "ready"

    rivals = []
    for i, sample in enumerate(("greedy", "heuristic", "random")):
        account = stack.account(sample)
        rival = stack.http_bot(account, sample, i, "million_doubt")
        assert stack.check(account, rival)["status"] == "passed"
        rivals.append(rival)
    tid = stack.tournament("million_doubt", [bot["id"], *rivals], TIME_RULES, games_per_pairing=GAMES)
    final = stack.wait_finished(tid)
    assert final["status"] == "finished", final
    assert final["progress"]["finished"] == final["progress"]["total"] == MATCHES

    matches = stack.matches(tid)
    stored = stack.stored(tid)
    assert len(matches) == stored["matches"] == stored["logs"] == MATCHES
    assert stored["result_match_ids"] == sorted(m["id"] for m in matches)  # one result per match
    assert all(m["status"] == "finished" and m["result"] is not None for m in matches)

    standings = stack.standings(tid)
    assert set(standings) == {bot["id"], *rivals}
    assert standings[bot["id"]]["games"] == 3 * GAMES and standings[bot["id"]]["faults"] == 0
    played = [m for m in matches if bot["id"] in {s["bot_id"] for s in m["seats"]}]
    assert len(played) == 3
    for m in played:
        seat = next(s["seat"] for s in m["seats"] if s["bot_id"] == bot["id"])
        assert m["result"]["faults"][seat] == 0
        log = stack.log(m["id"])
        assert log["players"][seat]["kind"] == "connect"  # through a gateway, not a URL
        assert [f for f in log["faults"] if f["player"] == seat] == []
        assert [x for g in log["games"] for x in g["exchanges"] if x["player"] == seat]  # asked and answered

    assert proc.alive(), proc.log()
    assert_binds_no_port(proc.pid, ports, pool)  # after the whole tournament too
    assert stack.worker.alive(), stack.worker.log()
