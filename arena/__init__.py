"""Daifugo Arena's shared core: what the API, the workers and the command line have in common.

Layers (import-linter contracts in ``pyproject.toml``, run by ``infra/lint.sh``)::

    daifugo_arena.cli    the ``arena`` command line (may import api, worker and the gateway)
    api | worker | daifugo_arena.gateway
                         the REST API and pages | the Celery tasks | the dial-out gateway
                         (independent of each other)
    arena                this package: configuration, persistence, lifecycle, the match runner
    bots_sdk             the bot protocol and SDK
    engine               the rules engine (standard library only)

docs/architecture.md maps the modules.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

try:
    __version__ = _version("daifugo-arena")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
