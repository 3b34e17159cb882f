"""Bots for the gateway-kill tests (``arena bots connect tests.gateway.stallbot:StallOnce``).

Both play as the sample ``random`` bot and write the first request's ``match_id``, ``game`` and
``unit`` to the file named by ``ARENA_TEST_STALL_FILE`` (whole, by a rename). :class:`StallOnce`
thinks for :data:`STALL_S` seconds on that first decision, longer than the test takes to kill
the gateway that relayed it: that answer is never sent (its connection is gone); the request,
queued again by the worker, comes back over the bot's next connection and is answered at once.
:class:`ThinkEach` thinks :data:`THINK_S` seconds on every decision: a match lasts long enough
for a test to kill its gateway mid-match, and the bot's own time per decision stays small.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bots_sdk.bot import Request
from bots_sdk.samples.random_bot import RandomBot

#: Seconds the first decision thinks (the test kills the gateway long before).
STALL_S = 60.0
#: Seconds each decision of :class:`ThinkEach` thinks.
THINK_S = 0.25


def write_marker(request: Mapping[str, Any] | Request) -> None:
    """The request's ``match_id``, ``game`` and ``unit``, to ``ARENA_TEST_STALL_FILE``."""
    target = Path(os.environ["ARENA_TEST_STALL_FILE"])
    tmp = target.with_suffix(".tmp")
    raw = request.raw if isinstance(request, Request) else request
    tmp.write_text(json.dumps({k: raw[k] for k in ("match_id", "game", "unit")}))
    os.replace(tmp, target)


class _MarksFirst(RandomBot):
    """The ``random`` sample bot (seed 7) that writes its first request's marker."""

    def __init__(self) -> None:
        super().__init__(seed=7)
        self._lock = threading.Lock()
        self._marked = False

    def first(self, request: Mapping[str, Any] | Request) -> bool:
        """Whether ``request`` is the first this bot is asked (its marker then written)."""
        with self._lock:
            first, self._marked = not self._marked, True
        if first:
            write_marker(request)
        return first


class StallOnce(_MarksFirst):
    name = "stall-once"

    def decide(self, request: Mapping[str, Any] | Request) -> dict:
        if self.first(request):
            threading.Event().wait(STALL_S)
        return super().decide(request)


class ThinkEach(_MarksFirst):
    name = "think-each"

    def decide(self, request: Mapping[str, Any] | Request) -> dict:
        self.first(request)
        threading.Event().wait(THINK_S)
        return super().decide(request)
