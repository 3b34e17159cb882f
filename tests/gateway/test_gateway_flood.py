"""Strangers against a real ``arena gateway`` process (issue 38): no account, no bot, only
connections. Each attack is played for real over sockets, beside an honest bot that must
notice nothing.

* Poison auth frames: each connection answers the challenge with 63 KB of valid JSON (a list
  of 21,000 empty objects, under the frame cap), is refused, reconnects. Before, the gateway's
  one event loop parsed each frame (about 200 ms of its thread) and closed it 4401: eight such
  loops made a tournament of bots that dial out 4.5 times slower and charged its bots time-outs.
  Now a stranger's connection is cut (1009) past a few KiB, before any JSON is parsed.
* Connections that never authenticate, 60 from each of 36 addresses of one /24 (under the
  per-address cap of 64), 2,160 in all: before, they filled the gateway's global cap of 2,000
  and honest bots were refused 1013. Now one /24 holds at most 256 places, and every honest
  connection is welcomed.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from bots_sdk import wire
from daifugo_arena.gateway.config import MAX_UNAUTHENTICATED_PER_NETWORK
from tests.gateway.conftest import Site, start_gateway
from tests.gateway.test_gateway import Answering, RunningGateway, authenticate, player
from tests.gateway.test_gateway_attacks import RawBot
from tests.helpers import wait_until

pytestmark = [pytest.mark.services, pytest.mark.slow]

#: One poison auth frame: valid JSON, 63 KB, under the frame cap (the issue's shape).
POISON = json.dumps([{}] * 21_000, separators=(",", ":"))


def honest(url: str, site: Site) -> Any:
    """The site's bot on one connection, answering every request at once."""
    ws = connect(url, max_size=wire.MAX_FRAME_BYTES, legacy=True, open_timeout=30)
    challenge = json.loads(ws.recv(timeout=30))
    ws.send(wire.auth_frame(site.bot_id, site.secret, challenge["nonce"]))
    welcome = json.loads(ws.recv(timeout=30))
    assert welcome["type"] == "welcome", welcome
    Answering(ws, lambda f: wire.answer_frame(f["id"], {"type": "pass", "match": f["body"].get("match_id")}))
    return ws


class PoisonLoop:
    """Connects, answers the challenge with :data:`POISON`, reads the close code, again, until
    stopped: the close codes it got (or what ended a connection without one: the gateway
    drops a stranger's connection ``close_timeout`` after its close, unread data and all)."""

    def __init__(self, url: str, source: str):
        self.url, self.source = url, source
        self.codes: list[int | str | None] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                bot = RawBot(self.url, source=self.source)
                bot.recv_json()  # the challenge
                bot.send(bot.frame_bytes(POISON))
                self.codes.append(bot.until_closed()[0])
                bot.close()
            except (OSError, EOFError, AssertionError) as exc:
                self.codes.append(type(exc).__name__)

    def stop(self) -> list[int | str | None]:
        self._stop.set()
        self.thread.join(60)
        return self.codes


def test_a_flood_of_poison_auth_frames_is_cut_unparsed_and_costs_a_bot_nothing(
    site: Site, redis_url: str, gateways: list
) -> None:
    _, _, url = start_gateway(site.env, gateways)
    ws = honest(url, site)
    loops = [PoisonLoop(url, f"127.0.3.{i + 1}") for i in range(8)]
    wait_until(lambda: all(len(loop.codes) >= 3 for loop in loops), "every loop refused a few times", 120)
    bystander = player(redis_url, site.bot_id)
    outcomes = [bystander.decide(json.dumps({"match_id": f"by-{i}"}).encode(), 10.0) for i in range(20)]
    codes = [c for loop in loops for c in loop.stop()]
    assert [o.fault for o in outcomes] == [None] * 20, [o for o in outcomes if o.fault]
    assert [o.action["match"] for o in outcomes if o.action] == [f"by-{i}" for i in range(20)]
    # every poison frame was refused as too big for a stranger, unparsed (before: parsed, then 4401)
    closed = [c for c in codes if isinstance(c, int)]
    assert closed and set(closed) == {wire.CLOSE_TOO_BIG}, sorted(set(map(str, codes)))
    ws.close()


def _hold(url: str, source: str, count: int) -> tuple[list[RawBot], list[tuple[int | str | None, str]]]:
    """``count`` connections from ``source`` that never authenticate: those given a challenge
    (held), and the close of those refused (``("dropped", "")``: dropped as it was accepted)."""
    held: list[RawBot] = []
    refused: list[tuple[int | str | None, str]] = []
    for _ in range(count):
        try:
            bot = RawBot(url, source=source)
        except (OSError, EOFError, AssertionError):
            refused.append(("dropped", ""))
            continue
        try:
            frame = bot.recv_json()
        except EOFError:
            refused.append(
                (bot.proto.close_rcvd.code, bot.proto.close_rcvd.reason) if bot.proto.close_rcvd else (None, "")
            )
            bot.close()
            continue
        assert frame["type"] == "challenge"
        held.append(bot)
    return held, refused


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="many loopback addresses (Linux)")
def test_one_network_of_addresses_cannot_fill_the_unauthenticated_cap(broker: str) -> None:
    """The default caps (2,000 in all, 64 per client), the issue's flood: 60 connections from
    each of 36 addresses of 127.0.4.0/24 that never authenticate (held, as a slow client may
    for the whole time allowed). At most 256 are held; honest bots of another network are all
    welcomed meanwhile."""
    gw = RunningGateway(broker, auth_timeout_s=600.0, tarpit_s=0.0)  # refused: dropped at once
    held: list[RawBot] = []
    refused: list[tuple[int | str | None, str]] = []
    try:
        for i in range(36):
            h, r = _hold(gw.url, f"127.0.4.{i + 1}", 60)
            held += h
            refused += r
        assert len(held) == MAX_UNAUTHENTICATED_PER_NETWORK == gw.gw.admission.unauthenticated, (len(held), refused[:3])
        assert len(refused) == 36 * 60 - MAX_UNAUTHENTICATED_PER_NETWORK
        # refused with 1013, then (the network's refusals spent its budget) dropped as accepted
        network_full = (1013, "too many connections waiting to authenticate from this network")
        assert network_full in refused and set(refused) <= {network_full, ("dropped", "")}, set(refused)
        assert gw.gw.admission.refused_early == refused.count(("dropped", ""))
        for _ in range(12):  # honest bots of another network: every one welcomed (before: 1013)
            ws, welcome = authenticate(gw.url, 7)
            assert welcome["type"] == "welcome", welcome
            ws.close()
    finally:
        for bot in held:
            bot.close()
        gw.close()
