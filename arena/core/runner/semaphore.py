"""Per-bot concurrency cap held in Redis: a counting semaphore with leases that expire.

One bot endpoint may be seated in many matches running at once on many worker processes.
:class:`BotSemaphore` caps the simultaneous decision requests to one bot at ``limit``
(``ARENA_BOT_MAX_CONCURRENCY``, default 4), so one bot's slowness under load does not
distort the timing of the other matches it plays.

Design (a sorted-set semaphore, one Lua script per acquire, atomic in Redis):

* key ``arena:bot-sem:<bot id>`` is a sorted set; each holder is a member (a random token)
  whose score is its lease end, in Redis server time (seconds, ``TIME``), so clocks of
  different worker machines never matter;
* acquire = drop expired members, then add the token if fewer than ``limit`` remain;
  release = ``ZREM`` of the token;
* a match holds one slot per bot from its start to its end (:class:`SlotBook`): a match
  sends at most one request at a time to a bot, so the cap on simultaneous requests stays
  exact, and no Redis round trip is spent per decision (a lease is renewed only when the next
  request could outlive it); the slots are taken in key order, so matches cannot deadlock;
* a lease is the request's timeout (the seat's remaining bank) plus :data:`LEASE_SLACK_S`
  (plus :data:`RENEW_AHEAD_S` for a match's slot): a worker that dies while holding a slot
  frees it when the lease ends;
* a waiter polls with a short backoff (1 ms doubling to 20 ms).

Time accounting (TIME-2): the wait for a slot is NOT charged to the bot's bank. The bank is
charged from the moment the request is sent (``HttpPlayer.decide`` starts its monotonic clock
after the slot is held; a match's slots are taken before its first request), because the
wait is caused by the arena's scheduling, not by the
bot. The wait is recorded per player in the match result's ``timings.semaphore_wait_ms``.

Failure policy (never hang, never blame the bot for the arena): if Redis is unreachable, or
no slot frees within ``max_wait_s`` (default :data:`DEFAULT_MAX_WAIT_S`), the request is sent
anyway without a slot and the event is counted (``timings.semaphore_bypassed``) and logged;
a match that went without a bot's slot does not wait again at each decision: it tries once
more every :data:`RENEW_AHEAD_S` seconds.
"""

from __future__ import annotations

import logging
import time
import uuid

import redis

log = logging.getLogger("arena.semaphore")

#: Seconds added to a lease beyond the request timeout (transport and engine work).
LEASE_SLACK_S = 5.0
#: Longest wait for a slot before the request is sent without one, seconds.
DEFAULT_MAX_WAIT_S = 120.0
KEY_PREFIX = "arena:bot-sem:"

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
    """A Redis counting semaphore for one bot (see the module docstring).

    Args:
        client: a ``redis.Redis`` client.
        name: what is limited, e.g. the bot id (the key is ``arena:bot-sem:<name>``).
        limit: most holders at once (>= 1).
        max_wait_s: longest wait in :meth:`acquire`, seconds.
    """

    def __init__(self, client: redis.Redis, name: str, limit: int, max_wait_s: float = DEFAULT_MAX_WAIT_S):
        if limit < 1:
            raise ValueError("a semaphore limit must be >= 1")
        self.client = client
        self.key = KEY_PREFIX + str(name)
        self.limit = limit
        self.max_wait_s = max_wait_s
        self._script = client.register_script(_ACQUIRE)

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
        """Wait for a slot: returns ``(token or None, seconds waited)``; ``release`` as in
        :meth:`try_acquire` (given back by the first attempt).

        None means no slot was taken (Redis down, or ``max_wait_s`` passed): the caller goes
        on without one (module docstring). Never raises.
        """
        start = time.monotonic()
        delay = 0.001
        while True:
            try:
                token = self.try_acquire(lease_s, release)
                release = None
            except redis.RedisError as exc:
                log.warning("bot semaphore %s unavailable (%s): request sent without a slot", self.key, exc)
                return None, time.monotonic() - start
            if token is not None:
                return token, time.monotonic() - start
            if time.monotonic() - start >= self.max_wait_s:
                log.warning("no slot of %s within %.0f s: request sent without a slot", self.key, self.max_wait_s)
                return None, time.monotonic() - start
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

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

#: Seconds of lease taken beyond what the next request needs, so that a match renews its
#: slots about once per this many seconds instead of once per decision.
RENEW_AHEAD_S = 30.0


