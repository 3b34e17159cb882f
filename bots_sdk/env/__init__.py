"""A PettingZoo AEC training environment per rule set (docs/env.md): needs the ``env`` extra
(``pip install 'daifugo-arena[env]'``: pettingzoo, gymnasium, numpy).

>>> from bots_sdk.env import env
>>> e = env("jdf", seed=1)
>>> e.reset()
>>> obs, reward, terminated, truncated, info = e.last()
>>> e.step(int(obs["action_mask"].argmax()))        # the first legal candidate

:func:`env` wraps :class:`~bots_sdk.env.aec.DaifugoEnv` in PettingZoo's order-enforcing
wrapper; :func:`raw_env` gives the bare environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

try:
    import gymnasium  # noqa: F401
    import numpy  # noqa: F401
    import pettingzoo  # noqa: F401
except ImportError as e:  # without the extra
    raise ImportError(
        f"bots_sdk.env needs the 'env' extra ({e.name} is missing): pip install 'daifugo-arena[env]'"
    ) from e

from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

from bots_sdk.env.aec import DaifugoEnv, IllegalActionError
from bots_sdk.env.candidates import KINDS, MAX_ACTIONS
from bots_sdk.env.encoding import CANDIDATE_COLUMNS, CANDIDATE_WIDTH
from engine.options import RULESET_IDS

#: The rule sets, as in ``engine.RULESETS``.
RULESETS: tuple[str, ...] = RULESET_IDS


def raw_env(
    ruleset: str, options: Mapping[str, Any] | None = None, seed: int | None = None, render_mode: str | None = None
) -> DaifugoEnv:
    """The bare AEC environment of ``ruleset`` (see :class:`DaifugoEnv`)."""
    return DaifugoEnv(ruleset, options, seed, render_mode)


class OrderEnforcing(wrappers.OrderEnforcingWrapper):  # type: ignore[misc]  # pettingzoo ships no types
    """PettingZoo's ``OrderEnforcingWrapper`` whose ``last()`` reads the environment's own
    (after the same check) instead of five attributes forwarded one by one through
    ``__getattr__``: the AEC loop's hottest call, about a tenth of a step."""

    def last(self, observe: bool = True) -> Any:
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.last(observe)


def env(
    ruleset: str, options: Mapping[str, Any] | None = None, seed: int | None = None, render_mode: str | None = None
) -> Any:
    """The AEC environment of ``ruleset`` in PettingZoo's order-enforcing wrapper (raises if
    used before ``reset``; :class:`OrderEnforcing`); ``env.unwrapped`` is the
    :class:`DaifugoEnv`."""
    return OrderEnforcing(raw_env(ruleset, options, seed, render_mode))


__all__ = [
    "env",
    "raw_env",
    "DaifugoEnv",
    "IllegalActionError",
    "RULESETS",
    "MAX_ACTIONS",
    "KINDS",
    "CANDIDATE_COLUMNS",
    "CANDIDATE_WIDTH",
]
