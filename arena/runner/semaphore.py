"""Per-endpoint concurrency cap held in Redis: a counting semaphore with leases that expire.

:class:`BotSemaphore` caps the simultaneous requests (decisions and notices) sent to one bot
**endpoint** (its normalized ``host:port``, :func:`normalize_endpoint`; Redis key
``arena:bot-sem:<digest>``, :func:`endpoint_key`) at ``limit`` (``ARENA_BOT_MAX_CONCURRENCY``,
default 4), over all matches, workers and registrations of that server. A slot is taken per
request, just before it is sent (:class:`MatchSlots`); waiters are served by priority
(:data:`NOTICE_PRIORITY` before :data:`DECISION_PRIORITY`, priority 0 after :data:`AGING_S`),
then first come, first served. A lease is the request's timeout plus :data:`LEASE_SLACK_S`.

TIME-2: the wait for a slot is NOT charged to the bot's bank. Waits are recorded per exchange
(``slot_wait_ms``, ``slot_bypassed``) and per seat (``timings.semaphore_wait_ms``,
``semaphore_max_wait_ms``, ``semaphore_bypassed``). If Redis is unreachable or no slot frees
within ``ARENA_BOT_SLOT_WAIT_S`` (default :data:`DEFAULT_MAX_WAIT_S`), the request is sent
without a slot, recorded and logged as a warning. Design: docs/operations.md, "Per-bot
concurrency cap".
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
import time
import uuid
from urllib.parse import urlsplit

import redis
from redis.commands.core import Script

from arena.leases import LUA_LEASES

log = logging.getLogger("arena.semaphore")

#: Seconds added to a lease beyond the request timeout (transport and engine work).
LEASE_SLACK_S = 5.0
#: Longest wait for a slot before the request is sent without one, seconds.
DEFAULT_MAX_WAIT_S = 120.0
#: Longest single block of a waiter before it retries (and shows it is alive), seconds.
WAKE_POLL_S = 1.0
#: Queue ranks (lower first): notices of match start and end, then decisions.
NOTICE_PRIORITY = 0
DECISION_PRIORITY = 1
#: A request waiting this long moves to the front rank of the queue (no starvation), seconds.
AGING_S = 30.0
#: A waiter that has not retried for this long is dropped from the queue (its worker died), seconds.
WAITER_STALE_S = 4.0
#: A freed slot is handed over to the next waiter only if it retried this recently (else it is
#: only woken, and takes the slot itself): a dead worker's waiter is handed at most this long
#: after its death, and then keeps the slot for its lease, seconds.
FRESH_WAITER_S = 2.0 * WAKE_POLL_S
#: First lease of a handed-over slot, seconds: :data:`EXTENDER` makes it the request's full
#: lease within milliseconds, off the request's path; a waiter that died before it could
#: keeps the slot at most this long (a worker that dies holding a slot keeps it for the
#: request's lease, up to the time bank's cap + :data:`LEASE_SLACK_S`). A worker process
#: stalled longer than this right after a hand-over (a VM paused, swapping) finds the slot
#: gone: its bot may then get one request more than its cap; the extender logs it.
HANDOVER_LEASE_S = 15.0
#: The extender gathers handed-over slots for this long before one pipeline, seconds (it runs
#: under the matches' GIL: one wake-up per slot cost them more than the lengthening itself).
EXTEND_BATCH_S = 0.1
KEY_PREFIX = "arena:bot-sem:"
WAKE_PREFIX = KEY_PREFIX + "wake:"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_endpoint(url: str) -> str:
    """The endpoint of a bot URL as ``host:port`` (module docstring): the host lower-cased
    and IDNA-encoded (no trailing dot), the default port of the scheme written out; the
    scheme, path, query and fragment are dropped, since one server answers every path of its
    port (the SDK does), so ``/``, ``/v1`` and ``/a/../b`` of one server share one cap. A URL
    that cannot be parsed is returned stripped (it gets a key of its own; its requests fail
    anyway). Different host names of one server (``localhost`` and ``127.0.0.1``, two DNS
    names) are different endpoints: the arena does not fold them by address, since unrelated
    bots behind one shared proxy address must not share a cap."""
    if url.startswith("connect:bot:"):  # a bot that dials out: an endpoint of its own
        return url.strip()
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").rstrip(".")
        try:  # an international name and its punycode form are one host
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            pass
        port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
    except ValueError:
        return url.strip()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{host}:{port}"


def endpoint_key(url: str) -> str:
    """The semaphore name of a bot URL: the first 32 hex digits of the SHA-256 of
    :func:`normalize_endpoint` (the Redis key is ``arena:bot-sem:<name>``)."""
    return hashlib.sha256(normalize_endpoint(url).encode()).hexdigest()[:32]


# Shared by both scripts: give ``token`` of holders set ``hkey`` back and wake the first
# waiters of that key's queue that the freed slots can take (one wake-up list per ticket).
_RELEASE_AND_WAKE = (
    LUA_LEASES
    + """
