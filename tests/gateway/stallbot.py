"""A bot for the gateway-kill test (``arena bots connect tests.gateway.stallbot:StallOnce``).

It plays as the sample ``random`` bot, but the first decision it is asked holds: it writes the
request's ``match_id``, ``game`` and ``unit`` to the file named by ``ARENA_TEST_STALL_FILE``
(whole, by a rename) and thinks for :data:`STALL_S` seconds, longer than the test takes to kill
the gateway that relayed it. That answer is never sent (its connection is gone); the request,
queued again by the worker, comes back over the bot's next connection and is answered at once.
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


class StallOnce(RandomBot):
    name = "stall-once"

    def __init__(self) -> None:
        super().__init__(seed=7)
        self._lock = threading.Lock()
        self._stalled = False

    def decide(self, request: Mapping[str, Any] | Request) -> dict:
        with self._lock:
            first, self._stalled = not self._stalled, True
        if first:
            target = Path(os.environ["ARENA_TEST_STALL_FILE"])
            tmp = target.with_suffix(".tmp")
            raw = request.raw if isinstance(request, Request) else request
            tmp.write_text(json.dumps({k: raw[k] for k in ("match_id", "game", "unit")}))
            os.replace(tmp, target)
            threading.Event().wait(STALL_S)
        return super().decide(request)
