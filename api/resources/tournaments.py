"""Tournaments (organizers create, start and cancel; any account reads).

Creating validates the rule set, its options (``engine.make_options``: 422 naming the
option), the time rules (TIME-1, seconds), the participants (existing ``ready`` bots that play
the rule set) and the games per pairing. Starting builds the whole schedule
(:mod:`arena.schedule`), stores one ``matches`` row per match and enqueues one
``arena.run_match`` task per match. If the broker is down the start answers 503 and the
matches stay ``pending``; starting again enqueues them. For more than
``INLINE_START_PARTICIPANTS`` participants, building, storing and enqueueing happen on a worker
(``arena.enqueue_tournament``, :mod:`arena.usecases.tournaments`): the start answers at once.
Each view parses, calls its use case (:mod:`arena.usecases.tournaments`) and returns.

Fairness (docs/fairness.md): the seed is drawn when the tournament starts, in the transaction
that publishes its ``commitment``; ``seed``, ``salt`` and the match seeds are null for
everyone, organizers included, until the seed is revealed (:func:`arena.access.can_see_seed`).
A seed the organizer set (``seed`` on create) marks the tournament ``seed_chosen`` (left out
of the ratings). Logs are embargoed for contestants until the tournament is over.

Play until settled (docs/ranking.md): ``until_settled`` adds rounds of the schedule until the
sequential test (:mod:`arena.sequential`) finds the top settled or ``max_rounds`` is reached;
``rounds``, ``stop_reason`` and ``settle`` (the test's last verdict) say where it stands.
"""

from __future__ import annotations

from flask.views import MethodView
from flask_smorest import Blueprint
from sqlalchemy import ColumnElement, exists, func, select
from sqlalchemy.orm import selectinload

from api.auth import BEARER, optional_account, protect, require_organizer
from api.common import PageArgs, errors, paginate_query
from api.database import db, dispatcher, redis_client, settings, tournament_logs_download
from api.errors import abort
from api.resources.matches import match_dict
from api.resources.tournament_schemas import (
    TIE_BREAK,
    MatchListArgs,
    MatchPageSchema,
    ResumeQuerySchema,
    StandingsSchema,
    StartQuerySchema,
    TournamentCreateSchema,
    TournamentPageSchema,
    TournamentSchema,
)
from arena import access as policy
from arena import roll_call
from arena.db.models import Match, MatchSeat, Tournament
from arena.lifecycle import MatchStatus, TournamentStatus
from arena.standings import standings_dict
from arena.status import TournamentFormat
from arena.usecases import entrants
from arena.usecases import tournaments as usecases
from arena.usecases.tournaments import INLINE_SEND_MATCHES, INLINE_START_PARTICIPANTS

__all__ = ["INLINE_SEND_MATCHES", "INLINE_START_PARTICIPANTS", "blp"]

blp = Blueprint(
    "tournaments",
    __name__,
    url_prefix="/api/v1/tournaments",
    description="Round-robin tournaments, their matches, standings and logs",
)
protect(blp, organizer_methods=("POST",), anonymous_reads=True)


def progress_counts(tournament_ids: list[int]) -> dict[int, tuple[int, int, int]]:
    """``{tournament id: (finished matches, all matches, matches not pending)}`` in one
    grouped query."""
    if not tournament_ids:
        return {}
    rows = db().execute(
        select(
            Match.tournament_id,
            func.count(),
            func.count().filter(Match.status == MatchStatus.FINISHED),
            func.count().filter(Match.status != MatchStatus.PENDING),
        )
        .where(Match.tournament_id.in_(tournament_ids))
        .group_by(Match.tournament_id)
    )
    return {tid: (int(done), int(total), int(sent)) for tid, total, done, sent in rows}


