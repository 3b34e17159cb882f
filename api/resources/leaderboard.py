"""``GET /api/v1/leaderboard?ruleset=...``: openskill ratings across tournaments (public).

Reads the ``ratings`` table (kept by the worker with arena.standings.rebuild_ratings);
ordered by the conservative ordinal ``mu - 3 sigma``, best first. Per bot: ``games`` (games
played in the rated matches: a Million Doubt match of 10 games counts 10) and ``matches``.
"""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import validate
from sqlalchemy import func, select

import engine
from api.common import PageArgs, errors
from api.database import db
from arena.db.models import Account, Bot, Match, MatchResult, MatchSeat, Rating, Tournament
from arena.standings import rated_tournaments

blp = Blueprint(
    "leaderboard", __name__, url_prefix="/api/v1/leaderboard", description="Ratings per rule set across tournaments"
)


class LeaderboardArgs(PageArgs):
    ruleset = ma.fields.String(required=True, validate=validate.OneOf(engine.RULESETS))


class LeaderRowSchema(ma.Schema):
    rank = ma.fields.Integer(required=True)
    bot_id = ma.fields.Integer(required=True)
    bot_name = ma.fields.String(required=True)
    owner = ma.fields.String(required=True)
    mu = ma.fields.Float(required=True)
    sigma = ma.fields.Float(required=True)
    ordinal = ma.fields.Float(required=True)
    games = ma.fields.Integer(required=True, metadata={"description": "games played in the rated matches"})
    matches = ma.fields.Integer(required=True, metadata={"description": "finished matches rated"})


class LeaderboardSchema(ma.Schema):
    ruleset = ma.fields.String(required=True)
    total = ma.fields.Integer(required=True)
    page = ma.fields.Integer(required=True)
    per_page = ma.fields.Integer(required=True)
    items = ma.fields.List(ma.fields.Nested(LeaderRowSchema), required=True)


def _matches_played(ruleset: str, bot_ids: list[int]) -> dict[int, int]:
    """Bot id -> its finished matches (with a stored result) in ``ruleset``'s rated tournaments
    (:func:`arena.standings.rated_tournaments`), one grouped query."""
    if not bot_ids:
        return {}
    rows = (
        db()
        .execute(
            select(MatchSeat.bot_id, func.count(func.distinct(Match.id)))
            .join(Match, Match.id == MatchSeat.match_id)
            .join(MatchResult, MatchResult.match_id == Match.id)
            .join(Tournament, Tournament.id == Match.tournament_id)
            .where(rated_tournaments(ruleset), MatchSeat.bot_id.in_(bot_ids))
            .group_by(MatchSeat.bot_id)
        )
        .all()
    )
    return {bot_id: n for bot_id, n in rows if bot_id is not None}


@blp.route("")
class Leaderboard(MethodView):
    @blp.arguments(LeaderboardArgs, location="query")
    @blp.response(200, LeaderboardSchema)
    @errors(blp, 422)
    def get(self, args):
        """Bots of a rule set by rating (ordinal = mu - 3 sigma), paginated."""
        ordinal = (Rating.mu - 3 * Rating.sigma).label("ordinal")
        cond = Rating.ruleset == args["ruleset"]
        total = db().scalar(select(func.count()).select_from(Rating).where(cond)) or 0
        offset = (args["page"] - 1) * args["per_page"]
        rows = (
            db()
            .execute(
                select(Rating, Bot.name, Account.name, ordinal)
                .join(Bot, Bot.id == Rating.bot_id)
                .join(Account, Account.id == Bot.owner_id)
                .where(cond)
                .order_by(ordinal.desc(), Rating.bot_id)
                .limit(args["per_page"])
                .offset(offset)
            )
            .all()
        )
        played = _matches_played(args["ruleset"], [r.bot_id for r, *_ in rows])
        items = [
            {
                "rank": offset + i + 1,
                "bot_id": r.bot_id,
                "bot_name": bot_name,
                "owner": owner,
                "mu": r.mu,
                "sigma": r.sigma,
                "ordinal": o,
                "games": r.games,
                "matches": played.get(r.bot_id, 0),
            }
            for i, (r, bot_name, owner, o) in enumerate(rows)
        ]
        return {
            "ruleset": args["ruleset"],
            "total": total,
            "page": args["page"],
            "per_page": args["per_page"],
            "items": items,
        }
