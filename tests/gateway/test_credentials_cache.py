"""The gateway's credentials cache against a stranger's unknown bot ids (issue 38, point 1):
what a stranger makes the gateway remember is bounded, and it never pushes a known bot's
credentials out (which would send every reconnection of honest bots to the database)."""

from __future__ import annotations

from arena.usecases.bots import Credentials
from daifugo_arena.gateway.credentials import CREDENTIALS_CACHED, CredentialsCache


def creds(bot_id: int) -> Credentials:
    return Credentials(bot_id, 1, f"bot-{bot_id}", "connect", ["s"])


def test_a_strangers_unknown_ids_never_push_a_known_bot_out() -> None:
    cache = CredentialsCache(size=3)
    for bot_id in (1, 2):
        cache.put(bot_id, creds(bot_id), until=100.0)
    for unknown in range(1000, 1100):  # a stranger naming ids no bot has
        cache.put(unknown, None, until=100.0)
    assert cache.get(1, now=0.0) == (True, creds(1)) and cache.get(2, now=0.0) == (True, creds(2))
    # the unknown ids are remembered too (no database read each), but only the newest 3
    assert [cache.get(u, now=0.0) for u in (1097, 1098, 1099)] == [(True, None)] * 3
    assert cache.get(1096, now=0.0) == (False, None)
    assert (len(cache._known), len(cache._unknown)) == (2, 3)


def test_cached_credentials_expire_and_a_bot_found_again_is_no_longer_unknown() -> None:
    cache = CredentialsCache()
    assert cache.size == CREDENTIALS_CACHED
    cache.put(7, None, until=10.0)  # not there yet (a read before its registration committed)
    assert cache.get(7, now=9.0) == (True, None)
    assert cache.get(7, now=10.0) == (False, None)  # expired: read again
    cache.put(7, creds(7), until=20.0)
    assert cache.get(7, now=11.0) == (True, creds(7))
    assert cache.get(7, now=20.0) == (False, None)


def test_the_least_recently_used_known_bot_goes_first() -> None:
    cache = CredentialsCache(size=2)
    cache.put(1, creds(1), until=100.0)
    cache.put(2, creds(2), until=100.0)
    assert cache.get(1, now=0.0)[0]  # 1 used: 2 is now the oldest
    cache.put(3, creds(3), until=100.0)
    assert [cache.get(b, now=0.0)[0] for b in (1, 2, 3)] == [True, False, True]
