"""Per-endpoint concurrency cap held in Redis: a counting semaphore with leases that expire.

One bot endpoint may be seated in many matches running at once on many worker processes,
and the same endpoint may be registered by several bots. :class:`BotSemaphore` caps the
simultaneous requests (decisions and notices) sent to one **endpoint** at ``limit``
(``ARENA_BOT_MAX_CONCURRENCY``, default 4), so one bot's slowness under load does not
distort the timing of the other matches it plays, and a server registered 64 times still
gets at most ``limit`` requests at once.

Design (a sorted-set semaphore, one Lua script per request, atomic in Redis):

* key ``arena:bot-sem:<endpoint digest>`` (:func:`endpoint_key`): the SHA-256 of the
  normalized ``scheme://host:port/path`` of the bot URL (host lower-cased, default port
  made explicit, ``.``/``..``/repeated and trailing slashes folded, query and fragment
  dropped), so every registration of the same endpoint shares one cap;
* the key is a sorted set; each holder is a member (a random token) whose score is its
  lease end, in Redis server time (seconds, ``TIME``), so clocks of different worker
  machines never matter;
* acquire = drop expired members, then add the token if fewer than ``limit`` remain;
* a slot is taken **per request**, just before it is sent, and given back when the match
  sends its next request (the same script call: release the previous slot, take the next,
  :class:`MatchSlots`) or when the match ends. So a match holds at most one slot at any
  moment and never holds a slot of a bot while it waits for another: a match waiting for
  a busy bot idles none of its other bots (they serve other matches meanwhile), and the cost
  is one Redis round trip per request;
* a lease is the request's timeout (the seat's remaining bank) plus :data:`LEASE_SLACK_S`:
  a worker that dies while holding a slot frees it when the lease ends;
* a waiter polls with a short backoff (1 ms doubling to 10 ms).

Time accounting (TIME-2): the wait for a slot is NOT charged to the bot's bank. The bank is
charged from the moment the request is sent (``HttpPlayer.decide`` starts its monotonic clock
after the slot is held), because the wait is caused by the arena's scheduling, not by the
bot. Waits are recorded per request in the match log (exchange keys ``slot_wait_ms``,
``slot_bypassed``, see :mod:`arena.core.runner.service`) and per seat in the match result
(``timings.semaphore_wait_ms``, ``semaphore_max_wait_ms``, ``semaphore_bypassed``).

Failure policy (never hang, never blame the bot for the arena, never bypass silently): if
Redis is unreachable, or no slot frees within ``max_wait_s`` (``ARENA_BOT_SLOT_WAIT_S``,
default :data:`DEFAULT_MAX_WAIT_S`), the request is sent without a slot, and the bypass is
recorded on that exchange (``slot_bypassed``), counted per seat in the result
(``timings.semaphore_bypassed``) and logged as a warning.
"""

from __future__ import annotations

import hashlib
import logging
import posixpath
import time
import uuid
from urllib.parse import urlsplit

import redis

log = logging.getLogger("arena.semaphore")

#: Seconds added to a lease beyond the request timeout (transport and engine work).
LEASE_SLACK_S = 5.0
#: Longest wait for a slot before the request is sent without one, seconds.
DEFAULT_MAX_WAIT_S = 120.0
KEY_PREFIX = "arena:bot-sem:"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_endpoint(url: str) -> str:
    """The endpoint of a bot URL as ``scheme://host:port/path`` (module docstring): scheme
    and host lower-cased, the default port written out, the path folded (``posixpath``
    rules, no trailing slash), query and fragment dropped. A URL that cannot be parsed is
    returned stripped (it still gets a key of its own; its requests fail anyway)."""
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
    path = posixpath.normpath("/" + parts.path.lstrip("/")) if parts.path else "/"
    path = "/" + path.lstrip("/")  # normpath keeps a leading '//'
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}{path.rstrip('/') or '/'}"


def endpoint_key(url: str) -> str:
    """The semaphore name of a bot URL: the first 32 hex digits of the SHA-256 of
    :func:`normalize_endpoint` (the Redis key is ``arena:bot-sem:<name>``)."""
    return hashlib.sha256(normalize_endpoint(url).encode()).hexdigest()[:32]