local function wake(hkey, now, handover)
  local limit = tonumber(redis.call('GET', hkey .. ':limit') or '0')
  if limit < 1 then return end
  local free = limit - live_leases(hkey, now)
  if free < 1 then return end
  local qkey, skey, lkey = hkey .. ':q', hkey .. ':seen', hkey .. ':lease'
  local hand = true
  for _, t in ipairs(redis.call('ZRANGE', qkey, 0, free - 1)) do
    local w = '"""
    + WAKE_PREFIX
    + r"""' .. t
    local seen = tonumber(redis.call('ZSCORE', skey, t) or '0')
    local lease = tonumber(redis.call('HGET', lkey, t) or '0')
    -- hand the slot over to a waiter seen lately (a dead worker's would keep it for a lease);
    -- from the first one not seen lately on, only wake them (queue order is kept)
    hand = hand and lease > 0 and now - seen <= """
    + repr(FRESH_WAITER_S)
    + """
    if hand then
      redis.call('ZREM', qkey, t)
      redis.call('ZREM', skey, t)
      redis.call('HDEL', lkey, t)
      redis.call('ZADD', hkey, now + math.min(lease, handover), t)
      if redis.call('ZCARD', qkey) > 0 then redis.call('RPUSH', w, '2') else redis.call('RPUSH', w, '1') end
    else
      redis.call('RPUSH', w, '0')
    end
    redis.call('PEXPIRE', w, 10000)
  end
end
local function release(hkey, token, now, handover)
  if token ~= '' and redis.call('ZREM', hkey, token) == 1 then wake(hkey, now, handover) end
end
"""
)

# KEYS: holders, queue, seen, limit, release-holders, watched (a key read when the slot is
# granted, or holders again when none is watched). ARGV: limit, lease_s, ticket,
# release-token, wait (1: stay queued when no slot is granted; 0: one try, leave no trace),
# stale_s, priority (lower first; the score is priority * 2^20 + arrival order mod 2^20,
# exact in a double for any priority below 2^32), handover_s (the first lease of a slot
# handed over by the release of ARGV[4]), watch (1: KEYS[6] is read). Returns
# {code, watched value or nil}: code 0 (not granted), 1 (granted) or 2 (granted, and other
# requests are waiting for this endpoint).
_ACQUIRE = (
    _RELEASE_AND_WAKE
    + """
local hkey, qkey, skey, lkey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local limit, lease, ticket = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local now = now_s()
local function granted(code)
  if ARGV[9] == '1' then return {code, redis.call('GET', KEYS[6])} end
  return {code, false}
end
release(KEYS[5], ARGV[4], now, tonumber(ARGV[8]))
redis.call('SET', lkey, limit, 'EX', 86400)
redis.call('ZREMRANGEBYSCORE', hkey, '-inf', now)
if redis.call('ZSCORE', hkey, ticket) then  -- handed over by a release while this waiter looked away
  redis.call('DEL', '"""
    + WAKE_PREFIX
    + r"""' .. ticket)
  redis.call('ZADD', hkey, 'XX', 'GT', now + lease, ticket)  -- its full lease
  if redis.call('ZCARD', qkey) > 0 then return granted(2) end
  return granted(1)
end
for _, t in ipairs(redis.call('ZRANGEBYSCORE', skey, '-inf', now - tonumber(ARGV[6]))) do
  redis.call('ZREM', qkey, t)
  redis.call('ZREM', skey, t)
  redis.call('HDEL', hkey .. ':lease', t)
end
local old = redis.call('ZSCORE', qkey, ticket)
if not old then
  local seq = redis.call('INCR', hkey .. ':seq') % 1048576
  redis.call('ZADD', qkey, tonumber(ARGV[7]) * 1048576 + seq, ticket)
else  -- a waiter that aged: a lower priority, its place among equals kept
  redis.call('ZADD', qkey, 'LT', tonumber(ARGV[7]) * 1048576 + tonumber(old) % 1048576, ticket)
end
local free = limit - redis.call('ZCARD', hkey)
local rank = redis.call('ZRANK', qkey, ticket)
local want = math.ceil(lease * 1000) + 60000
if free > 0 and rank < free then
  redis.call('ZREM', qkey, ticket)
  redis.call('ZREM', skey, ticket)
  redis.call('HDEL', hkey .. ':lease', ticket)
  redis.call('DEL', '"""
    + WAKE_PREFIX
    + r"""' .. ticket)
  redis.call('ZADD', hkey, now + lease, ticket)
  for _, k in ipairs({hkey, qkey, skey, hkey .. ':seq', hkey .. ':lease'}) do
    if redis.call('PTTL', k) < want then redis.call('PEXPIRE', k, want) end
  end
  if redis.call('ZCARD', qkey) > 0 then return granted(2) end
  return granted(1)
end
if ARGV[5] == '1' then
  redis.call('ZADD', skey, now, ticket)
  redis.call('HSET', hkey .. ':lease', ticket, lease)
  for _, k in ipairs({qkey, skey, hkey .. ':seq', hkey .. ':lease'}) do
    if redis.call('PTTL', k) < want then redis.call('PEXPIRE', k, want) end
  end
else
  redis.call('ZREM', qkey, ticket)
end
return {0, false}
"""
)