class SlotBook:
    """The slots of one match: one per bot, held from the start of the match to its end.

    A match sends at most one request at a time to a given bot (its seats are asked one at a
    time), so holding a slot for the whole match keeps the cap exact: at most ``limit``
    requests to a bot at once. It also costs no Redis round trip per decision: a slot's lease
    is renewed only when the next request could outlive it (every :data:`RENEW_AHEAD_S` s
    or so), and the renewal is one script call (release and take again, atomic).

    :meth:`hold_all` takes every bot's slot before the first request, in key order, so two
    matches waiting for each other's bots cannot deadlock. Not thread-safe (one per match).
    """

    def __init__(self) -> None:
        self._held: dict[str, list] = {}  # key -> [semaphore, token or None, lease end (monotonic)]

    def hold_all(self, semaphores, timeout_s: float) -> dict[str, float]:
        """Take a slot of each semaphore (in key order); returns seconds waited per key."""
        waited = {}
        for sem in sorted({s.key: s for s in semaphores if s is not None}.values(), key=lambda s: s.key):
            waited[sem.key] = self.hold(sem, timeout_s)
        return waited

    def hold(self, semaphore: BotSemaphore, timeout_s: float) -> float:
        """Make sure the match holds a slot of ``semaphore`` for a request of up to
        ``timeout_s`` seconds; returns the seconds waited (0 without a Redis call when the
        held lease already covers it). A slot that cannot be had (Redis down, ``max_wait_s``
        passed) is bypassed: :meth:`bypassed` tells."""
        now = time.monotonic()
        entry = self._held.get(semaphore.key)
        lease = timeout_s + LEASE_SLACK_S + RENEW_AHEAD_S
        if entry is not None and entry[1] is None:
            # this match already went without a slot (Redis down or the wait ran out): it
            # does not wait again at every decision; it tries once, now and then
            if now < entry[2]:
                return 0.0
            try:
                token = semaphore.try_acquire(lease)
            except redis.RedisError:
                token = None
            entry[1] = token
            entry[2] = now + (lease if token is not None else RENEW_AHEAD_S)
            return 0.0
        if entry is not None and entry[2] >= now + timeout_s + LEASE_SLACK_S:
            return 0.0
        release = (semaphore.key, entry[1]) if entry is not None else None
        token, waited = semaphore.acquire(lease, release)
        # the lease end; for a bypass, when to try again
        until = time.monotonic() + (lease - waited if token is not None else RENEW_AHEAD_S)
        self._held[semaphore.key] = [semaphore, token, until]
        return waited

    def bypassed(self, semaphore: BotSemaphore) -> bool:
        """True if the last :meth:`hold` of this semaphore went without a slot."""
        entry = self._held.get(semaphore.key)
        return entry is not None and entry[1] is None

    def flush(self) -> None:
        """Give every slot back (the match ends). Never raises."""
        held, self._held = self._held, {}
        for sem, token, _ in held.values():
            sem.release(token)


class CappedHttpPlayer(HttpPlayer):
    """An :class:`~arena.core.runner.players.HttpPlayer` whose decision requests and notices each hold a
    slot of ``semaphore`` while in flight.

    ``decide`` waits for a slot, then calls ``HttpPlayer.decide``, whose clock starts only
    then: the wait is not charged to the bank (TIME-2, module docstring). The slot is given
    back through ``book`` (:class:`SlotBook`, shared by the match's players; the caller
    flushes it when the match ends) or at once without a book. Totals for the match result:
    ``wait_s`` (seconds waited) and ``bypassed`` (requests sent without a slot).
    """

    def __init__(self, url: str, secret: str | None, name: str | None, semaphore: BotSemaphore | None,
                 book: SlotBook | None = None, *, allow_private: bool | None = None,
                 previous_secret: str | None = None):
        super().__init__(url, secret, name, allow_private=allow_private, previous_secret=previous_secret)
        self.semaphore = semaphore
        self.book = book
        self.wait_s = 0.0
        self.bypassed = 0

    def _hold(self, timeout_s: float) -> str | None:
        if self.semaphore is None:
            return None
        if self.book is not None:  # the match's slot, held until the match ends
            self.wait_s += self.book.hold(self.semaphore, timeout_s)
            if self.book.bypassed(self.semaphore):
                self.bypassed += 1
            return None
        token, waited = self.semaphore.acquire(timeout_s + LEASE_SLACK_S)
        self.wait_s += waited
        if token is None:
            self.bypassed += 1
        return token

    def _done(self, token: str | None) -> None:
        if self.semaphore is not None and self.book is None:
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