_ACQUIRE = """
local key, limit, lease, token = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
if ARGV[4] ~= '' then redis.call('ZREM', KEYS[2], ARGV[4]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
if redis.call('ZCARD', key) < limit then
  redis.call('ZADD', key, now + lease, token)
  local ttl = redis.call('PTTL', key)
  local want = math.ceil(lease * 1000) + 1000
  if ttl < want then redis.call('PEXPIRE', key, want) end
  return 1
end
return 0
"""


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
        self._script = client.register_script(_ACQUIRE)

    @classmethod
    def for_endpoint(cls, client: redis.Redis, url: str, limit: int,
                     max_wait_s: float = DEFAULT_MAX_WAIT_S) -> BotSemaphore:
        """The semaphore shared by every registration of the endpoint of ``url``
        (:func:`endpoint_key`)."""
        return cls(client, endpoint_key(url), limit, max_wait_s)

    def try_acquire(self, lease_s: float, release: tuple[str, str] | None = None) -> str | None:
        """One attempt: a token if a slot was taken for ``lease_s`` seconds, else None.
        ``release`` = ``(key, token)`` of a slot given back first, in the same script.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        token = uuid.uuid4().hex
        rkey, rtoken = release if release else (self.key, "")
        got = self._script(keys=[self.key, rkey], args=[self.limit, float(lease_s), token, rtoken])
        return token if int(got) == 1 else None

    def acquire(self, lease_s: float, release: tuple[str, str] | None = None) -> tuple[str | None, float]:
        """Wait for a slot: returns ``(token or None, seconds waited)`` (0.0 when the first
        attempt got one); ``release`` as in
        :meth:`try_acquire` (given back by the first attempt, so a waiter holds nothing).

        None means no slot was taken (Redis down, or ``max_wait_s`` passed): the caller sends
        the request anyway and records the bypass (module docstring). Never raises.
        """
        start = time.monotonic()
        delay = 0.001
        first = True
        while True:
            try:
                token = self.try_acquire(lease_s, release)
                release = None
            except redis.RedisError as exc:
                log.warning("bot semaphore %s unavailable (%s): request sent without a slot", self.key, exc)
                return None, time.monotonic() - start
            if token is not None:  # a slot free at once is no wait (the script call is not one)
                return token, 0.0 if first else time.monotonic() - start
            first = False
            if time.monotonic() - start >= self.max_wait_s:
                log.warning("no slot of %s within %.0f s: request sent without a slot", self.key, self.max_wait_s)
                return None, time.monotonic() - start
            time.sleep(delay)
            delay = min(delay * 2, 0.01)

    def release(self, token: str | None) -> None:
        """Give a slot back (None: nothing to do). Never raises."""
        if token is None:
            return
        try:
            self.client.zrem(self.key, token)
        except redis.RedisError as exc:  # the lease expires by itself
            log.warning("bot semaphore %s release failed (%s): the lease will expire", self.key, exc)

    def holders(self) -> int:
        """Holders whose lease has not ended (for tests and monitoring)."""
        now = self.client.time()
        return int(self.client.zcount(self.key, now[0] + now[1] / 1e6, "+inf"))


# -- an HTTP player whose requests hold a slot --------------------------------------------------
from arena.core.runner.players import NOTICE_TIMEOUT_S, HttpPlayer, Outcome  # noqa: E402


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


class CappedHttpPlayer(HttpPlayer):
    """An :class:`~arena.core.runner.players.HttpPlayer` whose every request (decision or
    notice) holds a slot of ``semaphore`` (its endpoint's) while in flight.

    ``decide`` waits for a slot, then calls ``HttpPlayer.decide``, whose clock starts only
    then: the wait is not charged to the bank (TIME-2, module docstring). The slot is given
    back through ``slots`` (:class:`MatchSlots`, shared by the match's players; the caller
    flushes it when the match ends), or at once without it.

    Figures, seconds: ``last_wait_s`` and ``last_bypassed`` of the latest request;
    totals over the match ``wait_s``, ``max_wait_s`` (longest single wait) and
    ``bypassed`` (requests sent without a slot).
    """

    def __init__(self, url: str, secret: str | None, name: str | None, semaphore: BotSemaphore | None,
                 slots: MatchSlots | None = None, *, allow_private: bool | None = None,
                 previous_secret: str | None = None):
        super().__init__(url, secret, name, allow_private=allow_private, previous_secret=previous_secret)
        self.semaphore = semaphore
        self.slots = slots
        self.wait_s = 0.0
        self.max_wait_s = 0.0
        self.bypassed = 0
        self.last_wait_s = 0.0
        self.last_bypassed = False

    def _hold(self, timeout_s: float) -> str | None:
        if self.semaphore is None:
            return None
        release = self.slots.take_release() if self.slots is not None else None
        token, waited = self.semaphore.acquire(timeout_s + LEASE_SLACK_S, release)
        self.last_wait_s, self.last_bypassed = waited, token is None
        self.wait_s += waited
        self.max_wait_s = max(self.max_wait_s, waited)
        if token is None:
            self.bypassed += 1
        return token

    def _done(self, token: str | None) -> None:
        if token is None or self.semaphore is None:
            return
        if self.slots is not None:
            self.slots.defer(self.semaphore, token)
        else:
            self.semaphore.release(token)

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        token = self._hold(timeout_s)
        try:
            return super().decide(body, timeout_s)
        finally:
            self._done(token)

    def notify(self, body: bytes) -> None:
        token = self._hold(NOTICE_TIMEOUT_S)
        try:
            super().notify(body)
        finally:
            self._done(token)
