"""The one status vocabulary (arena.status): the database constraints, the API's enums and
the pages are built from it, and the migrated schema holds exactly what the models say
(so changing a status needs a migration); arena.lifecycle still exports every name it did
before it became a package."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from marshmallow import validate
from sqlalchemy import CheckConstraint, inspect

from api.resources.bots import BotSchema
from api.resources.tournament_schemas import MatchListArgs
from api.ui.i18n import _STATUS_MESSAGES
from arena import lifecycle
from arena.db.migrate import upgrade
from arena.db.models import Base, Bot, BotCheck, Match, Tournament
from arena.db.session import make_engine
from arena.status import (
    LISTED_BOT_STATUSES,
    BotStatus,
    CheckStatus,
    EntryStatus,
    LadderStatus,
    MatchStatus,
    SetRating,
    TournamentStatus,
    values,
)
from tests.helpers import create_pg_database

#: Each table with a status column and the enum of its values.
STATUS_TABLES = {
    Tournament.__table__: TournamentStatus,
    Match.__table__: MatchStatus,
    Bot.__table__: BotStatus,
    BotCheck.__table__: CheckStatus,
}

#: The constraint texts the migrations wrote (0001, 0003 and 0007).
MIGRATED_TEXT = {
    "tournaments": "status IN ('created', 'running', 'finished', 'cancelled')",
    "matches": "status IN ('pending', 'queued', 'running', 'finished', 'cancelled', 'failed')",
    "bots": "status IN ('unchecked', 'checking', 'ready', 'failed', 'deleted')",
    "bot_checks": "status IN ('queued', 'running', 'passed', 'failed', 'error')",
}


def _status_constraint(table) -> CheckConstraint:
    (ck,) = [c for c in table.constraints if isinstance(c, CheckConstraint) and c.name == f"ck_{table.name}_status"]
    return ck


def test_model_constraints_are_built_from_the_enums():
    for table, enum in STATUS_TABLES.items():
        text = str(_status_constraint(table).sqltext)
        assert text == MIGRATED_TEXT[table.name]
        assert text == "status IN (" + ", ".join(f"'{s.value}'" for s in enum) + ")"
        assert table.c.status.default.arg == list(enum)[0].value  # the first status is the default


def _check_constraints(engine) -> dict[str, list[dict]]:
    insp = inspect(engine)
    return {t.name: sorted(insp.get_check_constraints(t.name), key=lambda c: str(c["name"])) for t in STATUS_TABLES}


def test_migrated_schema_equals_the_models(database_url, tmp_path, request):
    """The constraints Alembic created are those the models would create (compared as the
    database reports them), and autogenerate finds nothing to migrate."""
    upgrade(database_url)
    migrated = make_engine(database_url)
    if database_url.startswith("sqlite"):
        fresh_url = f"sqlite:///{tmp_path / 'fresh.db'}"
    else:
        fresh_url = create_pg_database(request.getfixturevalue("pg_url"), "t")
    fresh = make_engine(fresh_url)
    try:
        Base.metadata.create_all(fresh)
        got, want = _check_constraints(migrated), _check_constraints(fresh)
        assert got == want
        for name, constraints in got.items():
            assert f"ck_{name}_status" in [c["name"] for c in constraints]
        with migrated.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    finally:
        migrated.dispose()
        fresh.dispose()


def _choices(field) -> list[str]:
    (one_of,) = [v for v in field.validators if isinstance(v, validate.OneOf)]
    return list(one_of.choices)


def test_api_enums_are_built_from_the_enums():
    assert _choices(BotSchema().fields["status"]) == ["unchecked", "checking", "ready", "failed"]
    assert _choices(BotSchema().fields["status"]) == list(values(LISTED_BOT_STATUSES))
    assert _choices(MatchListArgs().fields["status"]) == list(values(MatchStatus))
    assert all(type(c) is str for c in _choices(MatchListArgs().fields["status"]))  # no enum repr in the spec


def test_pages_name_every_tournament_and_match_status():
    for status in [*TournamentStatus, *MatchStatus]:
        assert _STATUS_MESSAGES[status] == status.value


def test_pages_name_every_ladder_entry_and_set_status():
    for status in [*LadderStatus, *EntryStatus, *SetRating]:
        assert _STATUS_MESSAGES[status] == status.value


#: Every public name of arena/lifecycle.py before it became a package.
PUBLIC_NAMES = (
    "TournamentStatus MatchStatus UNFINISHED DONE MAX_FAILURE_CHARS LifecycleError Conflict NotFound "
    "create_tournament start_tournament release_queued store_schedule pending_batch mark_queued "
    "RESUME_GUARD_S resumable_matches cancel_tournament unfinished_count finish_if_done SeatPlan "
    "MatchPlan SkipReason Claimed Skipped ClaimResult claim_match match_bot_urls store_result "
    "fail_match retry_failed renew_lease reap_expired lost_queued stalled_tournaments "
    "tournament_done BotStatus CheckStatus ACTIVE_CHECKS MAX_CHECKS_PER_ACCOUNT CHECK_STALE_S "
    "CHECK_RETRY_AFTER_S CheckRunning TooManyChecks CHECK_TIME_WINDOW_S CheckPlan begin_check "
    "release_check claim_check record_check_progress finish_check error_check entered_in "
    "update_bot delete_bot"
).split()
#: Names added since: play until settled (a store that ends a round may add the next one) and
#: the pars (luck-adjusted scores); the match sources (a round comes from the source:
#: first_round); Resume where it helps and a start that waits for offline entrants (issue 42);
#: a match the arena's own outage stopped, queued again.
ADDED_NAMES = (
    "Stored RoundEnd round_end first_round field_of store_pars skip_pars pending_pars resume_would_help "
    "begin_wait end_wait record_roll_call take_roll_call_turn waiting_tournaments requeue_match"
).split()


def test_lifecycle_exports_every_name_it_had():
    assert sorted(lifecycle.__all__) == sorted(PUBLIC_NAMES + list(ADDED_NAMES))
    for name in PUBLIC_NAMES:
        assert getattr(lifecycle, name) is not None
    assert lifecycle.MatchStatus is MatchStatus and lifecycle.BotStatus is BotStatus
    assert issubclass(lifecycle.CheckRunning, lifecycle.Conflict)
    assert issubclass(lifecycle.TooManyChecks, lifecycle.LifecycleError)
