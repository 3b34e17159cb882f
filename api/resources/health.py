"""``GET /healthz``: the API is up and its database answers."""

from __future__ import annotations

import marshmallow as ma
from flask.views import MethodView
from flask_smorest import Blueprint
from sqlalchemy import text

from api.common import errors
from api.database import db
from api.errors import abort

blp = Blueprint("health", __name__, url_prefix="/", description="Liveness of the API and its database")


class HealthSchema(ma.Schema):
    status = ma.fields.String(required=True, metadata={"example": "ok"})
    database = ma.fields.String(required=True, metadata={"example": "ok"})


@blp.route("/healthz")
class Health(MethodView):
    @blp.response(200, HealthSchema)
    @errors(blp, 503)
    def get(self):
        """Health check: 200 when the database answers ``SELECT 1``, else 503."""
        try:
            db().execute(text("SELECT 1"))
        except Exception as exc:  # any database error means "not healthy"
            abort(503, f"database unavailable: {type(exc).__name__}")
        return {"status": "ok", "database": "ok"}
