"""Players whose every request holds a slot of their bot's cap (:mod:`arena.runner.semaphore`).

The wait for a slot is not charged to the bot's bank (TIME-2): the player's clock starts
once the slot is held. Each request's wait comes back with it (:class:`~arena.runner.players.SlotUse`).
"""

from __future__ import annotations

from typing import Protocol

from arena.runner.players import NO_SLOT, NOTICE_TIMEOUT_S, HttpPlayer, Outcome, PlayerWithdrawn, SlotUse
from arena.runner.semaphore import DECISION_PRIORITY, LEASE_SLACK_S, NOTICE_PRIORITY, BotSemaphore, MatchSlots


class SlotGate(Protocol):
    """A check of each request, read with its slot: ``key`` is the Redis key read in the
    slot's own script call; called with that key's value (bytes or str, or None when absent or
    unread), True bars the request (:class:`arena.withdrawals.WithdrawalCheck.gate`)."""

    key: str

    def __call__(self, value: bytes | str | None) -> bool: ...


class SlotCap:
    """Mixin in front of a player class: ``decide`` and ``notify`` hold a slot of
    ``self.semaphore`` (None: no cap) while in flight, then call the player's own.

    The slot is given back through ``self.slots`` (:class:`MatchSlots`, shared by the match's
    players; the caller flushes it when the match ends), or at once without it, or at once
    when others wait for the bot. Each request's wait comes back with it:
    :attr:`Outcome.slot` of a decision, the :class:`SlotUse` a notice returns.

    ``self.gate`` (None: no check) is asked once the slot is held, with its key's value read
    in the same Redis call; when it says so, the slot is given back and
    :class:`~arena.runner.players.PlayerWithdrawn` raised: nothing is sent.
    """

    semaphore: BotSemaphore | None
    slots: MatchSlots | None
    gate: SlotGate | None = None

    def _hold(self, timeout_s: float, notice: bool = False) -> tuple[str | None, SlotUse]:
        if self.semaphore is None:
            return None, NO_SLOT
        release = self.slots.take_release() if self.slots is not None else None
        # a notice goes before decisions (arena.runner.semaphore: queue order)
        priority = NOTICE_PRIORITY if notice else DECISION_PRIORITY
        gate = self.gate
        token, waited = self.semaphore.acquire(
            timeout_s + LEASE_SLACK_S, release, priority=priority, watch=gate.key if gate is not None else None
        )
        if gate is not None and gate(self.semaphore.watched):
            self.semaphore.release(token)
            raise PlayerWithdrawn(gate.key)
        return token, SlotUse(waited, token is None)

    def _done(self, token: str | None) -> None:
        if token is None or self.semaphore is None:
            return
        if self.slots is not None and not self.semaphore.contended:
            self.slots.defer(self.semaphore, token)
        else:  # others wait for this bot: free the slot now, not after the arena's own work
            self.semaphore.release(token)

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        token, slot = self._hold(timeout_s)
        try:
            outcome: Outcome = super().decide(body, timeout_s)  # type: ignore[misc]
            return outcome._replace(slot=slot)
        finally:
            self._done(token)

    def notify(self, body: bytes) -> SlotUse:
        token, slot = self._hold(NOTICE_TIMEOUT_S, notice=True)
        try:
            super().notify(body)  # type: ignore[misc]
        finally:
            self._done(token)
        return slot


class CappedHttpPlayer(SlotCap, HttpPlayer):
    """An :class:`~arena.runner.players.HttpPlayer` whose every request (decision or
    notice) holds a slot of ``semaphore`` (its endpoint's) while in flight (:class:`SlotCap`);
    ``decide``'s clock starts only once the slot is held."""

    def __init__(
        self,
        url: str,
        secret: str | None,
        name: str | None,
        semaphore: BotSemaphore | None,
        slots: MatchSlots | None = None,
        *,
        allow_private: bool | None = None,
        previous_secret: str | None = None,
    ):
        super().__init__(url, secret, name, allow_private=allow_private, previous_secret=previous_secret)
        self.semaphore = semaphore
        self.slots = slots
