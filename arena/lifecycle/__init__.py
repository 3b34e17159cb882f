"""Every status of a tournament, a match, a bot and a bot check, and every transition
between them.

This package is the only code that writes a ``status`` column of ``tournaments``,
``matches``, ``bots`` or ``bot_checks``; the values are :mod:`arena.status`'s. API views,
Celery tasks, the reaper and the command line call the functions re-exported here; each one
is a transaction of its own (it commits, or rolls back and raises) unless it says otherwise.

- :mod:`arena.lifecycle.tournaments`: create, start, store the schedule, resume, cancel, finish;
- :mod:`arena.lifecycle.claims`: claim a match (its lease, its plan) or say why it is skipped;
- :mod:`arena.lifecycle.matches`: store a result, fail, retry, renew and reap leases, re-send;
- :mod:`arena.lifecycle.waits`: a start that waits for offline entrants (begin, poll, end);
- :mod:`arena.lifecycle.checks`: begin, claim, progress, finish or error a bot check;
- :mod:`arena.lifecycle.bots`: change or delete a bot; the tournaments it is entered in;
- :mod:`arena.lifecycle.base`: errors, row locks, lock-or-404, the status vocabulary.

A match is *done* when it is ``finished``, ``cancelled`` or ``failed``. When the last match of
a running tournament is done, the transaction that made it done also marks the tournament
``finished``, exactly once (the tournament row is locked first: docs/design-notes.md,
"Finishing a tournament").

Errors: :class:`Conflict` (the transition is not allowed from the current status; the API
answers 409), :class:`NotFound` (404).
"""

from __future__ import annotations

from arena.lifecycle.base import (
    ACTIVE_CHECKS,
    DONE,
    MAX_FAILURE_CHARS,
    UNFINISHED,
    BotStatus,
    CheckStatus,
    Conflict,
    LifecycleError,
    MatchStatus,
    NotFound,
    TournamentStatus,
)
from arena.lifecycle.bots import delete_bot, entered_in, update_bot
from arena.lifecycle.checks import (
    CHECK_RETRY_AFTER_S,
    CHECK_STALE_S,
    CHECK_TIME_WINDOW_S,
    MAX_CHECKS_PER_ACCOUNT,
    CheckPlan,
    CheckRunning,
    TooManyChecks,
    begin_check,
    claim_check,
    error_check,
    finish_check,
    record_check_progress,
    release_check,
)
from arena.lifecycle.claims import (
    Claimed,
    ClaimResult,
    MatchPlan,
    SeatPlan,
    Skipped,
    SkipReason,
    claim_match,
    match_bot_urls,
)
from arena.lifecycle.matches import (
    Stored,
    fail_match,
    lost_queued,
    mark_queued,
    pending_pars,
    reap_expired,
    release_queued,
    renew_lease,
    requeue_match,
    retry_failed,
    skip_pars,
    store_pars,
    store_result,
)
from arena.lifecycle.tournaments import (
    RESUME_GUARD_S,
    RoundEnd,
    cancel_tournament,
    create_tournament,
    field_of,
    finish_if_done,
    first_round,
    pending_batch,
    resumable_matches,
    resume_would_help,
    round_end,
    stalled_tournaments,
    start_tournament,
    store_schedule,
    tournament_done,
    unfinished_count,
)
from arena.lifecycle.waits import begin_wait, end_wait, record_roll_call, take_roll_call_turn, waiting_tournaments

__all__ = [
    "ACTIVE_CHECKS",
    "CHECK_RETRY_AFTER_S",
    "CHECK_STALE_S",
    "CHECK_TIME_WINDOW_S",
    "DONE",
    "MAX_CHECKS_PER_ACCOUNT",
    "MAX_FAILURE_CHARS",
    "RESUME_GUARD_S",
    "UNFINISHED",
    "BotStatus",
    "CheckPlan",
    "CheckRunning",
    "CheckStatus",
    "ClaimResult",
    "Claimed",
    "Conflict",
    "LifecycleError",
    "MatchPlan",
    "MatchStatus",
    "NotFound",
    "SeatPlan",
    "RoundEnd",
    "SkipReason",
    "Skipped",
    "Stored",
    "TooManyChecks",
    "TournamentStatus",
    "begin_check",
    "cancel_tournament",
    "claim_check",
    "claim_match",
    "create_tournament",
    "delete_bot",
    "entered_in",
    "error_check",
    "fail_match",
    "finish_check",
    "field_of",
    "finish_if_done",
    "first_round",
    "lost_queued",
    "mark_queued",
    "match_bot_urls",
    "pending_batch",
    "reap_expired",
    "record_check_progress",
    "release_check",
    "release_queued",
    "renew_lease",
    "resumable_matches",
    "resume_would_help",
    "retry_failed",
    "round_end",
    "stalled_tournaments",
    "start_tournament",
    "pending_pars",
    "skip_pars",
    "requeue_match",
    "store_pars",
    "store_result",
    "store_schedule",
    "tournament_done",
    "unfinished_count",
    "update_bot",
    "begin_wait",
    "end_wait",
    "record_roll_call",
    "take_roll_call_turn",
    "waiting_tournaments",
]