# KEYS: holders, queue, seen. ARGV: token, handover_s. Gives the slot (or the queue place) back.
_RELEASE = (
    _RELEASE_AND_WAKE
    + """
local now = now_s()
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[1] .. ':lease', ARGV[1])
release(KEYS[1], ARGV[1], now, tonumber(ARGV[2]))
return 1
"""
)


# KEYS: holders. ARGV: ticket, lease_s. A handed-over slot's full lease (only if still held).
_EXTEND = (
    LUA_LEASES
    + """
local now = now_s()
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], 'XX', 'GT', now + tonumber(ARGV[2]), ARGV[1])
  return 1
end
return 0
"""
)


#: A slot to lengthen: (connection pool, holders key, ticket, lease seconds, monotonic time queued).
_Extension = tuple[redis.ConnectionPool, str, str, float, float]


class LeaseExtender:
    """One daemon thread per process giving each handed-over slot its full lease (module
    docstring). A release hands the freed slot to the next waiter with a short lease
    (:data:`HANDOVER_LEASE_S`, so a dead waiter cannot keep it long); the waiter sends its
    request at once and leaves the lengthening to this thread, which gathers what comes
    within :data:`EXTEND_BATCH_S` into one pipeline per Redis connection pool. A failure is
    logged (the slot then ends after the short lease: a request longer than that may share
    its bot's cap), and so is a slot that had already ended when its lengthening ran
    (``lost``)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Extension] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._clients: dict[int, tuple[redis.Redis, Script]] = {}
        #: slots lengthened so far, and slots already ended when their turn came (for tests
        #: and monitoring)
        self.extended = 0
        self.lost = 0
        self._submitted = 0
        self._processed = 0

    def extend(self, client: redis.Redis, key: str, ticket: str, lease_s: float) -> None:
        """Give ``ticket`` of holders ``key`` a lease of ``lease_s`` seconds from now, soon,
        on this object's thread (through a client of ``client``'s connection pool: a match's
        own client is not shared between threads). Never raises, never blocks."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="arena-slot-leases", daemon=True)
                self._thread.start()
            self._submitted += 1
        self._queue.put((client.connection_pool, key, ticket, float(lease_s), time.monotonic()))

    def drain(self, timeout_s: float = 10.0) -> bool:
        """Wait until every slot submitted so far was handled (True), at most ``timeout_s``
        seconds (False). For tests and a tidy shutdown."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if self._processed >= self._submitted:
                    return True
            time.sleep(0.01)
        return False

    def _client(self, pool: redis.ConnectionPool) -> tuple[redis.Redis, Script]:
        """This thread's client of ``pool`` and its registered :data:`_EXTEND` script."""
        got = self._clients.get(id(pool))
        if got is None:
            client = redis.Redis(connection_pool=pool)
            got = self._clients[id(pool)] = (client, client.register_script(_EXTEND))
        return got

    def _run(self) -> None:
        while True:
            items = [self._queue.get()]
            time.sleep(EXTEND_BATCH_S)  # gather what comes meanwhile: one pipeline, one wake-up
            while True:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            by_pool: dict[int, list[_Extension]] = {}
            for it in items:
                by_pool.setdefault(id(it[0]), []).append(it)
            for group in by_pool.values():
                client, script = self._client(group[0][0])
                try:
                    pipe = client.pipeline(transaction=False)
                    for _pool, key, ticket, lease_s, _at in group:
                        script(keys=[key], args=[ticket, lease_s], client=pipe)
                    done = pipe.execute()
                    # not held any more: given back already (a quick answer, the usual case),
                    # or, if its first lease may have run out meanwhile, lost
                    late = time.monotonic() - HANDOVER_LEASE_S
                    lost = [it for it, ok in zip(group, done) if not ok and it[4] <= late]
                    self.extended += sum(1 for ok in done if ok)
                    if lost:
                        self.lost += len(lost)
                        log.warning(
                            "%d handed-over slots had ended before their lease was lengthened "
                            "(this process stalled over %.0f s?): those bots may have had one "
                            "request more than their cap",
                            len(lost),
                            HANDOVER_LEASE_S,
                        )
                except Exception as exc:  # Redis, or a pool closed under it: the thread lives on
                    log.warning(
                        "%d handed-over slots keep their first lease of %.0f s (%s: %s)",
                        len(group),
                        HANDOVER_LEASE_S,
                        type(exc).__name__,
                        exc,
                    )
            with self._lock:
                self._processed += len(items)


