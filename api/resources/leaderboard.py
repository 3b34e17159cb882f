"""``GET /api/v1/leaderboard?ruleset=...``: openskill ratings across tournaments (public).

Reads the ``ratings`` table (kept by the worker with arena.core.standings.rebuild_ratings);
ordered by the conservative ordinal ``mu - 3 sigma``, best first.
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
from arena.core.db.models import Account, Bot, Rating

blp = Blueprint("leaderboard", __name__, url_prefix="/api/v1/leaderboard",
                description="Ratings per rule set across tournaments")


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
    games = ma.fields.Integer(required=True, metadata={"description": "matches rated"})


class LeaderboardSchema(ma.Schema):
    ruleset = ma.fields.String(required=True)
    total = ma.fields.Integer(required=True)
    page = ma.fields.Integer(required=True)
    per_page = ma.fields.Integer(required=True)
    items = ma.fields.List(ma.fields.Nested(LeaderRowSchema), required=True)


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
        rows = db().execute(
            select(Rating, Bot.name, Account.name, ordinal).join(Bot, Bot.id == Rating.bot_id)
            .join(Account, Account.id == Bot.owner_id).where(cond)
            .order_by(ordinal.desc(), Rating.bot_id).limit(args["per_page"]).offset(offset)).all()
        items = [{"rank": offset + i + 1, "bot_id": r.bot_id, "bot_name": bot_name, "owner": owner,
                  "mu": r.mu, "sigma": r.sigma, "ordinal": o, "games": r.games}
                 for i, (r, bot_name, owner, o) in enumerate(rows)]
        return {"ruleset": args["ruleset"], "total": total, "page": args["page"],
                "per_page": args["per_page"], "items": items}
