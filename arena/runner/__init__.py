"""The match runner: plays one match between players under the time rules and writes its log.

Pure (no database, no Celery): :mod:`arena.runner.players` (the :class:`Player` protocol: a
bot over HTTP, in-process, or withdrawn), :mod:`arena.runner.capped` (an HTTP player whose
requests hold a slot of :mod:`arena.runner.semaphore`, the per-endpoint cap in Redis, and
:mod:`arena.runner.claims`, the per-endpoint cap on matches), :mod:`arena.runner.match`
(the :class:`Match` object and ``run_match``), :mod:`arena.runner.replay` (``replay``,
``check_fairness``, ``verify_logs``), :mod:`arena.runner.redact` (URL redaction),
:mod:`arena.runner.answers` (answer bytes -> action or fault). Claiming, storing and
spooling a scheduled match is :mod:`arena.delivery` (``play_and_store``).
"""
