"""The Redis side of bots that dial out: keys, envelopes and presence shared by the workers
(:mod:`arena.runner.connected`), the gateways (``daifugo_arena/gateway/``) and the pages.

Keys (``<bot>``: the bot id; ``<gw>``: a gateway's id; ``<rid>``: a request id):

================================ =================================================================
``arena:gw:req:<bot>``           list of request envelopes waiting for a connection of the bot
``arena:gw:ans:<rid>``           list receiving the one answer (or fault) of a request; expires
``arena:gw:held:<rid>``          the gateway that took the request, set as it pops it
                                 (:data:`POP_AND_HOLD`; expires at its deadline)
``arena:gw:alive:<gw>``          present while the gateway lives (:data:`ALIVE_TTL_S`); its value is
                                 the gateway's stall: milliseconds its event loop was late in
                                 the last two seconds (:data:`ALIVE_BEAT`)
``arena:gw:gateways``            sorted set: every gateway, scored by its last beat (Redis time)
``arena:gw:dropped:<bot>``       Redis time the arena last failed the bot's connections (a gateway
                                 died, stopped or none ran): the bot is not charged for being
                                 unconnected until :data:`REJOIN_S` after it (docs/protocol.md,
                                 "Whose fault is a wait")
``arena:gw:outage``              Redis time the arena was last seen with no gateway alive (by a
                                 worker looking at a queued request, or by the beat that ended
                                 the outage, :data:`ALIVE_BEAT`): a bot connected before it
                                 (``back``) is not charged for being unconnected until
                                 :data:`REJOIN_S` after it, unless it connected again since
``arena:gw:back:<bot>``          Redis time a connection of the bot was last welcomed, and by which
                                 gateway (:data:`MARK_BACK`, lives :data:`BACK_TTL_S`): the outage
                                 covers a bot welcomed before it and not since (reconnecting); a
                                 bot never welcomed is not reconnecting, one back since is back
                                 (so is one welcomed by another gateway since a dead or late
                                 gateway's last beat, or since its dropped mark)
``arena:gw:wake:<gw>``           the gateway's doorbell: ids of bots whose request list got requests
                                 (:data:`PUSH_AND_RING`); expires :data:`WAKE_TTL_S` after a push
``arena:gw:conns:<bot>``         sorted set: the bot's connections (member ``<gw>|<conn>|<since>``,
                                 score: the end of its lease, Redis time, :mod:`arena.leases`)
``arena:gw:acct:<account>``      the same, per account (the per-account cap)
``arena:gw:story:<bot>``         hash: what last happened to a connection of the bot, and its last
                                 keep-alive ping (:class:`Story`, written by the gateways, read
                                 by the check); expires :data:`STORY_TTL_S` after the last write
================================ =================================================================

Envelope (a list item): ``<rid>|<deadline ms, Unix>|<kind>|<frame>`` where ``frame`` is the
WebSocket text frame itself (:func:`bots_sdk.wire.frame`); the gateway sends it unchanged.

Answer (a list item of ``arena:gw:ans:<rid>``): ``R<frame>`` (the bot's answer frame as it sent
it, unparsed: :func:`answer_item`), ``A<body JSON>`` (from a gateway of an earlier version) or
``F<fault JSON {"kind","code","params","detail","received"}>`` (:func:`fault_item`: the fault a
connection's frames earned, as codes with parameters of :mod:`arena.faults`; ``detail`` its
English text, for a worker of an earlier version); read by :func:`read_fault` and
:func:`read_answer`.

Whoever pushes onto a request list (a worker asking, a worker queueing again a request a dead
gateway held, a gateway giving back the requests of a closed connection) rings, in the same
script, every gateway holding a live connection of the bot (:data:`PUSH_AND_RING`): a gateway
blocks on its own doorbell list only, so its cost per request does not grow with the number
of bots it holds. Doorbells of bots it does not hold are ignored; a gateway also looks at every
held bot's list now and then (``daifugo_arena.gateway.config.SWEEP_S``), and at a bot's list when its first
connection opens.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any, NamedTuple

import orjson
import redis

from arena.faults import Fault, FaultCode, fault, of_record
from arena.safejson import parse_answer

PREFIX = "arena:gw:"
#: Seconds a gateway's alive key lasts without a refresh (refreshed every second).
ALIVE_TTL_S = 3.0
#: Seconds a connection's presence lease lasts without a refresh (refreshed every LEASE_S / 3).
LEASE_S = 30.0
#: Seconds an answer waits, unread, before it expires (a worker that gave up never reads it).
ANSWER_TTL_S = 60
#: Seconds a gateway's doorbell list lives after its last push (a dead gateway's vanishes).
WAKE_TTL_S = 60
#: Seconds after the arena last failed a bot's connections during which the bot's absence is
#: still the arena's (time to reconnect: the SDK's longest backoff is 10 s).
REJOIN_S = 15.0
#: Seconds a ``dropped`` mark lives.
DROPPED_TTL_S = 600
#: Seconds a ``back`` mark lives (a connection welcomed longer ago than that, and never since,
#: is not known to have been connected when an outage came).
BACK_TTL_S = 7 * 24 * 3600
#: The set of every gateway and its last beat.
GATEWAYS_KEY = PREFIX + "gateways"
#: When the arena was last seen with no gateway alive (module docstring).
OUTAGE_KEY = PREFIX + "outage"

#: Lua: ``newest_beat_age(gateways_key, now)``: seconds since the newest beat in the gateways'
#: set (:data:`GATEWAYS_KEY`), nil when the set is empty. Older than the alive key's time, or
#: nil: no gateway is alive (the one definition of an outage, for the beat and the workers).
LUA_NEWEST_BEAT_AGE = """
local function newest_beat_age(gateways_key, now)
  local newest = redis.call('ZREVRANGE', gateways_key, 0, 0, 'WITHSCORES')
  if #newest == 0 then return nil end
  return now - tonumber(newest[2])
