"""Per-endpoint cap on the matches claimed at once: one slow bot cannot hold every worker
thread (design and figures: docs/operations.md, "Isolation").

:class:`EndpointClaims` keeps, per bot endpoint (:func:`arena.runner.semaphore.endpoint_key`),
the matches claimed now in a Redis sorted set ``arena:bot-claims:<endpoint>`` (members
``<match id>:<token>``, scored by lease end in Redis server time). A delivery takes a claim
on every endpoint of its bot seats, all or nothing, before it claims the match, and is
refused when one endpoint already has ``hard`` claims (``ARENA_BOT_MAX_MATCHES``), or has
``soft`` (4 x its concurrency cap) or more and twice as many requests waiting for its slots
as it may serve at once. A refused delivery is sent again after :func:`defer_countdown_s`
(at most :data:`DEFER_RATE_PER_S` a second per busy endpoint, counted in
``<claims>:deferred``). Claims are renewed with the match's lease
(:class:`arena.heartbeat.LeaseKeeper`). Without Redis the match plays without a claim
(logged); eager mode has no claims.
"""

from __future__ import annotations

import logging
import random
import uuid
from dataclasses import dataclass

import redis

from arena.leases import LUA_LEASES
from arena.runner.semaphore import KEY_PREFIX, endpoint_key

log = logging.getLogger("arena.claims")

CLAIM_PREFIX = "arena:bot-claims:"
#: A saturated endpoint may still get matches up to this many times its concurrency cap...
SOFT_PER_SLOT = 4
#: ... and it is saturated when this many times its cap of requests wait for its slots.
SATURATED_PER_SLOT = 2
#: First countdown of a refused delivery, seconds; doubled per refusal up to the maximum.
DEFER_FIRST_S, DEFER_MAX_S = 0.25, 4.0
#: Deliveries of one busy endpoint sent again per second at most (all of its deferred
#: matches together), and the longest countdown, seconds.
DEFER_RATE_PER_S, DEFER_CAP_S = 10.0, 60.0
#: Seconds a deferred match counts in its endpoint's deferred set after its last refusal.
DEFERRED_WINDOW_S = 60

# KEYS: n claim sets, the n semaphore queues, then the n deferred sets. ARGV: member,
# lease_s, soft, hard, limit, match id. Returns {1} when taken, else {0, index of the busy
# endpoint (1-based), claimed, waiting (-1: not read), deferred on it}.
_TAKE = (
    LUA_LEASES
    + """
local now = now_s()
local n = #KEYS / 3
local member, lease = ARGV[1], tonumber(ARGV[2])
local soft, hard, limit, match = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local function refuse(i, held, waiting)
  local dkey = KEYS[2 * n + i]
  redis.call('ZREMRANGEBYSCORE', dkey, '-inf', now - """
    + str(DEFERRED_WINDOW_S)
    + """)
  redis.call('ZADD', dkey, now, match)
  redis.call('EXPIRE', dkey, """
    + str(2 * DEFERRED_WINDOW_S)
    + """)
  return {0, i, held, waiting, redis.call('ZCARD', dkey)}
end
for i = 1, n do
  local held = live_leases(KEYS[i], now)
  if held >= hard then return refuse(i, held, -1) end
  if held >= soft then
    local waiting = redis.call('ZCARD', KEYS[n + i])
    if waiting >= limit then return refuse(i, held, waiting) end
  end
end
for i = 1, n do
  hold(KEYS[i], member, now, lease)
  redis.call('ZREM', KEYS[2 * n + i], match)
end
return {1}
"""
)
# KEYS: claim sets. ARGV: member, lease_s. Sets the member's lease end in every set (a match
# being played keeps its claims, even after a stall); returns how many still held it.
_RENEW = (
    LUA_LEASES
    + """
local now = now_s()
local kept = 0
for i = 1, #KEYS do
  if redis.call('ZSCORE', KEYS[i], ARGV[1]) then kept = kept + 1 end
  hold(KEYS[i], ARGV[1], now, tonumber(ARGV[2]))
end
return kept
"""
)


@dataclass(frozen=True)
class Claim:
    """Claims held by one delivery of a match: ``member`` in each of ``keys`` (empty when
    the match seats no bot, or was let through without Redis)."""

    member: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Refused:
    """A delivery refused because ``endpoint`` (its index among the match's distinct bot
    endpoints) holds ``claimed`` matches and ``waiting`` requests (-1: not read, the hard cap
    was reached). ``deferred``: matches refused on that endpoint in the last minute, this one
    included."""

    endpoint: int
    claimed: int
    waiting: int
    deferred: int = 1

    def __str__(self) -> str:
        why = (
            f"{self.claimed} matches claimed (the most)"
            if self.waiting < 0
            else f"{self.claimed} matches claimed and {self.waiting} requests waiting for it"
        )
        return f"bot endpoint {self.endpoint + 1} of the match is busy: {why}"


