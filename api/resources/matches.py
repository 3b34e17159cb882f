"""Matches and their logs: ``GET /api/v1/matches/{id}`` and ``GET /api/v1/matches/{id}/log``.

Who may read a match: :func:`arena.access.can_read_match` (organizers; owners of a seated
bot; once the tournament finished, owners of any participant; anyone when the tournament is
public). Its log: :func:`arena.access.can_read_log` (the same, but contestants only once
the tournament is over: log embargo). The match ``seed`` is null, for organizers too, until
the tournament's seed is revealed (:func:`arena.access.can_see_seed`; a ladder set's once it
is stored: :func:`arena.access.can_see_match_seed`).
"""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest import Blueprint

from api.auth import BEARER, optional_account, protect
from api.common import errors
from api.database import db, match_log_download
from api.errors import abort
from arena import access as policy
from arena.db.models import Match, Tournament

blp = Blueprint("matches", __name__, url_prefix="/api/v1/matches", description="Matches and match logs")
protect(blp, anonymous_reads=True)


class SeatSchema(ma.Schema):
    seat = ma.fields.Integer(required=True)
    bot_id = ma.fields.Integer(allow_none=True)
    house_bot = ma.fields.String(allow_none=True)
    account_id = ma.fields.Integer(
        allow_none=True, metadata={"description": "the person playing the seat at a table (docs/tables.md)"}
    )


class ResultSchema(ma.Schema):
    scores = ma.fields.List(ma.fields.Float(), required=True, metadata={"description": "per seat"})
    places = ma.fields.List(ma.fields.Integer(), required=True, metadata={"description": "per seat, 1 = first"})
    faults = ma.fields.List(ma.fields.Integer(), required=True, metadata={"description": "per seat"})
    games = ma.fields.List(
        ma.fields.Dict(),
        required=True,
        metadata={
            "description": "per game: scores and places per seat, and once computed (par_status done) par per "
            "seat: the adjusted score is scores - par (docs/ranking.md)"
        },
    )
    timings = ma.fields.Dict(required=True)
    par_status = ma.fields.String(
        allow_none=True,
        metadata={
            "description": "pending (the pars are being computed), done, skipped (none); null for results "
            "stored before pars existed"
        },
    )


class MatchSchema(ma.Schema):
    id = ma.fields.Integer(required=True)
    tournament_id = ma.fields.Integer(required=True)
    index = ma.fields.Integer(required=True)
    table = ma.fields.Integer(required=True)
    seed = ma.fields.Integer(
        allow_none=True,
        metadata={"description": "null for everyone, organizers included, until the tournament's seed is revealed"},
    )
    status = ma.fields.String(required=True)
    attempts = ma.fields.Integer(required=True)
    seats = ma.fields.List(ma.fields.Nested(SeatSchema), required=True)
    result = ma.fields.Nested(ResultSchema, allow_none=True)
    created_at = ma.fields.DateTime(required=True)
    started_at = ma.fields.DateTime(allow_none=True)
    finished_at = ma.fields.DateTime(allow_none=True)
    failure = ma.fields.String(
        allow_none=True,
        metadata={"description": "why a failed match could not be played (not a bot's fault); null otherwise"},
    )


def match_dict(m: Match, *, show_seed: bool = False) -> dict:
    """The API shape of a match; ``seed`` only with ``show_seed``
    (:func:`arena.access.can_see_seed`)."""
    r = m.result
    return {
        "id": m.id,
        "tournament_id": m.tournament_id,
        "index": m.index,
        "table": m.table,
        "seed": m.seed if show_seed else None,
        "status": m.status,
        "attempts": m.attempts,
        "failure": m.failure,
        "seats": [
            {"seat": s.seat, "bot_id": s.bot_id, "house_bot": s.house_bot, "account_id": s.account_id} for s in m.seats
        ],
        "result": None
        if r is None
        else {
            "scores": r.scores,
            "places": r.places,
            "faults": r.faults,
            "games": r.games,
            "timings": r.timings,
            "par_status": r.par_status,
        },
        "created_at": m.created_at,
        "started_at": m.started_at,
        "finished_at": m.finished_at,
    }


def readable_match(match_id: int, *, log: bool = False) -> Match:
    """The match if the viewer may read it (``log``: its log, under the embargo); 401/403/404."""
    account = optional_account()
    m = db().get(Match, match_id)
    if m is None:
        if account is None:
            abort(401, "missing bearer token (Authorization: Bearer <token>): the match is not public")
        abort(404, f"match {match_id} not found")
    t = db().get(Tournament, m.tournament_id)
    assert t is not None  # matches.tournament_id is a foreign key
    if not policy.can_read_match(db(), account, m, t):
        if account is None:
            abort(401, "missing bearer token (Authorization: Bearer <token>): the match is not public")
        abort(403, f"match {match_id} is not visible to you")
    if log and not policy.can_read_log(db(), account, m, t):
        abort(403, f"the log of match {match_id} is embargoed until tournament {t.id} is finished")
    return m


@blp.route("/<int(min=1, max=2147483647):match_id>")
class MatchById(MethodView):
    @blp.doc(security=BEARER)
    @blp.response(200, MatchSchema)
    @errors(blp, 401, 403, 404)
    def get(self, match_id):
        """A match: seats, status, result (scores, places, faults per seat, games), timings."""
        m = readable_match(match_id)
        t = db().get(Tournament, m.tournament_id)
        assert t is not None
        return match_dict(m, show_seed=policy.can_see_match_seed(db(), optional_account(), m, t))


@blp.route("/<int(min=1, max=2147483647):match_id>/log")
class MatchLogById(MethodView):
    @blp.doc(
        security=BEARER,
        responses={
            "200": {
                "description": "the full match log (JSON download, filename match-<id>.json)",
                "content": {"application/json": {"schema": {"type": "object"}}},
            }
        },
    )
    @errors(blp, 401, 403, 404)
    def get(self, match_id):
        """The full log of a finished match as a JSON download; 404 until it is stored; 403
        for contestants while the tournament is not over (log embargo)."""
        response, missing = match_log_download(readable_match(match_id, log=True), optional_account())
        if response is None:
            abort(404, missing)
        return response
