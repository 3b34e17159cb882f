"""The shared core: everything the API, the workers and the command line have in common.

Layers (enforced by the import-linter contract in ``pyproject.toml``, run by ``.ci/run``)::

    arena.cli            the command line (may import api and worker)
    api | worker         the REST API and pages | the Celery tasks (independent of each other)
    arena.core           this package: configuration, persistence, lifecycle, the match runner
    bots_sdk             the bot protocol and SDK
    engine               the rules engine (standard library only)

Modules: :mod:`arena.core.config` (settings), :mod:`arena.core.db` (models, sessions,
migrations), :mod:`arena.core.lifecycle` (every status change of a tournament or a match),
:mod:`arena.core.access` (who may read what), :mod:`arena.core.url_policy` (which bot URLs
are accepted), :mod:`arena.core.matchlog` (the match-log format and its one codec),
:mod:`arena.core.runner` (the match runner and its players), :mod:`arena.core.schedule`,
:mod:`arena.core.standings`, :mod:`arena.core.queue` (enqueueing matches).
"""
