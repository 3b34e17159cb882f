"""Deleted bots in the matches playing now: the flag a deletion leaves in Redis, and the check
the runner makes before each request.

A deleted bot's matches not yet claimed read its status from the database when they are claimed
(its seat is withdrawn from the start: :func:`arena.lifecycle.claim_match`). A match already
playing learns of the deletion from Redis: :func:`flag_withdrawn` (the ``DELETE``, after its commit)
sets ``arena:bot:<id>:withdrawn`` to a token of its own; :class:`WithdrawalCheck` (the runner's
``Observers.withdrawn``, wired by :func:`arena.playing.play_plan`) reads the asked player's
flag before each decision request and before the notices, for seats of registered bots only:
in the script call that takes the request's slot of the bot's cap
(:meth:`WithdrawalCheck.gate`, no round trip of its own), else by one ``GET`` on the match's
own Redis connection. A flag found is confirmed once in the database (``confirm``): a flag
the database does not back (left by a database since reset or restored, whose ids came
back) is ignored for as long as it holds that token. From then on the
bot's seats forfeit every decision without a request (reason ``withdrawn``, FAULT-3) and it
gets no notice, whichever way it is reached (HTTP or a connection it opened). So once the
``DELETE`` is answered, at most the one request already in flight reaches the bot.

Redis unreachable: the deletion still succeeds (its matches not yet claimed are forfeits) and a
match playing now that cannot read the flag plays on, as before this check.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping

import redis

log = logging.getLogger(__name__)

#: Seconds a withdrawal flag lives: longer than any match (a deleted bot is never undeleted).
FLAG_TTL_S = 30 * 24 * 3600


def flag_key(bot_id: int) -> str:
    """The Redis key saying bot ``bot_id`` was deleted."""
    return f"arena:bot:{int(bot_id)}:withdrawn"


def flag_withdrawn(client: redis.Redis, bot_id: int) -> None:
    """Tell the matches playing now that bot ``bot_id`` was deleted (call after the commit).

    Raises:
        redis.RedisError: Redis is unreachable (nothing was set).
    """
    client.set(flag_key(bot_id), uuid.uuid4().hex, ex=FLAG_TTL_S)


class FlagGate:
    """One player's check read with its request's slot (:class:`arena.runner.capped.SlotGate`):
    ``key`` is the bot's flag; called with the flag's value, True once the bot was deleted."""

    def __init__(self, check: WithdrawalCheck, player: int, key: str):
        self.check, self.player, self.key = check, player, key

    def __call__(self, value: bytes | str | None) -> bool:
        return self.check.seen(self.player, value)


class WithdrawalCheck:
    """``check(player)``: True once the bot of ``player`` (a player index of the match) was
    deleted; ``bot_ids`` maps the player indices of registered bots to their ids (a house
    bot's player is never withdrawn). ``confirm(bot_id)``: whether the database says the bot
    is deleted, asked once per flag token found (None: every flag is believed; an exception
    believes the flag too: it is only set after a deletion's commit). A True answer is kept;
    a Redis error answers False (logged once: the match plays on). One ``GET`` a call, none
    for a player whose :meth:`gate` was taken (its requests read the flag with their slot);
    never raises."""

    def __init__(self, client: redis.Redis, bot_ids: Mapping[int, int], confirm: Callable[[int], bool] | None = None):
        self.client, self.confirm = client, confirm
        self.bot_ids = {int(p): int(b) for p, b in bot_ids.items()}
        self.withdrawn: set[int] = set()
        self._stale: dict[int, bytes | str] = {}  # player -> a flag token the database does not back
        self._gated: set[int] = set()
        self._warned = False

    def gate(self, player: int) -> FlagGate | None:
        """The check of ``player``'s requests to make with their slot of the bot's cap (the
        flag read in the slot's own script call, :meth:`arena.runner.semaphore.BotSemaphore.acquire`),
        None for a player that is not a registered bot. From then on this object's own call
        reads nothing for ``player``: it answers what its gate found."""
        bot_id = self.bot_ids.get(player)
        if bot_id is None:
            return None
        self._gated.add(player)
        return FlagGate(self, player, flag_key(bot_id))

    def __call__(self, player: int) -> bool:
        if player in self.withdrawn:
            return True
        bot_id = self.bot_ids.get(player)
        if bot_id is None or player in self._gated:
            return False
        try:
            token = self.client.get(flag_key(bot_id))
        except redis.RedisError as exc:
            self._warn(f"withdrawals unreadable ({exc}): the match plays on")
            return False
        return self.seen(player, token)

    def seen(self, player: int, token: bytes | str | None) -> bool:
        """Whether ``player``'s bot is deleted, given its flag's value ``token`` read just
        now (None: no flag): a flag is confirmed once per token (class docstring)."""
        if player in self.withdrawn:
            return True
        bot_id = self.bot_ids.get(player)
        if bot_id is None or token is None or self._stale.get(player) == token:
            return False
        if not self._confirmed(bot_id):
            self._stale[player] = token
            self._warn(f"bot {bot_id} has a withdrawal flag its database does not back: ignored")
            return False
        self.withdrawn.add(player)
        return True

    def _confirmed(self, bot_id: int) -> bool:
        if self.confirm is None:
            return True
        try:
            return bool(self.confirm(bot_id))
        except Exception as exc:  # the database away: the flag follows a commit, believe it
            log.warning("bot %s: deletion not confirmed (%s): the flag is believed", bot_id, exc)
            return True

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning(message)