class EndpointClaims:
    """The claim caps of the module docstring, through ``client``.

    Args:
        client: a ``redis.Redis`` client.
        hard: most matches claimed at once per endpoint (``ARENA_BOT_MAX_MATCHES``, >= 1).
        limit: the endpoints' concurrency cap (``ARENA_BOT_MAX_CONCURRENCY``): an endpoint
            with this many requests waiting is saturated.
        lease_s: a claim's lease, seconds (the match's ``ARENA_LEASE_S``).
    """

    def __init__(self, client: redis.Redis, *, hard: int, limit: int, lease_s: float):
        self.client, self.hard, self.limit, self.lease_s = client, max(1, hard), max(1, limit), float(lease_s)
        self.soft = min(self.hard, SOFT_PER_SLOT * self.limit)
        self._take = client.register_script(_TAKE)
        self._renew = client.register_script(_RENEW)

    @staticmethod
    def keys_for(urls: list[str]) -> list[str]:
        """The claim sets of ``urls``' endpoints, each once, in first-seen order."""
        out: list[str] = []
        for url in urls:
            key = CLAIM_PREFIX + endpoint_key(url)
            if key not in out:
                out.append(key)
        return out

    def take(self, match_id: int, urls: list[str]) -> Claim | Refused:
        """Claim every endpoint of ``urls`` (the match's bot seats) for ``match_id``, or
        none. Redis unreachable: an empty :class:`Claim` (the match plays uncapped; logged)."""
        keys = self.keys_for(urls)
        member = f"{int(match_id)}:{uuid.uuid4().hex[:12]}"
        if not keys:
            return Claim(member, ())
        queues = [KEY_PREFIX + k[len(CLAIM_PREFIX) :] + ":q" for k in keys]
        deferred = [k + ":deferred" for k in keys]
        try:
            got = self._take(
                keys=[*keys, *queues, *deferred],
                args=[member, self.lease_s, self.soft, self.hard, SATURATED_PER_SLOT * self.limit, int(match_id)],
            )
        except redis.RedisError as exc:
            log.warning("match %s claimed without an endpoint claim (Redis: %s)", match_id, exc)
            return Claim(member, ())
        if int(got[0]) == 1:
            return Claim(member, tuple(keys))
        return Refused(int(got[1]) - 1, int(got[2]), int(got[3]), int(got[4]))

    def renew(self, claim: Claim) -> bool:
        """Lengthen ``claim`` to a full lease from now. False if Redis failed or a claim had
        already ended (it is taken again: a match being played keeps its claims). Never raises."""
        if not claim.keys:
            return True
        try:
            return int(self._renew(keys=list(claim.keys), args=[claim.member, self.lease_s])) == len(claim.keys)
        except redis.RedisError as exc:
            log.warning("endpoint claims of %s not renewed (%s)", claim.member, exc)
            return False

    def release(self, claim: Claim) -> None:
        """Give ``claim`` back (the match ended, or was not played). Never raises."""
        if not claim.keys:
            return
        try:
            pipe = self.client.pipeline(transaction=False)
            for key in claim.keys:
                pipe.zrem(key, claim.member)
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("endpoint claims of %s not given back (%s): they end with their lease", claim.member, exc)

    def claimed(self, url: str) -> int:
        """Matches claimed now on ``url``'s endpoint (expired claims left out).

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        key = CLAIM_PREFIX + endpoint_key(url)
        now = self.client.time()
        return int(self.client.zcount(key, now[0] + now[1] / 1e6, "+inf"))


def defer_countdown_s(deferrals: int, deferred_on_endpoint: int = 1) -> float:
    """Seconds before a refused delivery is sent again: :data:`DEFER_FIRST_S`, doubled per
    earlier refusal up to :data:`DEFER_MAX_S`, or ``deferred_on_endpoint`` /
    :data:`DEFER_RATE_PER_S` when longer (the busy endpoint's deferred matches together come
    back at that rate), at most :data:`DEFER_CAP_S`; with +-50 % jitter (refused deliveries
    of one busy bot do not all come back at once)."""
    base = min(DEFER_MAX_S, DEFER_FIRST_S * 2 ** max(0, min(int(deferrals), 10)))
    base = min(DEFER_CAP_S, max(base, max(1, int(deferred_on_endpoint)) / DEFER_RATE_PER_S))
    return round(float(base) * random.uniform(0.5, 1.5), 3)
