"""The player of a bot that dials out: its requests go through Redis to whichever gateway holds
one of its connections (:mod:`arena.relay`; docs/operations.md, "Gateways").

A decision is pushed onto the bot's request list, ringing the gateways that hold the bot
(:data:`arena.relay.PUSH_AND_RING`, in the same round trip as the first wait), and its answer
awaited on the request's answer list, in slices of :data:`SLICE_S` seconds. Between slices the
player looks at where the request is (:data:`_WHERE`), and whose the slice's time was (the
clock of docs/protocol.md, "Whose fault is a wait"):

* still queued: no connection took it. That time is the arena's when no gateway is alive, or
  the bot's connections were on a gateway that died, stopped or missed its beats (its last
  beat :data:`LATE_BEAT_MS` old), until
  :data:`arena.relay.REJOIN_S` after that (the bot is reconnecting; after an outage of every
  gateway, every bot connected before it is, until it is welcomed again:
  :data:`arena.relay.OUTAGE_KEY`); otherwise the bot's:
  past ``reconnect_s`` seconds of it (never past the bank) the request is taken back, the
  fault ``connection_error`` ("not connected").
* held by a live gateway: the bot is thinking (the bot's time), but for the time the gateway
  says its event loop stalled (its alive key, :data:`arena.relay.ALIVE_BEAT`): the arena's;
  and once the gateway's beat is :data:`LATE_BEAT_MS` old (it died or froze, its alive key not
  yet lapsed), all the time since its last beat is the arena's.
* held by a gateway that died: the request is queued again, at the front, for another gateway;
  the time since the gateway's last beat is the arena's.

The arena's time is never the bot's: an answer's :attr:`Outcome.arena_ms` is left out of the
bank (:mod:`arena.runner.match`), and a request with no answer by the bank's end after some
of the arena's time is no fault: :attr:`Outcome.arena` says why, and the runner asks again.

A connection that drops while it holds requests gives them back to the queue (the gateway
does it), so they wait for the bot's reconnection like the others. When Redis itself fails
(restarted empty, unreachable) the player tries again until the deadline and, once it answers,
queues a request found nowhere again at once; the bot is never charged for it: no answer by
the deadline after such a failure raises :class:`RelayUnavailable` (the arena's failure:
the runner asks again), never a fault. The gateway forwards an answer's frame as the bot sent
it (``R<frame>``: it never parses a bot's JSON on its event loop); it is parsed here, like an
HTTP bot's answer (:func:`arena.safejson.parse_answer`), and must carry the request's id; a
fault the gateway saw (an oversized or non-JSON frame closes the connection) comes back as
that fault.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Collection
from typing import Any

import redis

from arena import relay
from arena.faults import FaultCode, fault
from arena.runner.answers import safe_text
from arena.runner.capped import SlotCap
from arena.runner.players import NO_SLOT, NOTICE_TIMEOUT_S, RECEIVED_LOG_CHARS, ArenaFailure, Outcome, SlotUse
from arena.runner.semaphore import BotSemaphore, MatchSlots
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

#: Seconds past the bank's end a wait for a held request may be lengthened by the arena's own
#: time (a gateway's stall): the gateway still takes an answer up to 1 s past the request's
#: deadline (:meth:`daifugo_arena.gateway.liveness.Liveness._expire`). A bot whose own time
#: reached its bank, the gateway well, is at fault; more of the arena's time than this, or an
#: arena failing at the end, makes the decision the arena's (asked again).
GRACE_S = 0.9
#: Milliseconds of stall a gateway must report for its time to count as the arena's.
STALL_MIN_MS = 50
#: Age of a gateway's last beat (it beats every second) from which the gateway holding a
#: request is taken for dead or frozen: the time since that beat is the arena's, before its
#: alive key lapses (:data:`arena.relay.ALIVE_TTL_S`).
LATE_BEAT_MS = 1500

# KEYS: request list, held key, the bot's presence set, the bot's dropped mark, the gateways'
# set, the outage mark, the bot's back mark (both optional). ARGV: envelope, "1" to take it back
# when queued (unless the arena keeps the bot out), alive prefix, doorbell prefix, bot id,
# seconds a gateway lives without a beat, rejoin seconds, the dropped mark's time to live,
# seconds from which a gateway's beat is late (it is taken for dead). Returns "queued|1|<ms
# since the last beat of the gateway taken for dead, 0 if not known>[|<id of each gateway taken
# for dead>...]" (queued, the arena keeps the bot out: no gateway alive, or a connection of the
# bot on a gateway that died or is late, or rejoin time left since), "queued|0" (queued: the bot
# is not connected), "removed" (taken back), "held|<stall ms>|<ms since the gateway's last
# beat>|<its id>", "requeued|<ms since the dead gateway's last beat>|<its id>" (queued again at
# the front, and the bot's gateways rung) or "unknown". A gateway id never holds "|" (a presence
# member starts with it, then "|").
_WHERE = (
    relay.LUA_RING
    + relay.LUA_NEWEST_BEAT_AGE
    + """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local late, ttl = tonumber(ARGV[9]), tonumber(ARGV[6])
