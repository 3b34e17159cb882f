"""The answers' relay loop (:class:`Answers`): answer list items queued by the connections,
pushed to Redis in batches, kept through a Redis failure until their request's deadline."""

from __future__ import annotations

import asyncio
import logging
import time

import redis

from arena import relay
from daifugo_arena.gateway.hub import Hub

log = logging.getLogger("arena.gateway")

#: First pause before answers Redis refused are pushed again, seconds (doubling up to
#: :data:`ANSWER_RETRY_MAX_S`); they are dropped only past their request's deadline.
ANSWER_RETRY_S = 0.05
ANSWER_RETRY_MAX_S = 1.0


class Answers:
    """The answers and faults read since the last push, and the loop that pushes them."""

    def __init__(self, hub: Hub):
        self.hub = hub
        #: (request id, answer list item, the request's deadline in Unix seconds)
        self._waiting: list[tuple[str, bytes, float]] = []
        self._ready = asyncio.Event()
        self._closed = False

    def queue(self, rid: str, item: bytes, deadline: float) -> None:
        """Push ``item`` (:func:`arena.relay.answer_item` or :func:`arena.relay.fault_item`)
        onto the answer list of ``rid`` soon: with the other answers waiting, in one round trip
        (:meth:`loop`); ``deadline`` (Unix seconds) is the request's: past it, an answer Redis
        refused is dropped."""
        self._waiting.append((rid, item, deadline))
        self._ready.set()

    def close(self) -> None:
        """The server has closed: :meth:`loop` pushes what is left, then ends."""
        self._closed = True
        self._ready.set()

    async def loop(self) -> None:
        """Push the queued answers, all those waiting in one pipeline, again and again. A batch
        Redis refused (restarting, a pooled connection it cut) is kept and pushed again, with
        the answers read since, after a pause doubling from :data:`ANSWER_RETRY_S` to
        :data:`ANSWER_RETRY_MAX_S`; an answer is dropped only once its request's deadline has
        passed (its worker, finding the request nowhere, queued it again or gave up). The bot's
        connection is never closed for it. Ends once :meth:`close` was called and nothing is left."""
        pause = ANSWER_RETRY_S
        while True:
            await self._ready.wait()
            self._ready.clear()
            batch, self._waiting = self._waiting, []
            if batch:
                pipe = self.hub.r.pipeline(transaction=False)
                for rid, item, _ in batch:
                    key = relay.answer_key(rid)
                    pipe.rpush(key, item)
                    pipe.expire(key, relay.ANSWER_TTL_S)
                try:
                    await pipe.execute()
                    pause = ANSWER_RETRY_S
                except (redis.RedisError, OSError) as exc:
                    now = time.time()
                    kept = [a for a in batch if a[2] > now]
                    if len(kept) < len(batch):
                        log.warning("%d answers dropped, past their deadline: %s", len(batch) - len(kept), exc)
                    log.warning("%d answers not pushed yet: %s", len(kept), exc)
                    self._waiting[:0] = kept
                    if self._closed:
                        return
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, ANSWER_RETRY_MAX_S)
                    self._ready.set()
                    continue
            if self._closed and not self._waiting:
                return
