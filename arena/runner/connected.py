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
does it), so they wait for the bot's reconnection like the others. When Redis itself fails
(restarted empty, unreachable) the player tries again until the deadline and, once it answers,
queues a request found nowhere again at once; the bot is never charged for it: no answer by
the deadline after such a failure raises :class:`RelayUnavailable` (the match fails as the
arena's error, to be played again), never a fault. Answers are parsed like an
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
#: First pause between two attempts to reach Redis again, seconds (doubling up to SLICE_S).
RELAY_RETRY_S = 0.05
#: What a failing relay raises (Redis unreachable, restarting, a socket cut).
RELAY_ERRORS = (redis.RedisError, OSError)
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


class RelayUnavailable(RuntimeError):
    """Redis, the relay to the gateways, failed during a decision and no answer came by its
    deadline: the arena's failure, not the bot's (no fault is recorded; the match fails)."""

    def __init__(self, cause: BaseException):
        super().__init__(
            f"the relay to the gateways (Redis) failed during a decision and no answer came: {type(cause).__name__}"
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

    @staticmethod
    def _envelope(kind: str, body: bytes, deadline: float) -> tuple[str, str]:
        rid = secrets.token_hex(12)
        return rid, relay.envelope(rid, int(deadline * 1000), kind, wire.frame(kind, rid, body))

    def _push(self, env: str, ans_key: str | None = None, wait_s: float = 0.0) -> Any:
        """Queue ``env``; with ``ans_key``, the first wait for its answer in the same round trip."""
        pipe = self.client.pipeline(transaction=False)
        pipe.eval(relay.PUSH_AND_RING, *relay.push_args(self.bot_id, [env], front=False, ttl_s=REQUEST_LIST_TTL_S))
        if ans_key is not None:
            pipe.blpop([ans_key], timeout=wait_s)
        res = pipe.execute()
        got = res[1] if ans_key is not None else None
        return got[1] if got else None

    def _relay_back(self, deadline: float) -> bool:
        """Wait for Redis to answer again, until ``deadline`` (monotonic): whether it did."""
        pause = RELAY_RETRY_S
        while True:
            try:
                return bool(self.client.ping())
            except RELAY_ERRORS:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                time.sleep(min(pause, left))
                pause = min(pause * 2, SLICE_S)

    def exchange(self, kind: str, body: bytes, timeout_s: float) -> Outcome:
        """Send ``body`` as a ``kind`` frame (``request`` or ``health``), wait at most
        ``timeout_s`` seconds for its answer (module docstring).

        Raises:
            RelayUnavailable: Redis failed during the wait and no answer came by its end.
        """
        start = time.monotonic()
        wall_deadline = time.time() + max(timeout_s, 0.0)
        deadline = start + max(timeout_s, 0.0)
        return self._exchange(kind, body, start, deadline, wall_deadline)

    def _exchange(self, kind: str, body: bytes, start: float, deadline: float, wall_deadline: float) -> Outcome:
        rid, env = self._envelope(kind, body, wall_deadline)
        ans_key, held = relay.answer_key(rid), relay.held_key(rid)
        alive = relay.PREFIX + "alive:"
        unknown = 0
        queued_since: float | None = start  # since when no connection holds it (None: one does)
        outage: BaseException | None = None  # the relay's last failure during this decision
        try:
            got = self._push(env, ans_key, max(0.001, min(SLICE_S, deadline - start, self.reconnect_s)))
        except RELAY_ERRORS as exc:
            got, outage, unknown = None, exc, LOST_SLICES - 1  # queued or not: found nowhere, queued again
            if not self._relay_back(deadline):
                raise RelayUnavailable(exc) from exc
        while got is None:
            now = time.monotonic()
            try:
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
                    if got is not None:
                        break
                    if outage is not None:  # maybe lost in the outage: not the bot's to pay
                        raise RelayUnavailable(outage)
                    return Outcome(None, "timeout", "no answer within the bank", "", _ms(now - start), None)
                if where in ("queued", "requeued"):
                    queued_since = now if queued_since is None else queued_since
                elif where == "held":
                    queued_since = None
                unknown = unknown + 1 if where == "unknown" else 0
                if unknown >= LOST_SLICES:  # popped by a gateway that died before it said so
                    # (at the front, as given back, and the bot's gateways rung)
                    self.client.eval(
                        relay.PUSH_AND_RING,
                        *relay.push_args(self.bot_id, [env], front=True, ttl_s=REQUEST_LIST_TTL_S),
                    )
                    unknown, queued_since = 0, now
                until = deadline if queued_since is None else min(deadline, queued_since + self.reconnect_s)
                got = self.client.blpop([ans_key], timeout=max(0.001, min(SLICE_S, until - now)))
                if got is not None:
                    got = got[1]
            except RELAY_ERRORS as exc:
                outage = exc
                if not self._relay_back(deadline):
                    raise RelayUnavailable(exc) from exc
                # Redis is back, maybe empty (restarted): a request found nowhere is queued
                # again at once, and the outage is not counted as time the bot was unconnected
                unknown = LOST_SLICES - 1
                queued_since = time.monotonic() if queued_since is not None else None
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
            self._push(self._envelope("notice", body, time.time() + NOTICE_TIMEOUT_S)[1])
        except RELAY_ERRORS:
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
