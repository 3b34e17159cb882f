"""The check of a bot that dials out: its stages over the relay (docs/operations.md,
"Conformance game (bot check)"): the health check over its connection
(:func:`connected_health`; not connected: the step it reached, :func:`dial_step`), the
authentication probe (:func:`auth_probe`), the conformance games through a
:class:`~arena.runner.connected.ConnectedPlayer`, then its keep-alive pings
(:func:`ping_warning`). :class:`ConnectedTarget` gives them to the check pipeline
(:func:`arena.conformance.pipeline.run_pipeline`); :func:`check_connected_bot` runs it.
"""

from __future__ import annotations

import json
import secrets as _secrets
import time
from collections.abc import Callable
from typing import Any

import redis
from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.sync.client import connect as ws_connect

from arena import relay
from arena.conformance.games import ProgressFn
from arena.conformance.pipeline import run_pipeline, warn
from arena.health import HEALTH_TIMEOUT_S, judge_health_body, not_healthy_yet, truncate_text
from arena.runner.connected import ConnectedPlayer
from arena.runner.players import ArenaFailure, Player
from bots_sdk import protocol, wire

#: Seconds the check of a bot that dials out waits for it to be connected (its health request).
CONNECT_WAIT_S = HEALTH_TIMEOUT_S


def connected_health(
    player: ConnectedPlayer, *, timeout_s: float = CONNECT_WAIT_S, story: Callable[[], relay.Story] | None = None
) -> dict[str, Any]:
    """The health check over a bot's connection: a ``health`` frame, answered within
    ``timeout_s`` seconds (the bot must be connected by then). The shape of :func:`health_check`
    (``status`` None). A bot found not connected: ``story()`` (the bot's
    :class:`~arena.relay.Story`, as the gateways wrote it) says which step it reached,
    :func:`dial_step` (``step``, ``error``, ``error_code``). Never raises for the bot's
    behaviour: the relay's failure raises :class:`~arena.runner.connected.RelayUnavailable`,
    a request the arena kept from the bot (a gateway dead, late or stalled:
    :attr:`~arena.runner.players.Outcome.arena`) :class:`~arena.runner.players.ArenaFailure`,
    so the check errs and never fails the bot for it (FAULT-1)."""
    out = not_healthy_yet()
    outcome = player.health(timeout_s)
    out["elapsed_ms"] = float(outcome.elapsed_ms)
    if outcome.action is None and outcome.arena:
        raise ArenaFailure(f"the health request was kept from the bot: {outcome.arena}")
    if outcome.action is None:
        out["error"] = truncate_text(f"{outcome.fault}: {outcome.detail}")
        if outcome.fault == "connection_error":
            try:
                told = story() if story is not None else None
            except (redis.RedisError, OSError):
                told = None
            out.update(dial_step(told, wait_s=timeout_s))
        return out
    judge_health_body(out, bytearray(protocol.dumps(outcome.action)))
    return out


#: The English text of each ``error_code`` of :func:`dial_step` (the pages translate them:
#: ``api/ui/i18n.py``), with its parameters.
DIAL_MESSAGES: dict[str, str] = {
    "dial_unknown": "the bot is not connected to a gateway (no connection within %(wait_s)s s)",
    "dial_never_connected": (
        "the bot never connected: no connection with its id reached a gateway in the last hour, none within"
        " %(wait_s)s s (is it running, with ARENA_BOT_ID and ARENA_GATEWAY_URL set?)"
    ),
    "dial_auth_failed": (
        "the bot connected %(ago_s)s s ago but failed authentication (close 4401: a wrong signature for its id;"
        " check ARENA_BOT_ID, ARENA_BOT_SECRET and the machine's clock)"
    ),
    "dial_refused": "the bot connected %(ago_s)s s ago but its connection was refused (close %(code)s: %(meaning)s)",
    "dial_dropped": (
        "the bot authenticated, then its connection dropped %(ago_s)s s ago without a close (its program stopped"
        " or crashed, or its network went away), and it did not connect again within %(wait_s)s s"
    ),
    "dial_closed_by_bot": (
        "the bot authenticated, then closed its connection %(ago_s)s s ago (close %(code)s), and it did not"
        " connect again within %(wait_s)s s"
    ),
    "dial_closed_by_gateway": (
        "the bot authenticated, then the gateway closed its connection %(ago_s)s s ago (close %(code)s:"
        " %(meaning)s), and it did not connect again within %(wait_s)s s"
    ),
    "dial_connected": (
        "the bot authenticated %(ago_s)s s ago, but no connection of it took the check's request within %(wait_s)s s"
    ),
}


