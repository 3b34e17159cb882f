"""Who must act and what (ACT): the decision kinds, the action types that answer them, the
:class:`Decision` asked and :class:`InvalidAction`, the refusal of an action (C-12).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NamedTuple

from engine.refusals import Params, Refusal
from engine.refusals import render as render_refusal

DECISIONS: Final = ("play", "doubt", "penalty", "exchange", "rate", "give", "discard")
ACTION_TYPES: Final = ("play", "pass", "doubt", "through", "penalty", "exchange", "rate", "give", "discard")
#: Which action types answer which decision (ACT).
ANSWERS: Final[dict[str, tuple[str, ...]]] = {
    "play": ("play", "pass"),
    "doubt": ("doubt", "through"),
    "penalty": ("penalty",),
    "exchange": ("exchange",),
    "rate": ("rate",),
    "give": ("give",),
    "discard": ("discard",),
}

#: An ACT action as on the wire and in the log (a JSON object).
Action = dict[str, Any]


class InvalidAction(ValueError):
    """An action refused by the engine (C-12); the state is unchanged.

    Attributes:
        rule: the docs/rules.md id the action breaks (``"C-5"``, ``"MD-3"``, ``"ACT"`` for a
            malformed action).
        code: the refusal's :class:`engine.refusals.Refusal` code.
        params: its parameters (``str`` or ``int`` values: the template's fields).
        reason: the English explanation rendered from ``code`` and ``params``, without the
            rule id.

    ``str(e)`` is ``"<reason> [<rule>]"``. ``params`` may be given as a callable building
    them (called only when read: the legal-move search refuses often and reads none).
    """

    def __init__(self, rule: str, code: Refusal, params: Params | Callable[[], Params] | None = None):
        super().__init__(rule)
        self.rule = rule
        self.code = code
        self._params = params

    @property
    def params(self) -> dict[str, str | int]:
        """The parameters (built on first read when given as a callable)."""
        p = self._params
        if callable(p):
            p = self._params = p()
        return dict(p) if p is not None else {}

    @property
    def reason(self) -> str:
        """The English explanation: the code's template with :attr:`params`."""
        return render_refusal(self.code, self.params)

    def __str__(self) -> str:
        return f"{self.reason} [{self.rule}]"


class Decision(NamedTuple):
    """Who must act and what (ACT).

    Attributes:
        seat: the seat asked.
        kind: ``play``, ``doubt``, ``penalty``, ``exchange``, ``rate``, ``give`` or ``discard``.
        info: limits of the decision, JSON-ready: ``{"min": 1}`` (penalty after a caught last
            lie, MD-16), ``{"count": 2, "to": 3}`` (JDF give), ``{"max": 2, "to": 1}``
            (LR-5 give), ``{"max": 1}`` (LR-6 discard), ``{"choices": [1, 2, 3]}`` (rate),
            ``{"lead": True}`` (a play decision on an empty field), ``{"stuck": True}``
            (TM-6: the leader can only pass). Read-only: decisions may be shared.
    """

    seat: int
    kind: str
    info: dict[str, Any]
