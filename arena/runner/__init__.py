"""The match runner: plays one match between players under the time rules and writes its log.

:mod:`arena.runner.players` (a bot over HTTP, or in-process), :mod:`arena.runner.semaphore`
(the per-bot cap on concurrent requests, in Redis), :mod:`arena.runner.match` (``run_match``,
``replay``, ``verify_logs``), :mod:`arena.runner.service` (``play_and_store``: claim a
scheduled match, play it, store its result; what the Celery task runs).
"""