def tournament_dict(t: Tournament, progress: tuple[int, int, int] | None = None) -> dict:
    """The API shape of a tournament (seed and salt only once revealed:
    :func:`arena.access.can_see_seed`); ``progress`` = ``(finished, total, queued)``
    if already counted."""
    finished, total, queued = progress if progress is not None else progress_counts([t.id]).get(t.id, (0, 0, 0))
    revealed = policy.seed_revealed(db(), t)
    return {
        "id": t.id,
        "name": t.name,
        "organizer_id": t.organizer_id,
        "ruleset": t.ruleset,
        "options": t.options,
        "time_rules": t.time_rules,
        "games_per_pairing": t.games_per_pairing,
        "seed": t.seed if revealed else None,
        "salt": t.salt if revealed else None,
        "commitment": t.commitment,
        "seed_revealed": revealed,
        "seed_chosen": bool(t.seed_chosen),
        "until_settled": t.until_settled,
        "rounds": t.rounds or 1,
        "stop_reason": t.stop_reason,
        "settle": t.settle,
        "max_faults": t.max_faults,
        "fill_with_house_bots": t.fill_with_house_bots,
        "house_bot": t.house_bot,
        "separate_owners": bool(t.separate_owners),
        "format": t.format,
        "public_when_finished": t.public_when_finished,
        "participants": [p.bot_id for p in t.participants],
        "status": t.status,
        "waiting_until": t.waiting_until if t.status == TournamentStatus.CREATED else None,
        "roll_call": t.roll_call if t.roll_call and "offline" in t.roll_call else None,
        "progress": {"finished": finished, "total": total, "queued": queued},
        "created_at": t.created_at,
        "started_at": t.started_at,
        "finished_at": t.finished_at,
    }


def get_tournament(tournament_id: int) -> Tournament:
    """The tournament if the request's viewer may see it (:mod:`arena.access`).

    404 if there is none; an anonymous reader gets 401 for a tournament that is missing or
    not public (nothing tells it whether the tournament exists)."""
    viewer = optional_account()
    t = db().get(Tournament, tournament_id)
    if t is not None and t.format == TournamentFormat.LADDER:  # a ladder's sets: /api/v1/ladders/{id}
        t = None
    if t is None or not policy.can_view_tournament(db(), viewer, t):
        if viewer is None:
            abort(401, "missing bearer token (Authorization: Bearer <token>): the tournament is not public")
        abort(404, f"tournament {tournament_id} not found")
    return t


