"""A bot that dials out, as a process of its own, for the tests of ``arena play`` and of the check:
the random sample over :func:`bots_sdk.connect.connect`, reading ``ARENA_GATEWAY_URL``,
``ARENA_BOT_ID`` and ``ARENA_BOT_SECRET`` as every starter does.

    python tests/dialout_bot.py [--no-pings] [--think-first S] [--pid-file PATH]

``--no-pings``: sends none of the protocol's keep-alive pings (the check and ``arena play`` warn);
``--think-first S``: its first decision takes S seconds (a match that lasts); ``--pid-file``:
writes its process id there once started (a test checks that it was stopped).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

# Run as a script, its folder (tests/) comes first on sys.path, where tests/engine (a folder of
# tests, no package) would stand in for the engine package: the packages come from the install.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

from bots_sdk.bot import Request  # noqa: E402
from bots_sdk.connect import KEEPALIVE_S, connect  # noqa: E402
from bots_sdk.samples import RandomBot  # noqa: E402


class FirstThinker(RandomBot):
    """The random sample whose first decision takes ``first_s`` seconds."""

    name = "dialout-test-bot"

    def __init__(self, first_s: float):
        super().__init__(seed=1)
        self.first_s = first_s

    def decide(self, request: Request) -> dict:
        if self.first_s > 0:
            first, self.first_s = self.first_s, 0.0
            time.sleep(first)
        return super().decide(request)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-pings", action="store_true")
    parser.add_argument("--think-first", type=float, default=0.0)
    parser.add_argument("--pid-file", type=Path, default=None)
    args = parser.parse_args()
    if args.pid_file is not None:
        args.pid_file.write_text(str(os.getpid()))
    connect(
        FirstThinker(args.think_first),
        os.environ["ARENA_GATEWAY_URL"],
        bot_id=int(os.environ["ARENA_BOT_ID"]),
        keepalive_s=None if args.no_pings else KEEPALIVE_S,
    )


if __name__ == "__main__":
    main()