def dial_step(story: relay.Story | None, *, wait_s: float, now: float | None = None) -> dict[str, Any]:
    """Which step a bot that dials out reached, when no connection of it took the check's
    health request within ``wait_s`` seconds, from its ``story`` (:class:`arena.relay.Story`;
    None: unreadable). Returns ``{"step", "error": English, "error_code": {"code", "params"}}``
    (``code`` a key of :data:`DIAL_MESSAGES`, translated by the pages), ``step`` one of:

    * ``never_connected``: no connection claimed the bot in :data:`arena.relay.STORY_TTL_S`;
    * ``auth_failed``: its last connection was refused with 4401 (a wrong proof: id, secret, clock);
    * ``refused``: its last connection was refused otherwise (4429 over a cap, 4403...);
    * ``dropped``: it authenticated, then its connection closed (by the bot, or the gateway,
      with a close code) or dropped without one (the program crashed or its network went away);
    * ``connected``: it authenticated and the gateways wrote no end, yet no connection took the
      request (a gateway that stalled); ``unknown``: the story could not be read.
    """
    now = time.time() if now is None else now
    code = story.code if story is not None else None
    params: dict[str, Any] = {
        "wait_s": f"{wait_s:g}",
        "ago_s": max(0, round(now - story.at)) if story is not None and story.at is not None else 0,
        "code": code,
        "meaning": wire.CLOSE_CODES.get(code, "") if code is not None else "",
    }
    if story is None:
        step, message = "unknown", "dial_unknown"
    elif story.event is None:
        step, message = "never_connected", "dial_never_connected"
    elif story.event == "refused":
        step = "auth_failed" if code == wire.CLOSE_AUTH_FAILED else "refused"
        message = f"dial_{step}"
    elif story.event == "closed":
        step = "dropped"
        message = "dial_dropped" if code is None else f"dial_closed_by_{'bot' if story.by == 'bot' else 'gateway'}"
    else:
        step, message = "connected", "dial_connected"
    return {"step": step, "error": DIAL_MESSAGES[message] % params, "error_code": {"code": message, "params": params}}


def ping_warning(
    story: Callable[[], relay.Story],
    since: Callable[[], float | None],
    *,
    silence_s: float = wire.PING_SILENCE_S,
    first_s: float = wire.PING_FIRST_S,
    until: float | None = None,
    now: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any] | None:
    """The warning ``no_pings`` when a connected bot sends none of the protocol's keep-alive
    pings (docs/protocol.md, "Pools and reconnection"): ``{"code": "no_pings", "params":
    {"silent_s"}, "text": English}``, or None (it pinged, or it is not connected: nothing to
    judge). ``story()`` gives its :class:`~arena.relay.Story` (``pinged``), ``since()`` the Unix
    seconds its oldest live connection opened (None: none). Warned: no ping since that
    connection opened, which is ``first_s`` seconds old or more (the first ping is due after the
    protocol's interval), or none in the last ``silence_s`` seconds. A younger connection without
    a ping is waited for (polling every half second, at most until ``until``, a
    ``time.monotonic()`` deadline), until its first ping or until it is ``first_s`` old.

    Raises:
        redis.RedisError: the story or the presence cannot be read.
    """
    while True:
        pinged, opened, t = story().pinged, since(), now()
        if opened is None:
            return None
        if pinged is not None and pinged >= opened and t - pinged <= silence_s:
            return None
        pinged_since = pinged is not None and pinged >= opened
        if t - opened >= (silence_s if pinged_since else first_s):
            silent = round(t - (pinged if pinged_since and pinged is not None else opened))
            text = (
                f"the bot sent no keep-alive ping in {silent} s of connection: the protocol asks for a WebSocket ping"
                f" every {wire.PING_INTERVAL_S:g} s on each connection, answered before the next, so that a gateway"
                " that froze or a network gone silent is noticed and the bot connects again in time"
                ' (docs/protocol.md, "Pools and reconnection")'
            )
            return {"code": "no_pings", "params": {"silent_s": silent}, "text": text}
        if until is not None and time.monotonic() >= until:
            return None
        sleep(0.5)


#: Seconds allowed for the authentication probe (connect, challenge, refusal).
AUTH_PROBE_TIMEOUT_S = 5.0


