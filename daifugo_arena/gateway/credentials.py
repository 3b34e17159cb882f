"""The bots' credentials as a gateway reads them (:class:`CredentialsReader`): from the
database on threads of their own, within a timeout, cached a few seconds."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from arena.usecases.bots import Credentials
from daifugo_arena.gateway.config import GatewayConfig

log = logging.getLogger("arena.gateway")

#: How a gateway reads a bot's credentials (blocking; called in a thread): None when the bot
#: does not exist or was deleted. ``arena gateway`` reads the database
#: (:func:`arena.usecases.bots.credentials`).
CredentialsFn = Callable[[int], Credentials | None]
#: Which of these bots may still connect (they exist, are not deleted and have the transport
#: ``connect``), each with the end of its previous secret's grace, as
#: :attr:`~arena.usecases.bots.Credentials.grace_until` (Unix seconds, None: never rotated):
#: ``{bot id: grace_until}``. Blocking; called in a thread, once per presence renewal for every
#: bot held; a rotation since a connection's credentials were read shows as another
#: ``grace_until`` (:meth:`daifugo_arena.gateway.presence.Presence.renew` then reads that bot's credentials).
#: ``arena gateway`` asks the database in one query, no secret read or decrypted
#: (:func:`arena.usecases.bots.connect_bots`).
StillConnectFn = Callable[[list[int]], Mapping[int, float | None]]

#: Threads reading credentials from the database.
DB_THREADS = 4
#: Most bots whose credentials are cached (known bots, and unknown ids apart: a stranger's
#: unknown ids never push a known bot's credentials out); also the most clients a failed
#: authentications' budget remembers (:class:`daifugo_arena.gateway.admission.Budgets`).
CREDENTIALS_CACHED = 10_000


class CredentialsCache:
    """Credentials read, each until a deadline (monotonic seconds): known bots and unknown
    ids in two bounded LRU maps (unknown ids never push a known bot out)."""

    def __init__(self, size: int = CREDENTIALS_CACHED):
        self.size = size
        self._known: OrderedDict[int, tuple[float, Credentials]] = OrderedDict()
        self._unknown: OrderedDict[int, float] = OrderedDict()

    def get(self, bot_id: int, now: float) -> tuple[bool, Credentials | None]:
        """``(hit, credentials)``: a hit with None is an unknown bot."""
        known = self._known.get(bot_id)
        if known is not None and known[0] > now:
            self._known.move_to_end(bot_id)
            return True, known[1]
        until = self._unknown.get(bot_id)
        if until is not None and until > now:
            return True, None
        return False, None

    def put(self, bot_id: int, creds: Credentials | None, until: float) -> None:
        self._known.pop(bot_id, None)
        self._unknown.pop(bot_id, None)
        if creds is not None:
            self._known[bot_id] = (until, creds)
            if len(self._known) > self.size:
                self._known.popitem(last=False)
        else:
            self._unknown[bot_id] = until
            if len(self._unknown) > self.size:
                self._unknown.popitem(last=False)

    def clear(self) -> None:
        self._known.clear()
        self._unknown.clear()


class CredentialsReader:
    """Reads credentials on threads of its own (:data:`DB_THREADS`: a database that hangs holds
    these, never the threads of the Redis calls), each read within ``credentials_timeout_s``,
    cached ``credentials_ttl_s`` seconds (:class:`daifugo_arena.gateway.config.GatewayConfig`).

    Args:
        credentials: :data:`CredentialsFn`.
        still_connect: :data:`StillConnectFn` (None: each bot's ``credentials`` at each renewal,
            one call a bot).
    """

    def __init__(self, credentials: CredentialsFn, still_connect: StillConnectFn | None, config: GatewayConfig):
        self.credentials = credentials
        self.still_connect = still_connect
        self.ttl_s, self.timeout_s = config.credentials_ttl_s, config.credentials_timeout_s
        self.cache = CredentialsCache()
        self._db = ThreadPoolExecutor(DB_THREADS, thread_name_prefix="gateway-db")

    def cached(self, bot_id: int) -> tuple[bool, Credentials | None]:
        """``(hit, credentials)`` from the cache only (:meth:`CredentialsCache.get`)."""
        return self.cache.get(bot_id, time.monotonic())

    async def read(self, bot_id: int, *, fresh: bool = False) -> Credentials | None:
        """The bot's credentials: cached (``fresh``: read now all the same), read within the timeout.

        Raises:
            TimeoutError: the database did not answer in time; or what the read raised.
        """
        now = time.monotonic()
        hit, cached = self.cache.get(bot_id, now)
        if hit and not fresh:
            return cached
        read = asyncio.get_running_loop().run_in_executor(self._db, self.credentials, bot_id)
        creds = await asyncio.wait_for(read, self.timeout_s)
        self.cache.put(bot_id, creds, now + self.ttl_s)
        return creds

    async def connect_bots(self, ids: list[int]) -> dict[int, float | None] | None:
        """:data:`StillConnectFn` for ``ids``, read within the timeout; None when the database
        does not answer."""
        assert self.still_connect is not None
        ask = asyncio.get_running_loop().run_in_executor(self._db, self.still_connect, ids)
        try:
            return dict(await asyncio.wait_for(ask, self.timeout_s))
        except Exception as exc:
            log.warning("bots' transport and secrets unreadable (%s): connections kept as they are", exc)
            return None

    def shutdown(self) -> None:
        self._db.shutdown(wait=False, cancel_futures=True)