end
"""

#: Lua: a gateway's beat: ``SET alive:<gw> <stall ms> PX <ttl ms>`` (KEYS[1]; ARGV[1], ARGV[2])
#: and its score in :data:`GATEWAYS_KEY` (KEYS[2], member ARGV[3]) set to Redis time (seconds,
#: to the microsecond: the workers take a gateway whose beat is 1.5 s old for late,
#: :data:`arena.runner.connected.LATE_BEAT_MS`); gateways silent for a minute are dropped from
#: the set. A beat that finds no gateway's beat in the set younger than the alive key's time
#: ends an outage of every gateway (this one returning, or the first): it sets
#: :data:`OUTAGE_KEY` (KEYS[3], lives ARGV[4] seconds) to now, so every bot connected before it
#: has :data:`REJOIN_S` to connect again, whether or not a request of it waited during the
#: outage.
ALIVE_BEAT = (
    LUA_NEWEST_BEAT_AGE
    + """
local t = redis.call('TIME')
if KEYS[3] then
  local age = newest_beat_age(KEYS[2], tonumber(t[1]) + tonumber(t[2]) / 1000000)
  if not age or age > tonumber(ARGV[2]) / 1000 then
    redis.call('SET', KEYS[3], string.format('%d.%06d', t[1], t[2]), 'EX', ARGV[4])
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], string.format('%d.%06d', t[1], t[2]), ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', tonumber(t[1]) - 60)
return 1
"""
)

#: Lua: ``ring(conns_key, wake_prefix, bot_id)`` pushes ``bot_id`` onto the doorbell list of each
#: gateway with a live lease in the bot's presence set (once per gateway); returns how many.
LUA_RING = """
local function ring(conns_key, wake_prefix, bot_id)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
  local rung, n = {}, 0
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', conns_key, '(' .. now, '+inf')) do
    local gw = string.match(m, '^[^|]+')
    if gw and not rung[gw] then
      rung[gw] = true
      n = n + 1
      redis.call('RPUSH', wake_prefix .. gw, bot_id)
      redis.call('EXPIRE', wake_prefix .. gw, WAKE_TTL_S)
    end
  end
  return n
end
""".replace("WAKE_TTL_S", str(WAKE_TTL_S))

#: Lua (EVAL, so a pipeline needs no script check): push ARGV[5..] onto the request list KEYS[1]
#: (ARGV[1] ``R``: at its back; ``L``: at its front, in the order given), set its time to live
#: to ARGV[2] seconds (``0``: leave it), then ring the gateways of the bot ARGV[4] (its presence
#: set KEYS[2], doorbell prefix ARGV[3]). Returns how many gateways were rung.
PUSH_AND_RING = (
    LUA_RING
    + """
if ARGV[1] == 'L' then
  for i = #ARGV, 5, -1 do redis.call('LPUSH', KEYS[1], ARGV[i]) end
else
  for i = 5, #ARGV do redis.call('RPUSH', KEYS[1], ARGV[i]) end
end
if ARGV[2] ~= '0' then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return ring(KEYS[2], ARGV[3], ARGV[4])
"""
)


def request_key(bot_id: int | str) -> str:
    return f"{PREFIX}req:{bot_id}"


def answer_key(rid: str) -> str:
    return f"{PREFIX}ans:{rid}"


def held_key(rid: str) -> str:
    return f"{PREFIX}held:{rid}"


def alive_key(gateway_id: str) -> str:
    return f"{PREFIX}alive:{gateway_id}"


def wake_key(gateway_id: str) -> str:
    return f"{PREFIX}wake:{gateway_id}"


def conns_key(bot_id: int | str) -> str:
    return f"{PREFIX}conns:{bot_id}"


def account_key(account_id: int | str) -> str:
    return f"{PREFIX}acct:{account_id}"


def story_key(bot_id: int | str) -> str:
    return f"{PREFIX}story:{bot_id}"


#: Seconds a bot's story lasts after the last event written to it.
STORY_TTL_S = 3600
#: The events of a story: a connection that claimed the bot was refused (a wrong proof, a cap),
#: was welcomed, or ended after its welcome.
STORY_EVENTS = ("refused", "welcomed", "closed")


class Story(NamedTuple):
    """What last happened to a connection of a bot (``arena:gw:story:<bot>``), as the gateways
    wrote it: ``event`` (one of :data:`STORY_EVENTS`) at ``at`` (Unix seconds), with ``code``
    (the close code: sent by the gateway for ``refused``, for ``closed`` the first one sent by
    either side; None when the connection dropped without one) and ``by`` (``"bot"`` or
    ``"gateway"``: who closed first; ``""`` when unknown); ``pinged``: the Unix seconds of the
    bot's last keep-alive ping seen on any connection (None: none in :data:`STORY_TTL_S`)."""

    event: str | None
    at: float | None
    code: int | None
    by: str
    pinged: float | None


def _number(raw: Any, kind: type[float] | type[int]) -> Any:
    try:
        return kind(_text(raw)) if raw not in (None, b"", "") else None
    except ValueError:
        return None


def record_story(pipe: Any, bot_id: int, event: str, *, code: int | None = None, by: str = "") -> None:
    """Queue on ``pipe`` (a Redis pipeline or client) the writes of ``event`` (:class:`Story`)."""
    key = story_key(bot_id)
    pipe.hset(key, mapping={"event": event, "at": f"{time.time():.3f}", "code": "" if code is None else code, "by": by})
    pipe.expire(key, STORY_TTL_S)


def record_ping(pipe: Any, bot_id: int, when: float) -> None:
    """Queue on ``pipe`` the write of a keep-alive ping of bot ``bot_id`` seen at ``when`` (Unix s)."""
    key = story_key(bot_id)
    pipe.hset(key, "pinged", f"{when:.3f}")
    pipe.expire(key, STORY_TTL_S)


def story(client: redis.Redis, bot_id: int) -> Story:
    """The story of bot ``bot_id`` (all None when nothing was written in :data:`STORY_TTL_S`).

    Raises:
        redis.RedisError: Redis is unreachable.
    """
    raw = {_text(k): v for k, v in client.hgetall(story_key(bot_id)).items()}
    event = _text(raw["event"]) if "event" in raw else None
    return Story(
        event if event in STORY_EVENTS else None,
        _number(raw.get("at"), float),
        _number(raw.get("code"), int),
        _text(raw.get("by", b"")),
        _number(raw.get("pinged"), float),
    )


def dropped_key(bot_id: int | str) -> str:
    return f"{PREFIX}dropped:{bot_id}"


def back_key(bot_id: int | str) -> str:
    return f"{PREFIX}back:{bot_id}"


#: Lua: a connection of the bot was welcomed by gateway ARGV[2] (optional): ``SET back:<bot>``
#: (KEYS[1]) to ``<Redis time, seconds to the microsecond>|<gateway>``, living ARGV[1] seconds
#: (:data:`BACK_TTL_S`). An outage before it no longer covers the bot, nor does a lease on
#: another gateway that died or is late since before it (the bot is back: its absence is its
#: own, FAULT-1); an outage after it does (the bot was connected: it is reconnecting).
MARK_BACK = """
local t = redis.call('TIME')
redis.call('SET', KEYS[1], string.format('%d.%06d|%s', t[1], t[2], ARGV[2] or ''), 'EX', ARGV[1])
"""


def mark_dropped(pipe: Any, bot_ids: list[int] | list[str], now: float) -> None:
    """Queue on ``pipe`` (a Redis pipeline or client) the marks that the arena failed the
    connections of ``bot_ids`` at ``now`` (Unix seconds)."""
    for b in bot_ids:
        pipe.set(dropped_key(b), f"{now:.3f}", ex=DROPPED_TTL_S)


#: Milliseconds a held key outlives its request's deadline.
HOLD_GRACE_MS = 2000

#: Lua: pop up to ARGV[2] requests from each request list of KEYS and mark each one taken by
#: the gateway ARGV[1] (its held key, prefix ARGV[3], lives until the request's deadline and
#: ARGV[4] milliseconds; not for notices), in one step: a request is never popped and not held.
#: Returns ``{i, {envelope, ...}, ...}`` for each non-empty list (``i``: its position in KEYS).
POP_AND_HOLD = """
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local items = redis.call('LPOP', key, ARGV[2])
  if items then
    for _, env in ipairs(items) do
      local rid, deadline, kind = string.match(env, '^([^|]+)|(%d+)|([^|]*)|')
      if rid and kind ~= 'notice' then
        local ttl = math.max(1, tonumber(deadline) - now_ms) + tonumber(ARGV[4])
        redis.call('SET', ARGV[3] .. rid, ARGV[1], 'PX', ttl)
      end
    end
    out[#out + 1] = i
    out[#out + 1] = items
  end
end
return out
"""


def wake_prefix() -> str:
    """The doorbell keys' prefix (``wake_key(gw) == wake_prefix() + gw``)."""
    return f"{PREFIX}wake:"


def push_args(bot_id: int, items: list[bytes] | list[str], *, front: bool, ttl_s: int = 0) -> list[Any]:
    """The ``EVAL`` arguments of :data:`PUSH_AND_RING` for ``items`` onto ``bot_id``'s request
    list: ``client.eval(PUSH_AND_RING, *push_args(...))`` (or on a pipeline)."""
    return [2, request_key(bot_id), conns_key(bot_id), "L" if front else "R", ttl_s, wake_prefix(), bot_id, *items]


def envelope(rid: str, deadline_ms: int, kind: str, frame: str) -> str:
    """A request list item (module docstring)."""
    return f"{rid}|{deadline_ms}|{kind}|{frame}"


class Envelope(NamedTuple):
    rid: str
    deadline_ms: int
    kind: str
    frame: str


def parse_envelope(raw: bytes | str) -> Envelope | None:
    """The parts of a request list item, or None when it is not one."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    parts = text.split("|", 3)
    if len(parts) != 4 or not parts[1].isdigit():
        return None
    return Envelope(parts[0], int(parts[1]), parts[2], parts[3])


#: The tags of an answer list item (module docstring).
ANSWER_FRAME, ANSWER_BODY, ANSWER_FAULT = b"R", b"A", b"F"


def answer_item(frame: str) -> bytes:
    """The answer list item of a bot's answer frame, as it sent it (lone surrogates kept: the
    reader's strict parse refuses them)."""
    return ANSWER_FRAME + frame.encode("utf-8", "surrogatepass")


def fault_item(kind: str, why: Fault, received: str = "") -> bytes:
    """The answer list item of a fault charged to the request (``kind``: a fault kind of
    :mod:`arena.matchlog`; ``why``: its code and parameters; ``received``: what the bot sent,
    if anything)."""
    body = {"kind": kind, **why.fields(), "detail": why.text(), "received": received}
    return ANSWER_FAULT + json.dumps(body, ensure_ascii=False).encode("utf-8", "replace")


class RelayFault(NamedTuple):
    kind: str
    why: Fault
    received: str


def read_fault(raw: bytes) -> RelayFault | None:
    """The fault of an answer list item (:func:`fault_item`), or None when it is an answer. A
    gateway of an earlier version sends no code: its English detail is kept as it is (code
    ``relayed``); a broken item is the arena's ``connection_error`` ``broken_relayed_fault``."""
    if raw[:1] != ANSWER_FAULT:
        return None
    try:
        f = orjson.loads(raw[1:])
        kind, received = str(f["kind"]), str(f.get("received", ""))
    except (ValueError, KeyError, TypeError, AttributeError):
        return RelayFault("connection_error", fault(FaultCode.BROKEN_RELAYED_FAULT), "")
    why = of_record(f)
    if why is None:  # an earlier gateway: its English words, as they are
        why = fault(FaultCode.RELAYED, detail=str(f.get("detail", "")))
    return RelayFault(kind, why, received)


def read_answer(raw: bytes, rid: str) -> tuple[dict[str, Any] | None, Fault | None]:
    """The action of an answer list item that is not a fault: ``R<frame>`` (the bot's answer
    frame, parsed strictly here: its ``id`` must be ``rid`` and its ``body`` an object) or
    ``A<body>``; ``(None, why)`` when it is not a strict JSON object answering ``rid``."""
    tag, payload = raw[:1], raw[1:]
    if tag != ANSWER_FRAME:
        return parse_answer(payload)
    frame, why = parse_answer(payload, wrapped=True)
    if frame is None:
        return None, why
    if frame.get("id") != rid:
        return None, fault(FaultCode.FRAME_ID_MISMATCH)
    body = frame.get("body")
    if not isinstance(body, dict):
        return None, fault(FaultCode.FRAME_BODY_NOT_OBJECT)
    return body, None


def member(gateway_id: str, connection_id: str, since: float) -> str:
    """A presence member: gateway, connection and its start (Unix seconds)."""
    return f"{gateway_id}|{connection_id}|{since:.3f}"


class Presence(NamedTuple):
    """A bot's live connections: how many, and the Unix seconds the oldest one opened (None: none)."""

    connections: int
    since: float | None

    @property
    def connected(self) -> bool:
        return self.connections > 0

    def as_dict(self) -> dict[str, Any]:
        """``{"connected": bool, "connections": int, "since": ISO 8601 UTC | None}``."""
        since = datetime.fromtimestamp(self.since, UTC).isoformat() if self.since is not None else None
        return {"connected": self.connected, "connections": self.connections, "since": since}


OFFLINE = Presence(0, None)


def presence(client: redis.Redis, bot_ids: list[int]) -> dict[int, Presence]:
    """The presence of each bot of ``bot_ids`` (one round trip).

    Raises:
        redis.RedisError: Redis is unreachable.
    """
    if not bot_ids:
        return {}
    now = time.time()
    pipe = client.pipeline(transaction=False)
    pipe.time()
    for b in bot_ids:
        pipe.zrange(conns_key(b), 0, -1, withscores=True)
    res = pipe.execute()
    rt = res[0]
    now = rt[0] + rt[1] / 1e6
    out: dict[int, Presence] = {}
    for b, rows in zip(bot_ids, res[1:]):
        live = [m.decode() if isinstance(m, bytes) else m for m, score in rows if score > now]
        sinces = []
        for m in live:
            try:
                sinces.append(float(m.rsplit("|", 1)[1]))
            except (IndexError, ValueError):
                pass
        out[b] = Presence(len(live), min(sinces) if sinces else None)
    return out


#: Seconds past its deadline a request envelope stays in a request list before the reaper
#: drops it (its worker gave up at the deadline; the gateway drops it too when it pops it).
STALE_AFTER_S = 60.0
#: Seconds a connection must have been open before the reaper drops its presence for a dead
#: gateway (a gateway writes its alive key before it takes connections).
DEAD_GATEWAY_GRACE_S = 10.0
#: Keys per SCAN step of :func:`sweep`.
SCAN_COUNT = 1000


class Sweep(NamedTuple):
    """What :func:`sweep` saw and did.

    ``gateways``: live gateway id -> connections it holds (presence members); ``presence``:
    members dropped (lease ended, or their gateway is dead); ``stale``: request envelopes
    dropped (over :data:`STALE_AFTER_S` past their deadline); ``wake``: wake-up lists of dead
    gateways deleted."""

    gateways: dict[str, int]
    presence: int
    stale: int
    wake: int

    def __str__(self) -> str:
        held = sum(self.gateways.values())
        return (
            f"gateways: {len(self.gateways)} live {sorted(self.gateways)} holding {held} connection(s); "
            f"dropped {self.presence} presence lease(s), {self.stale} stale request(s), "
            f"{self.wake} wake-up list(s) of dead gateways"
        )


def _text(raw: bytes | str) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


def sweep(client: redis.Redis) -> Sweep:
    """The reaper's pass over the keys of bots that dial out (docs/operations.md, "Gateways").

    Every key involved also expires by itself (leases, request lists after
    ``REQUEST_LIST_TTL_S``); this only makes it sooner and says what runs:

    * presence (``conns:<bot>``, ``acct:<account>``): drops members whose lease ended, and
      members of gateways whose alive key is gone (a killed gateway's connections otherwise
      count against the caps, and show the bot connected, until their 30 s leases end);
    * request lists (``req:<bot>``): drops envelopes more than :data:`STALE_AFTER_S` past their
      deadline (left by a worker that died, or notices for a bot that never came back);
    * wake-up lists (``wake:<gw>``) of gateways whose alive key is gone (they have no TTL).

    Raises:
        redis.RedisError: Redis cannot be read.
    """
    secs, micros = client.time()
    now = float(secs) + float(micros) / 1e6
    alive_prefix = PREFIX + "alive:"
    gateways = {_text(k)[len(alive_prefix) :]: 0 for k in client.scan_iter(alive_prefix + "*", count=SCAN_COUNT)}
    presence = stale = wake = 0
    for pattern in (conns_key("*"), account_key("*")):
        counting = pattern == conns_key("*")
        for key in client.scan_iter(pattern, count=SCAN_COUNT):
            drop: list[Any] = []
            dead = False
            rows: list[Any] = list(client.zrange(key, 0, -1, withscores=True))
            for raw, score in rows:
                m = _text(raw)
                gw, _, rest = m.partition("|")
                try:
                    since = float(rest.rsplit("|", 1)[1])
                except (IndexError, ValueError):
                    since = 0.0
                if gw not in gateways and float(score) > now and since < now - DEAD_GATEWAY_GRACE_S:
                    drop.append(raw)
                    dead = True
                elif float(score) <= now:
                    drop.append(raw)
                elif counting and gw in gateways:
                    gateways[gw] += 1
            if drop:
                if counting and dead:  # the arena dropped these connections, not the bot
                    mark_dropped(client, [_text(key)[len(conns_key("")) :]], now)
                presence += int(client.zrem(key, *drop))
    for key in client.scan_iter(request_key("*"), count=SCAN_COUNT):
        items: list[Any] = list(client.lrange(key, 0, -1))
        for raw in items:
            env = parse_envelope(raw)
            if env is None or env.deadline_ms < (now - STALE_AFTER_S) * 1000:
                stale += int(client.lrem(key, 1, raw))
    wake_prefix = PREFIX + "wake:"
    for key in client.scan_iter(wake_prefix + "*", count=SCAN_COUNT):
        if _text(key)[len(wake_prefix) :] not in gateways:
            wake += int(client.delete(key))
    return Sweep(gateways, presence, stale, wake)
