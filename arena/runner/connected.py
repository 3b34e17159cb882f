"""The player of a bot that dials out: its requests go through Redis to whichever gateway holds
one of its connections (:mod:`arena.relay`; docs/operations.md, "Gateways").

A decision is pushed onto the bot's request list, ringing the gateways that hold the bot
(:data:`arena.relay.PUSH_AND_RING`, in the same round trip as the first wait), and its answer
awaited on the request's answer list, in slices of :data:`SLICE_S` seconds. Between slices the
player looks at where the request is (:data:`_WHERE`):

* still queued: no connection took it. Past ``reconnect_s`` seconds (never past the bank) it is
  taken back: the fault ``connection_error`` ("not connected"). A bot restarted within that
  time loses nothing but the time (charged to its bank, TIME-2).
* held by a live gateway: the bot is thinking; at the bank's end, the fault ``timeout``.
* held by a gateway that died: the request is queued again, at the front, for another gateway.

A connection that drops while it holds requests gives them back to the queue (the gateway
does it), so they wait for the bot's reconnection like the others. Answers are parsed like an
HTTP bot's (:func:`arena.safejson.parse_answer`); a fault the gateway saw (an oversized or
non-JSON frame closes the connection) comes back as that fault.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import redis

from arena import relay
from arena.runner.answers import safe_text
from arena.runner.capped import SlotCap
from arena.runner.players import NO_SLOT, NOTICE_TIMEOUT_S, RECEIVED_LOG_CHARS, Outcome, SlotUse
from arena.runner.semaphore import BotSemaphore, MatchSlots
from arena.safejson import parse_answer
from bots_sdk import wire

#: Longest single wait on the answer list, seconds (under the Redis client's socket timeout).
SLICE_S = 1.0
#: Seconds a request list lives after its last push (an abandoned one vanishes).
REQUEST_LIST_TTL_S = 600
#: Slices a request may be neither queued nor held (lost: Redis restarted empty, or a gateway
#: of an earlier version, which popped and held in two steps, died between them) before it is
#: queued again.
LOST_SLICES = 3

# KEYS: request list, held key, the bot's presence set. ARGV: envelope, "1" to take it back
# when queued, alive prefix, doorbell prefix, bot id. Returns "queued", "removed" (it was queued
# and is taken back), "held", "requeued" (its gateway died: queued again at the front, and the
# bot's gateways rung) or "unknown".
_WHERE = (
    relay.LUA_RING
    + """
local pos = redis.call('LPOS', KEYS[1], ARGV[1])
if pos then
  if ARGV[2] == '1' then
    redis.call('LREM', KEYS[1], 1, ARGV[1])
    return 'removed'
  end
  return 'queued'