def auth_probe(gateway_url: str, bot_id: int, *, timeout_s: float = AUTH_PROBE_TIMEOUT_S) -> dict[str, Any]:
    """Connect to the gateway as bot ``bot_id`` and answer its challenge with a wrong secret
    (step 3 for a bot that dials out): the gateway must close the connection with
    :data:`bots_sdk.wire.CLOSE_AUTH_FAILED`.

    Returns ``{"ok": bool, "status": close code | None, "warning": str | None}`` (and
    ``warning_code`` ``{"code": "auth_not_refused" | "auth_probe_failed", "params"}`` when not
    ok). Never raises."""
    code: int | None = None
    why = ""
    try:
        with ws_connect(gateway_url, open_timeout=timeout_s, close_timeout=1, max_size=wire.MAX_FRAME_BYTES) as ws:
            challenge = json.loads(ws.recv(timeout=timeout_s))
            ws.send(wire.auth_frame(bot_id, "wrong-" + _secrets.token_hex(32), str(challenge.get("nonce", ""))))
            reply = ws.recv(timeout=timeout_s)
            why = f"the gateway accepted a wrong proof ({str(reply)[:80]})"
    except ConnectionClosed as exc:
        code = exc.rcvd.code if exc.rcvd is not None else None
    except (OSError, TimeoutError, ValueError, WebSocketException) as exc:
        why = truncate_text(f"{type(exc).__name__}: {exc}")
        return {
            "ok": False,
            "status": None,
            "warning": f"the authentication probe could not reach the gateway {gateway_url}: {why}",
            "warning_code": {"code": "auth_probe_failed", "params": {"error": why}},
        }
    if code == wire.CLOSE_AUTH_FAILED:
        return {"ok": True, "status": code, "warning": None}
    return {
        "ok": False,
        "status": code,
        "warning": f"a connection that answered the challenge with a wrong secret was not refused: {why or code}",
        "warning_code": {"code": "auth_not_refused", "params": {"status": code}},
    }


class ConnectedTarget:
    """The transport of a bot that dials out (``bot_id``), reached through Redis (``client``)
    and a gateway; ``gateway_url``: where the authentication probe connects (None: the probe
    does not run, a warning says so)."""

    first_stage = "health"

    def __init__(
        self,
        bot_id: int,
        client: redis.Redis,
        gateway_url: str | None,
        *,
        reconnect_s: float = CONNECT_WAIT_S,
        name: str = "",
    ) -> None:
        self.bot_id, self.client, self.gateway_url = bot_id, client, gateway_url
        self.connected = ConnectedPlayer(bot_id, client, name or f"bot#{bot_id}", reconnect_s=reconnect_s)

    def url_error(self) -> str | None:
        return None  # no URL: the bot dials out

    def health(self) -> dict[str, Any]:
        return connected_health(self.connected, story=lambda: relay.story(self.client, self.bot_id))

    def signature(self) -> dict[str, Any]:
        if self.gateway_url:
            return auth_probe(self.gateway_url, self.bot_id)
        return {
            "ok": False,
            "status": None,
            "warning": "the authentication probe did not run: ARENA_GATEWAY_URL is not set",
            "warning_code": {"code": "auth_probe_failed", "params": {"error": "ARENA_GATEWAY_URL is not set"}},
        }

    def player(self) -> Player:
        return self.connected  # one player for the whole check (its close does nothing)

    def finish(self, result: dict[str, Any], deadline: float | None) -> None:
        """The keep-alive pings the protocol asks for (a warning)."""
        try:
            warning = ping_warning(
                lambda: relay.story(self.client, self.bot_id),
                lambda: relay.presence(self.client, [self.bot_id])[self.bot_id].since,
                until=deadline,
            )
        except (redis.RedisError, OSError):
            warning = None  # the relay's failure: nothing said of the bot
        if warning is not None:
            warn(result, warning["text"], {"code": warning["code"], "params": warning["params"]})


def check_connected_bot(
    bot_id: int,
    rulesets: list[str],
    *,
    client: redis.Redis,
    gateway_url: str | None,
    reconnect_s: float = CONNECT_WAIT_S,
    on_progress: ProgressFn | None = None,
    limit_s: float | None = None,
    name: str = "",
) -> dict[str, Any]:
    """:func:`arena.conformance.pipeline.check_bot` for a bot that dials out (module
    docstring): the pipeline over a :class:`ConnectedTarget`. The same outcome shape (``url``:
    ``{"ok": True, "error": None}``; ``signature``: the authentication probe's result). Never
    raises for the bot's behaviour."""
    target = ConnectedTarget(bot_id, client, gateway_url, reconnect_s=reconnect_s, name=name)
    return run_pipeline(target, rulesets, on_progress=on_progress, limit_s=limit_s)
