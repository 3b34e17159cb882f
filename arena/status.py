"""The status vocabulary of Daifugo Arena: every value a ``status`` column may hold.

One enum per table (``tournaments``, ``matches``, ``bots``, ``bot_checks``), in the order the
database constraints list them: the ``CHECK`` constraints of :mod:`arena.db.models`, the
API's enums (:mod:`api.resources`) and the pages are built from these. The transitions
between the statuses are :mod:`arena.lifecycle`'s. Standard library only.
"""

from __future__ import annotations

from enum import StrEnum


class TournamentStatus(StrEnum):
    """Status of a tournament (``tournaments.status``)::

    created --start--> running --(last match done)--> finished
       |                  |
       +-----cancel-------+----------------------------> cancelled
    """

    CREATED = "created"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"


class MatchStatus(StrEnum):
    """Status of a match (``matches.status``)::

    pending --queue--> queued --claim--> running --store_result--> finished
       ^                 ^                  |  \\--fail----------> failed --retry--> queued
       |                 +---(lease expired, or a queued one lost by the broker)
       +-- (cancel: pending/queued -> cancelled; a running match plays out)
    """

    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    #: Could not be played for a reason that is not a bot's (internal error, retries spent);
    #: ``matches.failure`` says why. The organizer may retry it.
    FAILED = "failed"


class BotStatus(StrEnum):
    """Status of a bot (``bots.status``).

    ::

        unchecked --begin_check--> checking --finish_check--> ready | failed
            ^                         |  (cannot be sent, abandoned: back to the status before)
            +---- update_bot (URL or rule sets changed) ---- ready | failed
        any --delete_bot--> deleted
    """

    UNCHECKED = "unchecked"
    CHECKING = "checking"
    READY = "ready"
    FAILED = "failed"
    DELETED = "deleted"


class BotTransport(StrEnum):
    """How the arena reaches a bot (``bots.transport``): ``http``, the arena calls the bot's
    URL; ``connect``, the bot dials out to a gateway (docs/protocol.md) and has no URL."""

    HTTP = "http"
    CONNECT = "connect"


class StopReason(StrEnum):
    """Why a tournament played until settled stopped adding rounds (``tournaments.stop_reason``;
    NULL for a tournament not played until settled, or not stopped yet): ``settled``, the
    sequential test (:mod:`arena.sequential`) found the top of the ranking settled;
    ``max_rounds``, the organizer's maximum of rounds was played without that."""

    SETTLED = "settled"
    MAX_ROUNDS = "max_rounds"


class TournamentFormat(StrEnum):
    """Where a tournament's matches come from (``tournaments.format``): its match source
    (:mod:`arena.sources`). ``round_robin``: one round of the schedule; ``until_settled``:
    rounds of it until the sequential test settles the ranking; ``ladder``: the sets of a
    ladder (:class:`arena.db.models.Ladder`), formed tick by tick, never finished;
    ``table``: the one match of a table where people play (:class:`arena.db.models.Table`,
    docs/tables.md)."""

    ROUND_ROBIN = "round_robin"
    UNTIL_SETTLED = "until_settled"
    LADDER = "ladder"
    TABLE = "table"


class TableKind(StrEnum):
    """Who opened a table (``tables.kind``): ``solo``, a person sitting down against bots;
    ``class``, an organizer's table for a class, whose people's seats signed-in students
    take by following its link."""

    SOLO = "solo"
    CLASS = "class"


class SeatKind(StrEnum):
    """Who sits in a seat of a table (``tables.seats[].kind``): a ``person``, a registered
    ``bot``, or a ``house`` sample bot."""

    PERSON = "person"
    BOT = "bot"
    HOUSE = "house"


class LadderStatus(StrEnum):
    """Status of a ladder (``ladders.status``): ``active`` (ticks form sets) or ``closed``
    (no new set; its table and history stay readable)."""

    ACTIVE = "active"
    CLOSED = "closed"


class EntryStatus(StrEnum):
    """Status of a bot's entry in a ladder (``ladder_entries.status``)::

    active <--pause/resume--> paused          (by its owner, or by the health rule)
    active|paused --withdraw--> withdrawn     (its rating and history stay)
    active|paused --a new version passed its check--> replaced
    house                                     (a house sample bot filling tables)
    """

    ACTIVE = "active"
    PAUSED = "paused"
    WITHDRAWN = "withdrawn"
    REPLACED = "replaced"
    HOUSE = "house"


class PausedBy(StrEnum):
    """Who paused a ladder entry (``ladder_entries.paused_by``): its ``owner``, or the
    ladder's ``health`` rule (faulty sets, a failed probe: back after a passing check)."""

    OWNER = "owner"
    HEALTH = "health"


class SetRating(StrEnum):
    """Where a ladder set stands with the ratings (``ladder_sets.rating``): ``pending`` (not
    stored, or stored and waiting for its pars), ``rated`` (one update, once), ``unrated``
    (a seat never made a valid decision: a forfeit or a withdrawal before play; never rated),
    ``void`` (cancelled or failed: no result), ``comparison`` (a new version against its
    parent on identical deals: compared, not rated)."""

    PENDING = "pending"
    RATED = "rated"
    UNRATED = "unrated"
    VOID = "void"
    COMPARISON = "comparison"


class CheckStatus(StrEnum):
    """Status of a bot check (``bot_checks.status``): ``queued -> running -> passed | failed``;
    ``error`` when it could not be run (no broker, abandoned by its worker, internal error)."""

    QUEUED = "queued"
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"


class ParStatus(StrEnum):
    """Whether a stored result has its pars (``match_results.par_status``, docs/ranking.md):
    ``pending`` (the par task is due), ``done`` (every game has its ``par``), ``skipped``
    (none computed: pars were off, ``ARENA_PAR_ROLLOUTS=0``, or a game cannot have one).
    NULL for results stored before pars existed."""

    PENDING = "pending"
    DONE = "done"
    SKIPPED = "skipped"


#: Matches still to be played.
UNFINISHED: tuple[MatchStatus, ...] = (MatchStatus.PENDING, MatchStatus.QUEUED, MatchStatus.RUNNING)
#: Matches that no longer keep their tournament running.
DONE: tuple[MatchStatus, ...] = (MatchStatus.FINISHED, MatchStatus.CANCELLED, MatchStatus.FAILED)
#: Checks still to finish.
ACTIVE_CHECKS: tuple[CheckStatus, ...] = (CheckStatus.QUEUED, CheckStatus.RUNNING)
#: The statuses a bot shows while it exists (every one but ``deleted``), as the API lists them.
LISTED_BOT_STATUSES: tuple[BotStatus, ...] = tuple(s for s in BotStatus if s is not BotStatus.DELETED)


def values(statuses: type[StrEnum] | tuple[StrEnum, ...]) -> tuple[str, ...]:
    """The plain string values of an enum's members (or of a tuple of members), in order:
    for SQL text and API schemas, where an enum member's ``repr`` must not leak."""
    return tuple(s.value for s in statuses)
