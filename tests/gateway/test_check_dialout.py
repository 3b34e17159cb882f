"""The check of a bot that dials out, against the whole stack (``dial_stack``: a real gateway
process, a real worker, the API over HTTP) and real bot processes: a failed check says which
step the bot reached (never connected; connected but refused with 4401; authenticated, then
dropped without a close or closed), from what the gateway wrote of its connections
(``arena.relay.Story``); a bot that sends no keep-alive pings passes with the warning
``no_pings``."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.gateway.conftest import REPO, DialStack
from tests.helpers import wait_until

pytestmark = [pytest.mark.services, pytest.mark.slow]

DIALOUT_BOT = REPO / "tests" / "dialout_bot.py"


def _failed_health(stack: DialStack, owner: dict[str, str], bot_id: int) -> dict:
    check = stack.check(owner, bot_id)
    assert check["status"] == "failed", check
    health = check["result"]["health"]
    assert health["ok"] is False and check["result"]["conformance"] == []
    return health


def _offline(stack: DialStack, owner: dict[str, str], bot_id: int) -> None:
    wait_until(lambda: stack.bot(owner, bot_id)["presence"]["connections"] == 0, "the bot's connections gone", 60)


def test_a_failed_check_says_which_step_the_bot_reached(dial_stack) -> None:
    stack: DialStack = dial_stack(gateways=1)
    owner = stack.account("steps")
    bot = stack.register(owner, "laptop", "million_doubt")
    url = stack.gateways[0].url

    health = _failed_health(stack, owner, bot["id"])
    assert health["step"] == "never_connected", health
    assert health["error"].startswith("the bot never connected: no connection with its id reached a gateway")
    assert health["error_code"]["code"] == "dial_never_connected"

    wrong = stack.connect_bot(bot["id"], "f" * 64, [url], pool=1)
    assert wrong.proc.wait(60) == 1, wrong.log()  # refused for good: 4401
    health = _failed_health(stack, owner, bot["id"])
    assert health["step"] == "auth_failed", health
    assert "but failed authentication (close 4401" in health["error"]

    crashed = stack.connect_bot(bot["id"], bot["secret"], [url], pool=1)
    stack.connections(owner, bot["id"], 1)
    crashed.kill()  # SIGKILL: no close frame, the kernel resets the socket
    _offline(stack, owner, bot["id"])
    health = _failed_health(stack, owner, bot["id"])
    assert health["step"] == "dropped", health
    assert "then its connection dropped" in health["error"] and "without a close" in health["error"]

    stopped = stack.connect_bot(bot["id"], bot["secret"], [url], pool=1)
    stack.connections(owner, bot["id"], 1)
    stopped.proc.send_signal(signal.SIGINT)  # Ctrl-C: the SDK closes its connection cleanly (1000)
    assert stopped.proc.wait(60) == 0, stopped.log()
    _offline(stack, owner, bot["id"])
    health = _failed_health(stack, owner, bot["id"])
    assert health["step"] == "dropped" and health["error_code"]["code"] == "dial_closed_by_bot", health
    assert "then closed its connection" in health["error"] and "(close 1000)" in health["error"]


def test_a_bot_that_sends_no_keepalive_pings_passes_with_a_warning(dial_stack, tmp_path: Path) -> None:
    stack: DialStack = dial_stack(gateways=1)
    owner = stack.account("quiet")
    bot = stack.register(owner, "quiet", "million_doubt")
    env = {
        **os.environ,
        "ARENA_BOT_ID": str(bot["id"]),
        "ARENA_BOT_SECRET": bot["secret"],
        "ARENA_GATEWAY_URL": stack.gateways[0].url,
    }
    quiet = stack.start("quiet", [sys.executable, str(DIALOUT_BOT), "--no-pings"], env)
    stack.connections(owner, bot["id"], 1)
    check = stack.check(owner, bot["id"])
    assert check["status"] == "passed", (check, quiet.log())
    codes = check["result"]["warning_codes"]
    assert [c["code"] for c in codes] == ["no_pings"], check
    assert codes[0]["params"]["silent_s"] >= 7  # none within 7 s of connecting (wire.PING_FIRST_S)
    assert check["warnings"][0].startswith("the bot sent no keep-alive ping in")

    # the same bot with its pings: no warning
    quiet.stop()
    _offline(stack, owner, bot["id"])
    pinging = stack.start("pinging", [sys.executable, str(DIALOUT_BOT)], env)
    stack.connections(owner, bot["id"], 1)
    check = stack.check(owner, bot["id"])
    assert check["status"] == "passed" and check["warnings"] == [], (check, pinging.log())


def test_a_check_whose_gateway_died_errs_and_never_fails_the_bot(dial_stack) -> None:
    """The only gateway dies (SIGKILL) under a connected bot just before its check: the health
    request waits for a gateway that is late, then dead, the arena's time. Before, the check
    ended ``failed`` ("timeout: ...") and the bot was charged the arena's failure; now it errs,
    saying the arena failed, and the bot keeps the status it had (FAULT-1)."""
    stack: DialStack = dial_stack(gateways=1)
    owner = stack.account("orphan")
    bot = stack.register(owner, "laptop", "million_doubt")
    stack.connect_bot(bot["id"], bot["secret"], [stack.gateways[0].url], pool=1)
    stack.connections(owner, bot["id"], 1)
    before = stack.bot(owner, bot["id"])["status"]
    stack.gateways[0].kill()
    check = stack.check(owner, bot["id"])
    assert check["status"] == "error", check
    assert check["error"].startswith("the arena failed, not the bot (check it again): "), check
    assert "gateway" in check["error"], check
    assert stack.bot(owner, bot["id"])["status"] == before