-- '1|<ms since the last beat of the gateway that is late or dead>' (0: not known), or '0'.
-- No gateway alive (none beat in an alive key's time), or a gateway holding a connection of
-- the bot dead (its key gone) or late (its last beat `late` old): the arena keeps the bot out.
-- A dead gateway also starts the rejoin time (the dropped mark); a late one only counts while
-- it is late (a loaded machine delays beats: a bot with no connection is not helped by that).
-- No gateway alive starts the rejoin time of every bot connected before (the outage mark,
-- KEYS[6], also set by the beat that ends the outage; the bot's back mark, KEYS[7], older): a
-- bot with no request during the outage is reconnecting too, until a connection of it is
-- welcomed (its back mark newer): then it is back, and leaving again (its request given back,
-- seen) is its own choice, not the outage's. A bot never welcomed is not reconnecting. The
-- same holds for a gateway that died or is late, and for the dropped mark: a bot welcomed
-- again by another gateway since that gateway's last beat (or since the mark) is back, not
-- kept out by them.
local function arena_keeps_out()
  local age, dead, late_gws = nil, false, {}
  local back_t, back_gw = string.match(KEYS[7] and redis.call('GET', KEYS[7]) or '', '^([^|]+)|?(.*)$')
  local back = tonumber(back_t or '')
  -- the bot welcomed (by a gateway other than `gw`, if given) after time `t`: it is back
  local function back_since(t, gw)
    return back ~= nil and t ~= nil and back > t and back_gw ~= gw
  end
  local newest_age = newest_beat_age(KEYS[5], now)
  if not newest_age or newest_age > ttl then
    age, dead = newest_age or 0, true
    if KEYS[6] then
      redis.call('SET', KEYS[6], string.format('%.6f', now), 'EX', ARGV[8])
    end
  else
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now, '+inf')) do
      local gw = string.match(m, '^[^|]+')
      if gw then
        local beat = tonumber(redis.call('ZSCORE', KEYS[5], gw) or '')
        local gone = redis.call('EXISTS', ARGV[3] .. gw) == 0 or not beat
        -- a bot welcomed again by another gateway since that one's last beat is back: that
        -- lease keeps no one out
        if (gone or now - beat > late) and not back_since(beat, gw) then
          age = math.max(age or 0, beat and now - beat or 0)
          dead = dead or gone
          late_gws[#late_gws + 1] = gw
        end
      end
    end
  end
  if dead then
    redis.call('SET', KEYS[4], string.format('%.3f', now), 'EX', ARGV[8])
  end
  if age then
    local out = '1|' .. math.floor(math.max(0, age) * 1000)
    for _, gw in ipairs(late_gws) do out = out .. '|' .. gw end
    return out
  end
  local since = tonumber(redis.call('GET', KEYS[4]) or '')
  if since and now - since < tonumber(ARGV[7]) and not back_since(since) then return '1|0' end
  local outage = KEYS[6] and tonumber(redis.call('GET', KEYS[6]) or '')
  if outage and back and not back_since(outage) and now - outage < tonumber(ARGV[7]) then return '1|0' end
  return '0'
end
local pos = redis.call('LPOS', KEYS[1], ARGV[1])
if pos then
  local kept = arena_keeps_out()
  if ARGV[2] == '1' and kept == '0' then
    redis.call('LREM', KEYS[1], 1, ARGV[1])
    return 'removed'
  end
  return 'queued|' .. kept
end
local gw = redis.call('GET', KEYS[2])
if not gw then return 'unknown' end
local alive = redis.call('GET', ARGV[3] .. gw)
local ttl_ms = math.floor(tonumber(ARGV[6]) * 1000)
if alive then
  local left = redis.call('PTTL', ARGV[3] .. gw)
  return 'held|' .. alive .. '|' .. (left >= 0 and math.max(0, ttl_ms - left) or 0) .. '|' .. gw
end
redis.call('DEL', KEYS[2])
redis.call('LPUSH', KEYS[1], ARGV[1])
ring(KEYS[3], ARGV[4], ARGV[5])
local beat = tonumber(redis.call('ZSCORE', KEYS[5], gw) or '')
return 'requeued|' .. (beat and math.max(ttl_ms, math.floor((now - beat) * 1000)) or ttl_ms) .. '|' .. gw
"""
)

#: What the arena's failures are called in :attr:`Outcome.arena`.
NO_GATEWAY = "no gateway could hold a connection of the bot (a gateway died or stopped, or none ran)"
STALLED = "the gateway holding the request stalled"
LATE = "the gateway holding the request missed its beats (it died or froze)"
DIED = "the gateway holding the request died"
RELAY_DOWN = "the relay to the gateways (Redis) failed"


class RelayUnavailable(ArenaFailure):
    """Redis, the relay to the gateways, failed during a decision and no answer came by its
    deadline: the arena's failure, not the bot's (no fault is recorded; the match fails)."""

    def __init__(self, cause: BaseException):
        super().__init__(
            f"the relay to the gateways (Redis) failed during a decision and no answer came: {type(cause).__name__}"
        )


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000))


class _Clock:
    """Whose a decision's time was (module docstring): :attr:`arena_s` (seconds the arena kept
    the bot from answering), :attr:`bot_waited` (seconds queued while the bot was not
    connected, its own), :attr:`why` (the arena's last failure seen, "" if none)."""

    def __init__(self, start: float):
        self.last = start
        self.arena_s = 0.0
        self.bot_waited = 0.0
        self.why = ""
        self._arena_now = False  # the state last seen was the arena's failure
        # spans (from, to, where) counted as the bot's: where "" queued, else the gateway holding it
        self._held: list[tuple[float, float, str]] = []

    def _since_beat(self, now: float, age_ms: str, gateways: Collection[str]) -> None:
        """The last beat of the gateways taken for dead (``gateways``: holding the request, or
        holding the bot's connections) was ``age_ms`` ago: the time counted as the bot's since
        then while the request was queued, or held by one of them, is the arena's. Time it was
        held by another gateway stays the bot's: a bot thinking on a live gateway is not paid
        for a gateway that died beside it (it sees that one die: its connection there drops)."""
        since = now - (int(age_ms) / 1000 if age_ms.isdigit() else 0.0)
        kept = []
        for start, end, where in self._held:
            if end > since and (not where or where in gateways):
                back = end - max(start, since)
                self.arena_s += back
                if not where:  # no longer the bot's wait for a connection (``reconnect_s``)
                    self.bot_waited = max(0.0, self.bot_waited - back)
                if start < since:
                    kept.append((start, since, where))
            else:
                kept.append((start, end, where))
        self._held = kept

    @property
    def arena_now(self) -> bool:
        """Whether the state last seen was the arena's failure (a gateway late or dead, none
        alive, the relay down)."""
        return self._arena_now

    def arena(self, now: float, why: str) -> None:
        """The time since the last look was the arena's (``why``)."""
        self.arena_s += max(0.0, now - self.last)
        self.last, self.why, self._arena_now = now, why, True

    def observe(self, now: float, state: str, info: str) -> None:
        """Attribute the time since the last look, by where the request is now."""
        span = max(0.0, now - self.last)
        self.last = now
        self._arena_now = False
        if state == "requeued":
            self.arena_s += span
            self.why, self._arena_now = DIED, True
            age_ms, _, gw = info.partition("|")
            self._since_beat(now, age_ms, (gw,))
        elif state == "queued" and info.startswith("1"):
            self.arena_s += span
            self.why, self._arena_now = NO_GATEWAY, True
            _, age_ms, *gws = info.split("|")
            self._since_beat(now, age_ms, gws)
        elif state in ("queued", "removed"):
            self.bot_waited += span
            self._held.append((now - span, now, ""))
        elif state == "held":
            stall_ms, age_ms, gw = (info.split("|") + ["", ""])[:3]
            stall = int(stall_ms) / 1000 if stall_ms.isdigit() else 0.0
            arena = min(span, stall) if stall * 1000 >= STALL_MIN_MS else 0.0
            if arena:
                self.arena_s += arena
                self.why = STALLED
            if span > arena:
                self._held.append((now - span, now - arena, gw))
            if age_ms.isdigit() and int(age_ms) >= LATE_BEAT_MS:
                self._since_beat(now, age_ms, (gw,))
                self.why, self._arena_now = LATE, True

    def close(self, now: float) -> None:
        """The answer came at ``now``: the last span is the arena's if the last state was."""
        if self._arena_now:
            self.arena_s += max(0.0, now - self.last)
        self.last = now


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
        self._where_keys = [
            self._req_key,
            "",
            relay.conns_key(self.bot_id),
            relay.dropped_key(self.bot_id),
            relay.GATEWAYS_KEY,
            relay.OUTAGE_KEY,
            relay.back_key(self.bot_id),
        ]

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

    def _look(self, keys: list[str], env: str, give_up: bool) -> tuple[str, str]:
        """Where the request ``env`` is (:data:`_WHERE`; ``keys`` with its held key), taken back
        if ``give_up`` and queued: (state, info), as :meth:`_Clock.observe` reads them."""
        where = self._where(
            keys=keys,
            args=[
                env,
                "1" if give_up else "0",
                relay.PREFIX + "alive:",
                relay.wake_prefix(),
                self.bot_id,
                relay.ALIVE_TTL_S,
                relay.REJOIN_S,
                relay.DROPPED_TTL_S,
                LATE_BEAT_MS / 1000,
            ],
        )
        state, _, info = (where.decode() if isinstance(where, bytes) else str(where)).partition("|")
        return state, info

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
        ans_key = relay.answer_key(rid)
        keys = [*self._where_keys]
        keys[1] = relay.held_key(rid)
        clock = _Clock(start)
        bank_end = deadline  # the wait may be lengthened by the arena's own time (GRACE_S)
        unknown = 0
        outage: BaseException | None = None  # the relay's last failure during this decision
        try:
            got = self._push(env, ans_key, max(0.001, min(SLICE_S, deadline - start, self.reconnect_s)))
        except RELAY_ERRORS as exc:
            got, outage, unknown = None, exc, LOST_SLICES - 1  # queued or not: found nowhere, queued again
            if not self._relay_back(deadline):
                raise RelayUnavailable(exc) from exc
            clock.arena(time.monotonic(), RELAY_DOWN)
        while got is None:
            now = time.monotonic()
            try:
                give_up = now >= deadline or clock.bot_waited >= self.reconnect_s
                state, info = self._look(keys, env, give_up)
                clock.observe(now, state, info)
                if state == "removed":
                    return Outcome(
                        None,
                        "connection_error",
                        fault(FaultCode.NOT_CONNECTED, ms=_ms(clock.bot_waited)),
                        "",
                        _ms(now - start),
                        None,
                        arena_ms=_ms(clock.arena_s),
                    )
                if now >= deadline:
                    got = self.client.lpop(ans_key)  # an answer that came as the bank ended
                    if got is not None:
                        break
                    if outage is not None:  # maybe lost in the outage: not the bot's to pay
                        raise RelayUnavailable(outage)
                    # held by a gateway that is well now: the bot's own time is what it waits
                    # for, so a short stall of the arena lengthens the wait (up to GRACE_S past
                    # the bank, what the gateway still takes) instead of excusing the bot
                    own_left = bank_end + clock.arena_s - now  # the bank less the bot's own time
                    well = state == "held" and not clock.arena_now
                    if well and own_left > 0 and now < bank_end + GRACE_S:
                        deadline = min(now + own_left, bank_end + GRACE_S)
                        continue
                    self.client.lrem(self._req_key, 1, env)  # not delivered: never delivered late
                    return Outcome(
                        None,
                        "timeout",
                        fault(FaultCode.NO_ANSWER),
                        "",
                        _ms(now - start),
                        None,
                        arena="" if well and own_left <= 0 else clock.why,
                        arena_ms=_ms(clock.arena_s),
                    )
                unknown = unknown + 1 if state == "unknown" else 0
                if unknown >= LOST_SLICES:  # popped by a gateway that died before it said so
                    # (at the front, as given back, and the bot's gateways rung)
                    self.client.eval(
                        relay.PUSH_AND_RING,
                        *relay.push_args(self.bot_id, [env], front=True, ttl_s=REQUEST_LIST_TTL_S),
                    )
                    unknown = 0
                until = deadline
                if state == "queued" and not info.startswith("1"):  # the bot's own wait for a connection
                    until = min(deadline, now + max(0.0, self.reconnect_s - clock.bot_waited))
                got = self.client.blpop([ans_key], timeout=max(0.001, min(SLICE_S, until - now)))
                if got is not None:
                    got = got[1]
            except RELAY_ERRORS as exc:
                outage = exc
                if not self._relay_back(deadline):
                    raise RelayUnavailable(exc) from exc
                # Redis is back, maybe empty (restarted): a request found nowhere is queued
                # again at once, and the outage is the arena's time
                unknown = LOST_SLICES - 1
                clock.arena(time.monotonic(), RELAY_DOWN)
        now = time.monotonic()
        clock.close(now)
        return self._outcome(got, rid, now - start, bank_end - start, clock.arena_s)

    def _outcome(self, raw: bytes, rid: str, elapsed_s: float, timeout_s: float, arena_s: float = 0.0) -> Outcome:
        elapsed, arena_ms = _ms(elapsed_s), _ms(arena_s)
        relayed = relay.read_fault(raw)
        if relayed is not None:
            return Outcome(
                None,
                relayed.kind,
                relayed.why,
                safe_text(relayed.received, RECEIVED_LOG_CHARS),
                elapsed,
                None,
                arena_ms=arena_ms,
            )
        if elapsed_s - arena_s > timeout_s:
            return Outcome(
                None, "timeout", fault(FaultCode.OVER_BANK, ms=elapsed), "", elapsed, None, arena_ms=arena_ms
            )
        obj, why = relay.read_answer(raw, rid)
        if obj is None:
            return Outcome(
                None, "invalid_json", why, safe_text(raw[1:], RECEIVED_LOG_CHARS), elapsed, None, arena_ms=arena_ms
            )
        return Outcome(obj, None, None, "", elapsed, None, arena_ms=arena_ms)

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
