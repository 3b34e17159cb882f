"""The gate of dead code: no function, method or class of the product that nothing uses.

    python infra/dead_code.py        # exit status 1 and one line per finding, else 0

Vulture (a dev dependency) reads the product, the tests, the benches, the examples and the
starters; what the product defines and none of them uses is printed as
``path:line: unused function 'name'``. Only functions, methods and classes are judged here:
the unused variables vulture also reports are mostly serialised fields (schemas, typed dicts,
columns) that code reads by name.

What a framework calls by itself is not dead: functions under the decorators of
:data:`FRAMEWORK_DECORATORS` (routes, tasks, signals, commands...) and the names of
:data:`CALLED_BY_NAME` (hooks a library or a ``getattr`` dispatch calls). A name that must
stay for another reason goes there, with why. Run by infra/lint.sh.
"""

from __future__ import annotations

import sys
from pathlib import Path

from vulture import Vulture

REPO = Path(__file__).resolve().parents[1]
#: What is judged: the product's packages.
PRODUCT = ("engine", "bots_sdk", "arena", "api", "worker", "daifugo_arena")
#: What counts as a use besides the product (tests may be a helper's only caller).
USERS = ("tests", "bench", "examples", "starters", "infra")
#: Decorators whose functions a framework registers and calls (Flask, flask-smorest,
#: marshmallow, Celery, click, SQLAlchemy events).
FRAMEWORK_DECORATORS = [
    "@bp.*",
    "@*.route",
    "@app.*",
    "@*.arguments",
    "@*.response",
    "@*.command",
    "@*.group",
    "@signals.*",
    "@event.*",
    "@*.app_template_filter",
    "@*.app_context_processor",
    "@*.before_app_request",
    "@*.before_request",
    "@*.after_app_request",
    "@*.app_errorhandler",
    "@*.errorhandler",
    "@click.*",
    "@*.listens_for",
    "@*.setter",
    "@*.validates",
    "@*.validates_schema",
    "@*.pre_load",
    "@*.post_load",
    "@*.pre_dump",
    "@*.post_dump",
    "@*.task",
    "@*.connect",
]
#: Names called by name, not by a reference vulture sees.
CALLED_BY_NAME = [
    "CheckedPlayer",  # a Protocol: the runner's type of a player that tries answers (a person)
    "upgrade",  # alembic: each migration's
    "downgrade",
    "process_bind_param",  # SQLAlchemy TypeDecorator hooks (arena.crypto)
    "process_result_value",
    "*_helper",  # apispec plugin hooks (api.markdown)
    "load_config",  # gunicorn BaseApplication's hook (daifugo_arena.cli.service)
    "connect_unix_socket",  # httpcore's network backend interface (arena.bot_transport)
    "_parse_*",  # the engine's parsers and appliers, found by decision kind (engine.game)
    "_do_*",
    "play",  # the Bot's decisions, called by decision kind (bots_sdk.bot.Bot.decide)
    "doubt",
    "penalty",
    "exchange",
    "rate",
    "give",
    "discard",
    "_presence",  # marshmallow fields.Method("_presence") (api.resources.bots)
    "_warnings",
    "ReaperScheduler",  # celery beat -S worker.beat:ReaperScheduler (daifugo_arena.cli.worker)
]
JUDGED = ("function", "method", "class")


def findings() -> list[str]:
    vulture = Vulture(ignore_names=CALLED_BY_NAME, ignore_decorators=FRAMEWORK_DECORATORS)
    vulture.scavenge([str(REPO / p) for p in (*PRODUCT, *USERS) if (REPO / p).exists()])
    product = tuple(str(REPO / p) + "/" for p in PRODUCT)
    return [
        f"{Path(item.filename).relative_to(REPO)}:{item.first_lineno}: {item.message}"
        for item in vulture.get_unused_code(min_confidence=60)
        if item.typ in JUDGED and str(item.filename).startswith(product)
    ]


def main() -> int:
    found = findings()
    for line in found:
        print(line)
    if found:
        print(f"dead_code: {len(found)} unused (delete it, or name it in CALLED_BY_NAME with why)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
