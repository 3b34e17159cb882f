"""Leases in Redis: the one set of script pieces for every cap the arena keeps in Redis.

A lease set is a sorted set whose members are holders and whose scores are the ends of
their leases in Redis server time (seconds, ``TIME``: the clocks of the worker and web
machines never matter). A holder whose process died stops counting when its lease ends.
Used by the per-endpoint request cap (:mod:`arena.runner.semaphore`), the per-endpoint
match cap (:mod:`arena.runner.claims`) and the live views' caps counted across server
processes, per account and for viewers without a stake (:class:`LeaseSet`, ``api/ui/live.py``).

Lua functions (prepend :data:`LUA_LEASES` to a script):

* ``now_s()``: Redis server time, seconds (float);
* ``live_leases(key, now)``: drop the ended leases of ``key``, return how many are left;
* ``hold(key, member, now, lease)``: ``member``'s lease ends ``lease`` seconds from ``now``;
  the key itself expires two leases and a minute after its latest one.
"""

from __future__ import annotations

import redis

LUA_LEASES = """
local function now_s()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function live_leases(key, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  return redis.call('ZCARD', key)
end
local function hold(key, member, now, lease)
  redis.call('ZADD', key, now + lease, member)
  redis.call('EXPIRE', key, math.ceil(lease) * 2 + 60)
end
"""

# KEYS: the lease set. ARGV: member, lease_s, limit. Returns 1 (taken) or 0 (``limit`` held).
_TAKE = (
    LUA_LEASES
    + """
local now = now_s()
if live_leases(KEYS[1], now) >= tonumber(ARGV[3]) then return 0 end
hold(KEYS[1], ARGV[1], now, tonumber(ARGV[2]))
return 1
"""
)

# KEYS: the lease set. ARGV: member, lease_s. Returns 1 (renewed) or 0 (no such lease: it ended).
_RENEW = (
    LUA_LEASES
    + """
local now = now_s()
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
hold(KEYS[1], ARGV[1], now, tonumber(ARGV[2]))
return 1
"""
)


def renew_many(client: redis.Redis, leases: list[tuple[str, str]], lease_s: float) -> list[bool]:
    """Renew every ``(key, member)`` lease of ``leases`` as :meth:`LeaseSet.renew` does, in one
    round trip (a pipeline); for each, whether it was renewed (False: it had ended).

    Raises:
        redis.RedisError: Redis is unreachable.
    """
    if not leases:
        return []
    script = client.register_script(_RENEW)
    pipe = client.pipeline(transaction=False)
    for key, member in leases:
        script(keys=[key], args=[member, float(lease_s)], client=pipe)
    return [bool(int(x)) for x in pipe.execute()]


class LeaseSet:
    """At most ``limit`` leases at once in the sorted set ``key`` (module docstring).

    Raises (every method):
        redis.RedisError: Redis is unreachable.
    """

    def __init__(self, client: redis.Redis, key: str, limit: int):
        self.client, self.key, self.limit = client, key, limit
        self._take = client.register_script(_TAKE)
        self._renew = client.register_script(_RENEW)

    def take(self, member: str, lease_s: float) -> bool:
        """Give ``member`` a lease of ``lease_s`` seconds unless ``limit`` leases are held."""
        return bool(int(self._take(keys=[self.key], args=[member, float(lease_s), self.limit])))

    def renew(self, member: str, lease_s: float) -> bool:
        """Extend ``member``'s lease to ``lease_s`` seconds from now, whatever the limit;
        False when it has no lease (it ended, or was released)."""
        return bool(int(self._renew(keys=[self.key], args=[member, float(lease_s)])))

    def release(self, member: str) -> None:
        """End ``member``'s lease now."""
        self.client.zrem(self.key, member)

    def held(self) -> int:
        """Leases not ended (for tests and monitoring)."""
        now = self.client.time()
        return int(self.client.zcount(self.key, now[0] + now[1] / 1e6, "+inf"))
