"""Every starter of ``starters/`` (Java, C++, Go, Node.js), built and run as its README says,
against the whole stack for bots that dial out (``dial_stack``: a real ``arena gateway``
process, the API over HTTP, a real Celery worker, PostgreSQL and Redis): it connects, passes
the check of all three rule sets with no warning (every decision kind asked and answered
legally, the keep-alive pings sent) and plays a tournament with no fault."""

from __future__ import annotations

import os

import pytest

from tests.gateway.conftest import DialStack
from tests.starter_builds import HEALTH_NAMES, STARTERS, command, skip_unless

pytestmark = [pytest.mark.services, pytest.mark.slow]

RULESETS = ["million_doubt", "trump_millionaire", "jdf"]
TIME_RULES = {"initial": 5.0, "increment": 1.0, "cap": 5.0}


@pytest.mark.parametrize("lang", [pytest.param(s, marks=skip_unless(s)) for s in STARTERS])
def test_a_starter_passes_the_check_of_every_rule_set_and_plays_a_tournament(dial_stack, lang: str) -> None:
    argv = command(lang)
    stack: DialStack = dial_stack(gateways=1)
    owner = stack.account(f"{lang}-author")
    r = stack.http.post(
        "/bots", json={"name": f"{lang}-bot", "rulesets": RULESETS, "transport": "connect"}, headers=owner
    )
    assert r.status_code == 201, r.text
    bot = r.json()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/root"),
        "ARENA_BOT_ID": str(bot["id"]),
        "ARENA_BOT_SECRET": bot["secret"],
        "ARENA_GATEWAY_URL": stack.gateways[0].url,
    }
    proc = stack.start(f"{lang}-starter", argv, env)
    stack.connections(owner, bot["id"], 1)

    check = stack.check(owner, bot["id"])
    assert check["status"] == "passed", (check, proc.log())
    assert check["warnings"] == [], check  # its pings seen: no "no_pings"
    result = check["result"]
    assert result["health"]["name"] == HEALTH_NAMES[lang]
    assert result["signature"]["status"] == 4401
    assert [c["ruleset"] for c in result["conformance"]] == RULESETS
    for game in result["conformance"]:
        assert game["ok"] and game["faults"] == [], game
        assert all(k["asked"] > 0 and k["faults"] == 0 for k in game["kinds"].values()), game["kinds"]

    account = stack.account("rival")
    rival = stack.http_bot(account, "greedy", 1, "million_doubt")
    assert stack.check(account, rival)["status"] == "passed"
    tid = stack.tournament("million_doubt", [bot["id"], rival], TIME_RULES, games_per_pairing=2)
    final = stack.wait_finished(tid)
    assert final["status"] == "finished", final
    standings = stack.standings(tid)
    assert standings[bot["id"]]["games"] == 2 and standings[bot["id"]]["faults"] == 0, standings
    (match,) = stack.matches(tid)
    log = stack.log(match["id"])
    seat = next(s["seat"] for s in match["seats"] if s["bot_id"] == bot["id"])
    assert log["players"][seat]["kind"] == "connect" and log["faults"] == []
    assert proc.alive(), proc.log()