@blp.route("")
class Tournaments(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(TournamentCreateSchema)
    @blp.response(201, TournamentSchema)
    @errors(blp, 401, 403)
    def post(self, data):
        """Create a tournament (organizers)."""
        return tournament_dict(usecases.create_tournament(db(), require_organizer(), **data))

    @blp.doc(security=BEARER)
    @blp.arguments(PageArgs, location="query")
    @blp.response(200, TournamentPageSchema)
    @errors(blp, 401)
    def get(self, args):
        """All tournaments, newest first, paginated (without a token: the public ones)."""
        # a ladder's sets: /api/v1/ladders; a table's match: /api/v1/tables
        cond: list[ColumnElement[bool]] = [
            Tournament.format.not_in([TournamentFormat.LADDER.value, TournamentFormat.TABLE.value])
        ]
        if optional_account() is None:
            cond += [Tournament.status == TournamentStatus.FINISHED, Tournament.public_when_finished.is_(True)]
        items, total = paginate_query(
            db(),
            select(Tournament)
            .where(*cond)
            .order_by(Tournament.id.desc())
            .options(selectinload(Tournament.participants)),
            select(func.count()).select_from(Tournament).where(*cond),
            args["page"],
            args["per_page"],
        )
        counts = progress_counts([t.id for t in items])
        return {
            "items": [tournament_dict(t, counts.get(t.id, (0, 0, 0))) for t in items],
            "total": total,
            "page": args["page"],
            "per_page": args["per_page"],
        }


@blp.route("/<int(min=1, max=2147483647):tournament_id>")
class TournamentById(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, TournamentSchema)
    @errors(blp, 401, 404)
    def get(self, tournament_id):
        """A tournament with its progress (matches finished / total)."""
        return tournament_dict(get_tournament(tournament_id))


@blp.route("/<int(min=1, max=2147483647):tournament_id>/start")
class TournamentStart(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(StartQuerySchema, location="query")
    @blp.response(202, TournamentSchema)
    @errors(blp, 401, 403, 404, 409, 503)
    def post(self, query, tournament_id):
        """Start (organizers): the tournament becomes ``running`` and its matches are
        scheduled and enqueued. Up to :data:`INLINE_START_PARTICIPANTS` participants the
        schedule is stored in the request and its first :data:`INLINE_SEND_MATCHES` matches
        are sent (a worker's ``arena.enqueue_tournament`` sends the others); for a larger
        field a worker builds and stores the schedule and enqueues its matches, so the
        answer comes at once whatever the field: ``progress.total`` counts the stored matches (0 until the
        schedule is stored, seconds later) and ``progress.queued`` those sent so far.

        First a roll call of the entrants (a bot that dials out and holds no connection, a bot
        the arena calls whose health check fails, within 3 s): with someone offline,
        ``if_offline=ask`` (the default) answers 409 with ``details.offline`` (each bot, why)
        and changes nothing; ``wait`` keeps the tournament ``created`` with ``waiting_until``
        (202): a worker polls every few seconds and starts it once everyone is online or the
        time is up, and each offline bot's owner is told (webhook ``entrant.offline``, the
        bot's page); ``start`` starts at once without them. ``roll_call`` keeps who was offline.

        409 if finished or cancelled, or already running with nothing left to enqueue;
        503 if the task broker is unreachable: the tournament is running, with what was sent
        so far; start again to send the rest (``arena beat``'s reaper also sends it by
        itself once the broker is back, after ``ARENA_LOST_AFTER_S``).
        """
        roll = roll_call.caller(redis_client(), allow_private=settings().allow_private_bot_urls)
        outcome = entrants.start_or_wait(
            db(),
            dispatcher(),
            require_organizer(),
            tournament_id,
            roll,
            if_offline=query["if_offline"],
            wait_s=query["wait_s"],
        )
        return tournament_dict(outcome.tournament)


@blp.route("/<int(min=1, max=2147483647):tournament_id>/resume")
class TournamentResume(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(ResumeQuerySchema, location="query")
    @blp.response(202, TournamentSchema)
    @errors(blp, 401, 403, 404, 409, 503)
    def post(self, query, tournament_id):
        """Re-enqueue (organizers) every match of a running tournament that has no result:
        ``pending`` and ``queued`` ones, and ``running`` ones with ``include_running``.

        For a broker that lost its queue (a Redis restart without persistence). Tasks are
        idempotent: a match delivered twice is played at most once more and stored once.
        409 if the tournament is not running or nothing is left; 503 if the broker is down.
        """
        t = usecases.resume_tournament(
            db(), dispatcher(), require_organizer(), tournament_id, include_running=query["include_running"]
        )
        return tournament_dict(t)


@blp.route("/<int(min=1, max=2147483647):tournament_id>/cancel")
class TournamentCancel(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, TournamentSchema)
    @errors(blp, 401, 403, 404, 409)
    def post(self, tournament_id):
        """Cancel (organizers): matches not yet finished are cancelled; 409 if finished/cancelled.

        A match already being played finishes and keeps its result; the worker skips the others.
        """
        return tournament_dict(usecases.cancel_tournament(db(), require_organizer(), tournament_id, dispatcher()))


@blp.route("/<int(min=1, max=2147483647):tournament_id>/retry")
class TournamentRetry(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(202, TournamentSchema)
    @errors(blp, 401, 403, 404, 409, 503)
    def post(self, tournament_id):
        """Play the tournament's ``failed`` matches again (organizers).

        A failed match could not be played for a reason that is not a bot's (its ``failure``
        says why). Its status goes back to ``queued``; a finished tournament runs again until
        they are done. 409 if cancelled or nothing failed; 503 if the broker is down (the
        matches are then ``pending``: start the tournament again to send them).
        """
        t = usecases.retry_tournament(db(), dispatcher(), require_organizer(), tournament_id, settings=settings())
        return tournament_dict(t)


@blp.route("/<int(min=1, max=2147483647):tournament_id>/standings")
class TournamentStandings(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, StandingsSchema)
    @errors(blp, 401, 404)
    def get(self, tournament_id):
        """Standings from the stored results, and what is settled.

        Raw and adjusted (score minus par) means per game with 95% intervals; for each pair of
        neighbours in the order, the difference and whether it is significant at 95%; whether
        the ranking and its first place are settled (docs/ranking.md).
        """
        t = get_tournament(tournament_id)
        return {"tournament_id": t.id, "ruleset": t.ruleset, "tie_break": TIE_BREAK, **standings_dict(db(), t)}


@blp.route("/<int(min=1, max=2147483647):tournament_id>/matches")
class TournamentMatches(MethodView):
    @blp.doc(security=BEARER)
    @blp.arguments(MatchListArgs, location="query")
    @blp.response(200, MatchPageSchema)
    @errors(blp, 401, 404)
    def get(self, args, tournament_id):
        """Matches of the tournament in schedule order, paginated; filter by ``bot_id``, ``status``.

        Contestants see the matches of their own bots (all matches once the tournament
        finished, if one of their bots took part); organizers see all.
        """
        t = get_tournament(tournament_id)
        cond = [Match.tournament_id == t.id]
        visible = policy.visible_matches_condition(db(), optional_account(), t)
        if visible is not None:
            cond.append(visible)
        if "bot_id" in args:
            cond.append(exists().where(MatchSeat.match_id == Match.id, MatchSeat.bot_id == args["bot_id"]))
        if "status" in args:
            cond.append(Match.status == args["status"])
        stmt = (
            select(Match)
            .where(*cond)
            .order_by(Match.index)
            .options(selectinload(Match.seats), selectinload(Match.result))
        )
        items, total = paginate_query(
            db(), stmt, select(func.count()).select_from(Match).where(*cond), args["page"], args["per_page"]
        )
        viewer = optional_account()
        return {
            "items": [match_dict(m, show_seed=policy.can_see_match_seed(db(), viewer, m, t)) for m in items],
            "total": total,
            "page": args["page"],
            "per_page": args["per_page"],
        }


@blp.route("/<int(min=1, max=2147483647):tournament_id>/logs")
class TournamentLogs(MethodView):
    @blp.doc(
        security=BEARER,
        responses={
            "200": {
                "description": 'JSON Lines: first ``{"tournament": {...}}`` (this tournament as '
                "``GET /tournaments/{id}`` shows it to you: the seed commitment, and the seed and salt once "
                'revealed), then one ``{"match_id": n, "log": {...}}`` per match log. '
                "``arena logs verify FILE`` replays every log and checks the commitment",
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        },
    )
    @errors(blp, 401, 403, 404)
    def get(self, tournament_id):
        """All logs you may read of a tournament as a streamed JSON Lines download.

        Organizers get every log; once the tournament is over, owners of a participant get
        the logs of every match (without other bots' URLs); before that, and for others, 403
        (log embargo). The first line is the tournament (its commitment, and seed and salt
        once revealed), so ``arena logs verify`` checks the file alone. Rows are fetched in
        batches while streaming.
        """
        t = get_tournament(tournament_id)
        account = optional_account()
        if not policy.can_download_tournament_logs(db(), account, t):
            if policy.is_over(t) or account is None or not policy.owns_participant(db(), account, t.id):
                abort(403, f"none of your bots takes part in tournament {t.id}")
            abort(403, f"the logs of tournament {t.id} are embargoed until it is finished")
        return tournament_logs_download(t, account, tournament_dict(t))
