"""Time-bank arithmetic (RULES TIME-1 to TIME-3), in integer milliseconds.

The engine does no timing itself (no I/O, no clock): the match runner measures how long a
seat took (TIME-2) and asks the :class:`TimeBank` what is left.

>>> bank = TimeBank(TimeRules())          # 60 s bank, +10 s per action, 60 s cap
>>> bank.remaining_ms
60000
>>> bank.spend(12_500)                    # the seat answered after 12.5 s
True
>>> bank.remaining_ms                     # 60000 - 12500 + 10000, capped at 60000
57500
>>> bank.spend(58_000)                    # more than what is left: flag fall (TIME-3)
False
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TimeRules:
    """Time rules of a match (TIME-1), in milliseconds.

    Attributes:
        initial_ms: bank at the start of each game (each deal in Trump Millionaire), 60000.
        increment_ms: added after each action, 10000.
        cap_ms: the bank never exceeds this after an increment, 60000.

    Raises:
        ValueError: a negative value, a zero initial bank, or a cap below the initial bank.
    """

    initial_ms: int = 60_000
    increment_ms: int = 10_000
    cap_ms: int = 60_000

    def __post_init__(self) -> None:
        for name in ("initial_ms", "increment_ms", "cap_ms"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"time rule {name!r} must be a non-negative integer of milliseconds")
        if self.initial_ms == 0:
            raise ValueError("time rule 'initial_ms' must be positive")
        if self.cap_ms < self.initial_ms:
            raise ValueError("time rule 'cap_ms' must be at least 'initial_ms'")

    @classmethod
    def from_seconds(cls, initial: float = 60.0, increment: float = 10.0, cap: float = 60.0) -> TimeRules:
        """Build from seconds (the unit of the API and the CLI)."""
        return cls(round(initial * 1000), round(increment * 1000), round(cap * 1000))


class TimeBank:
    """One seat's bank (TIME-1). ``remaining_ms`` is what the next request may take."""

    __slots__ = ("rules", "remaining_ms")

    def __init__(self, rules: TimeRules):
        self.rules = rules
        self.remaining_ms = rules.initial_ms

    def reset(self) -> None:
        """Back to the initial bank (a new game, or a new deal in Trump Millionaire)."""
        self.remaining_ms = self.rules.initial_ms

    def spend(self, elapsed_ms: int) -> bool:
        """Take ``elapsed_ms`` (TIME-2) and add the increment, up to the cap.

        Returns False, leaving the bank at 0, when ``elapsed_ms`` exceeds what was left
        (a flag fall, TIME-3); True otherwise.
        """
        if elapsed_ms > self.remaining_ms:
            self.remaining_ms = 0
            return False
        self.remaining_ms = min(self.rules.cap_ms, self.remaining_ms - elapsed_ms + self.rules.increment_ms)
        return True
