"""``GET /api/v1/leaderboard?ruleset=...``: openskill ratings across tournaments (public).

Reads the ``ratings`` table (kept by the worker with :func:`arena.ratings.rebuild_ratings`:
one rating update per game, ranks by adjusted score where the game has a par; docs/ranking.md,
"Ratings") through :func:`arena.leaderboard.leaderboard`; ordered by the conservative rating
``ordinal`` = mu - 3 sigma, best first. Per bot: ``games`` and ``matches`` rated, and when its
last rated match finished (``last_played``).
"""

from __future__ import annotations

from dataclasses import asdict

import marshmallow as ma
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import validate

import engine
from api.common import PageArgs, errors
from api.database import db
from arena.leaderboard import leaderboard

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
    mu = ma.fields.Float(required=True, metadata={"description": "openskill Plackett-Luce mean"})
    sigma = ma.fields.Float(required=True, metadata={"description": "its uncertainty (standard deviation)"})
    ordinal = ma.fields.Float(required=True, metadata={"description": "conservative rating mu - 3 sigma: the order"})
    games = ma.fields.Integer(required=True, metadata={"description": "games rated (one rating update per game)"})
    matches = ma.fields.Integer(required=True, metadata={"description": "finished matches rated"})
    last_played = ma.fields.DateTime(
        allow_none=True, metadata={"description": "when the bot's last rated match finished (UTC)"}
    )


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
        """Bots of a rule set by conservative rating (ordinal = mu - 3 sigma), paginated; a
        deleted bot (and with it its owner's name) is not listed."""
        rows, total = leaderboard(db(), args["ruleset"], args["page"], args["per_page"])
        return {
            "ruleset": args["ruleset"],
            "total": total,
            "page": args["page"],
            "per_page": args["per_page"],
            "items": [asdict(r) for r in rows],
        }