#: The process's :class:`LeaseExtender`.
EXTENDER = LeaseExtender()


class BotSemaphore:
    """A Redis counting semaphore for one bot endpoint (see the module docstring).

    Args:
        client: a ``redis.Redis`` client.
        name: what is limited (the key is ``arena:bot-sem:<name>``); :meth:`for_endpoint`
            names it after a bot URL.
        limit: most holders at once (>= 1).
        max_wait_s: longest wait in :meth:`acquire`, seconds.

    Raises:
        ValueError: ``limit`` < 1.
    """

    def __init__(self, client: redis.Redis, name: str, limit: int, max_wait_s: float = DEFAULT_MAX_WAIT_S):
        if limit < 1:
            raise ValueError("a semaphore limit must be >= 1")
        self.client = client
        self.key = KEY_PREFIX + str(name)
        self.limit = limit
        self.max_wait_s = max_wait_s
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        #: True when the latest slot taken had other requests waiting behind it: the holder
        #: gives it back as soon as its answer comes (:class:`CappedHttpPlayer`)
        self.contended = False
        #: The value of :meth:`acquire`'s ``watch`` key when its slot was granted (None: no
        #: such key, none watched, or no slot taken)
        self.watched: bytes | str | None = None

    @classmethod
    def for_endpoint(
        cls, client: redis.Redis, url: str, limit: int, max_wait_s: float = DEFAULT_MAX_WAIT_S
    ) -> BotSemaphore:
        """The semaphore shared by every registration of the endpoint of ``url``
        (:func:`endpoint_key`)."""
        return cls(client, endpoint_key(url), limit, max_wait_s)

    def _call(
        self,
        ticket: str,
        lease_s: float,
        release: tuple[str, str] | None,
        wait: bool,
        priority: int = 0,
        watch: str | None = None,
    ) -> bool:
        rkey, rtoken = release if release else (self.key, "")
        code, self.watched = self._acquire(
            keys=[self.key, self.key + ":q", self.key + ":seen", self.key + ":limit", rkey, watch or self.key],
            args=[
                self.limit,
                float(lease_s),
                ticket,
                rtoken,
                "1" if wait else "0",
                WAITER_STALE_S,
                max(0, min(int(priority), 2**32 - 1)),
                HANDOVER_LEASE_S,
                "1" if watch else "0",
            ],
        )
        self.contended = int(code) == 2
        return int(code) >= 1

    def try_acquire(self, lease_s: float, release: tuple[str, str] | None = None) -> str | None:
        """One attempt that never queues: a token if a slot was free for ``lease_s`` seconds
        and no request was waiting ahead, else None. ``release`` = ``(key, token)`` of a
        slot given back first, in the same script call.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        ticket = uuid.uuid4().hex  # ranked behind every waiter: a try never jumps the queue
        return ticket if self._call(ticket, lease_s, release, wait=False, priority=2**32 - 1) else None

    def acquire(
        self, lease_s: float, release: tuple[str, str] | None = None, priority: int = 0, watch: str | None = None
    ) -> tuple[str | None, float]:
        """Wait in the queue for a slot: returns ``(token or None, seconds waited)`` (0.0
        when the first attempt got one); ``release`` as in :meth:`try_acquire` (given back by
        the first attempt, so a waiter holds nothing). ``priority``: the request's rank (0 or
        more; lower is served first, equal ones first come, first served). ``watch``: a Redis
        key read once the slot is held (in the same script call when it is granted at once),
        its value left in :attr:`watched` (a request's check before it is sent, without a
        round trip of its own: :mod:`arena.withdrawals`).

        None means no slot was taken (Redis down, or ``max_wait_s`` passed): the caller sends
        the request anyway and records the bypass (module docstring); :attr:`watched` is then
        read on its own, None if Redis cannot answer. Never raises.
        """
        start = time.monotonic()
        ticket = uuid.uuid4().hex
        wake = WAKE_PREFIX + ticket
        self.watched = None
        try:
            if self._call(ticket, lease_s, release, wait=True, priority=priority, watch=watch):
                return ticket, 0.0  # a slot free at once is no wait (the script call is not one)
            while True:
                left = self.max_wait_s - (time.monotonic() - start)
                if left <= 0:
                    self._leave(ticket)
                    log.warning("no slot of %s within %.0f s: request sent without a slot", self.key, self.max_wait_s)
                    self._read_watched(watch)
                    return None, time.monotonic() - start
                # blocks until a release wakes this ticket (or WAKE_POLL_S passes: a lease
                # that ended wakes no one); Redis wants a timeout of at least 10 ms
                woken = self.client.blpop([wake], timeout=max(0.01, min(WAKE_POLL_S, left)))
                if woken is not None and woken[1] in (b"1", b"2"):  # the slot was handed over
                    self.contended = woken[1] == b"2"
                    EXTENDER.extend(self.client, self.key, ticket, lease_s)
                    self._read_watched(watch)
                    return ticket, time.monotonic() - start
                aged = time.monotonic() - start >= AGING_S
                if self._call(ticket, lease_s, None, wait=True, priority=0 if aged else priority, watch=watch):
                    return ticket, time.monotonic() - start
        except redis.RedisError as exc:
            log.warning("bot semaphore %s unavailable (%s): request sent without a slot", self.key, exc)
            self.watched = None
            return None, time.monotonic() - start

    def _read_watched(self, watch: str | None) -> None:
        """:attr:`watched` read on its own (a slot handed over, or none taken); None on a Redis error."""
        if watch is None:
            return
        try:
            self.watched = self.client.get(watch)
        except redis.RedisError:
            self.watched = None

    def _leave(self, ticket: str) -> None:
        try:
            self.release(ticket)
            self.client.delete(WAKE_PREFIX + ticket)
        except redis.RedisError:
            pass  # the queue drops a silent waiter after WAITER_STALE_S

    def release(self, token: str | None) -> None:
        """Give a slot back and wake the next waiter(s) (None: nothing to do). Never raises."""
        if token is None:
            return
        try:
            self._release(keys=[self.key, self.key + ":q", self.key + ":seen"], args=[token, HANDOVER_LEASE_S])
        except redis.RedisError as exc:  # the lease expires by itself
            log.warning("bot semaphore %s release failed (%s): the lease will expire", self.key, exc)

    def holders(self) -> int:
        """Holders whose lease has not ended (for tests and monitoring)."""
        now = self.client.time()
        return int(self.client.zcount(self.key, now[0] + now[1] / 1e6, "+inf"))

    def waiting(self) -> int:
        """Requests waiting in the queue (for tests and monitoring)."""
        return int(self.client.zcard(self.key + ":q"))


class MatchSlots:
    """The slot a match holds between two of its requests (at most one; module docstring).

    A request's slot is not given back by a call of its own when the answer comes: it is
    given back by the script call that takes the slot of the match's next request (whoever
    that request goes to), or by :meth:`flush` when the match ends. So each request costs
    one Redis round trip, and the slot outlives its request only by the arena's own work
    between two requests. Not thread-safe (one per match; a match runs on one thread).
    """

    def __init__(self) -> None:
        self._pending: tuple[BotSemaphore, str] | None = None

    def take_release(self) -> tuple[str, str] | None:
        """The ``(key, token)`` to give back with the next acquire (and forget it)."""
        pending, self._pending = self._pending, None
        return (pending[0].key, pending[1]) if pending else None

    def defer(self, semaphore: BotSemaphore, token: str) -> None:
        """Keep ``token`` of ``semaphore`` until the next acquire or :meth:`flush`."""
        if self._pending is not None:  # never two at once; give the older one back now
            self._pending[0].release(self._pending[1])
        self._pending = (semaphore, token)

    def flush(self) -> None:
        """Give the held slot back (the match ends). Never raises."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending[0].release(pending[1])