end
local gw = redis.call('GET', KEYS[2])
if not gw then return 'unknown' end
if redis.call('EXISTS', ARGV[3] .. gw) == 1 then return 'held' end
redis.call('DEL', KEYS[2])
redis.call('LPUSH', KEYS[1], ARGV[1])
ring(KEYS[3], ARGV[4], ARGV[5])
return 'requeued'
"""
)


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000))


class ConnectedPlayer:
    """A bot that dials out, reached through Redis and a gateway (module docstring).

    Args:
        bot_id: the bot's id (its request list).
        client: a Redis client (the match's own connection: one thread uses it).
        name: display name in the log.
        reconnect_s: longest wait for a connection, seconds (``ARENA_GATEWAY_RECONNECT_S``).
    """

    kind = "connect"

    def __init__(self, bot_id: int, client: redis.Redis, name: str | None = None, *, reconnect_s: float = 15.0):
        self.bot_id = int(bot_id)
        self.client = client
        self.name: str = name or f"bot#{bot_id}"
        self.url: str | None = None
        self.reconnect_s = float(reconnect_s)
        self._req_key = relay.request_key(self.bot_id)
        self._where = client.register_script(_WHERE)

    def _push(self, kind: str, body: bytes, deadline: float, *, wait_s: float | None) -> tuple[str, str, Any]:
        rid = secrets.token_hex(12)
        env = relay.envelope(rid, int(deadline * 1000), kind, wire.frame(kind, rid, body))
        pipe = self.client.pipeline(transaction=False)
        pipe.eval(relay.PUSH_AND_RING, *relay.push_args(self.bot_id, [env], front=False, ttl_s=REQUEST_LIST_TTL_S))
        if wait_s is not None:  # the first wait in the same round trip
            pipe.blpop([relay.answer_key(rid)], timeout=wait_s)
        res = pipe.execute()
        got = res[1] if wait_s is not None else None
        return rid, env, got[1] if got else None

    def exchange(self, kind: str, body: bytes, timeout_s: float) -> Outcome:
        """Send ``body`` as a ``kind`` frame (``request`` or ``health``), wait at most
        ``timeout_s`` seconds for its answer; never raises."""
        start = time.monotonic()
        wall_deadline = time.time() + max(timeout_s, 0.0)
        deadline = start + max(timeout_s, 0.0)
        try:
            return self._exchange(kind, body, start, deadline, wall_deadline)
        except (redis.RedisError, OSError) as e:
            return Outcome(
                None,
                "connection_error",
                safe_text(f"the arena's relay failed: {type(e).__name__}: {e}", RECEIVED_LOG_CHARS),
                "",
                _ms(time.monotonic() - start),
                None,
            )

    def _exchange(self, kind: str, body: bytes, start: float, deadline: float, wall_deadline: float) -> Outcome:
        first = min(SLICE_S, deadline - start, self.reconnect_s)
        rid, env, got = self._push(kind, body, wall_deadline, wait_s=max(0.001, first))
        ans_key, held = relay.answer_key(rid), relay.held_key(rid)
        alive = relay.PREFIX + "alive:"
        unknown = 0
        queued_since: float | None = start  # since when no connection holds it (None: one does)
        while got is None:
            now = time.monotonic()
            give_up = now >= deadline or (queued_since is not None and now - queued_since >= self.reconnect_s)
            where = self._where(
                keys=[self._req_key, held, relay.conns_key(self.bot_id)],
                args=[env, "1" if give_up else "0", alive, relay.wake_prefix(), self.bot_id],
            )
            where = where.decode() if isinstance(where, bytes) else str(where)
            if where == "removed":
                return Outcome(
                    None,
                    "connection_error",
                    f"the bot had no connection to a gateway for {_ms(now - (queued_since or start))} ms",
                    "",
                    _ms(now - start),
                    None,
                )
            if now >= deadline:
                got = self.client.lpop(ans_key)  # an answer that came as the bank ended
                if got is None:
                    return Outcome(None, "timeout", "no answer within the bank", "", _ms(now - start), None)
                break
            if where in ("queued", "requeued"):
                queued_since = now if queued_since is None else queued_since
            elif where == "held":
                queued_since = None
            unknown = unknown + 1 if where == "unknown" else 0
            if unknown >= LOST_SLICES:  # popped by a gateway that died before it said so
                self.client.eval(relay.PUSH_AND_RING, *relay.push_args(self.bot_id, [env], front=True))
                unknown, queued_since = 0, now
            until = deadline if queued_since is None else min(deadline, queued_since + self.reconnect_s)
            got = self.client.blpop([ans_key], timeout=max(0.001, min(SLICE_S, until - now)))
            if got is not None:
                got = got[1]
        return self._outcome(got, time.monotonic() - start, deadline - start)

    def _outcome(self, raw: bytes, elapsed_s: float, timeout_s: float) -> Outcome:
        elapsed = _ms(elapsed_s)
        tag, payload = raw[:1], raw[1:]
        if tag == b"F":
            try:
                f = json.loads(payload)
                kind, detail, received = str(f["kind"]), str(f.get("detail", "")), str(f.get("received", ""))
            except (ValueError, KeyError, TypeError):
                kind, detail, received = "connection_error", "the gateway sent a broken fault", ""
            return Outcome(
                None,
                kind,
                safe_text(detail, RECEIVED_LOG_CHARS),
                safe_text(received, RECEIVED_LOG_CHARS),
                elapsed,
                None,
            )
        if elapsed_s > timeout_s:
            return Outcome(None, "timeout", f"answer took {elapsed} ms, more than the bank", "", elapsed, None)
        obj, why = parse_answer(payload)
        if obj is None:
            return Outcome(None, "invalid_json", why, safe_text(payload, RECEIVED_LOG_CHARS), elapsed, None)
        return Outcome(obj, None, "", "", elapsed, None)

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        return self.exchange("request", body, timeout_s)

    def health(self, timeout_s: float) -> Outcome:
        """The bot's health object (``Outcome.action``), asked over its connection."""
        return self.exchange("health", b"{}", timeout_s)

    def notify(self, body: bytes) -> SlotUse:
        """Queue a notice for the bot (it is dropped after :data:`NOTICE_TIMEOUT_S`); never raises."""
        try:
            self._push("notice", body, time.time() + NOTICE_TIMEOUT_S, wait_s=None)
        except (redis.RedisError, OSError):
            pass
        return NO_SLOT

    def close(self) -> None:
        return None


class CappedConnectedPlayer(SlotCap, ConnectedPlayer):
    """A :class:`ConnectedPlayer` whose every request holds a slot of ``semaphore`` (the bot's
    own cap, :func:`connect_semaphore`), as :class:`arena.runner.capped.CappedHttpPlayer`."""

    def __init__(
        self,
        bot_id: int,
        client: redis.Redis,
        name: str | None,
        semaphore: BotSemaphore | None,
        slots: MatchSlots | None = None,
        *,
        reconnect_s: float = 15.0,
    ):
        ConnectedPlayer.__init__(self, bot_id, client, name, reconnect_s=reconnect_s)
        self.semaphore = semaphore
        self.slots = slots


def connect_semaphore(client: redis.Redis, bot_id: int, limit: int, max_wait_s: float) -> BotSemaphore:
    """The per-bot request cap of a bot that dials out (key ``arena:bot-sem:connect:bot:<id>``)."""
    return BotSemaphore(client, f"connect:bot:{int(bot_id)}", limit, max_wait_s)
