"""Live match stream for the pages: ``GET /ui/matches/<id>/live`` (server-sent events).

The worker publishes every decision of a running match to Redis (:mod:`arena.core.live`);
this stream relays the match's channel to the browser, one ``data: <json>`` event per
decision, ``: keep-alive`` comments while nothing happens, and ends after the ``end``
message. Who gets what (the fairness rules): organizers the full channel (hands, face-down
cards named); every other viewer who may read the match (``arena.core.access``) only the
public one (hand sizes, the field with face-down cards as counts, public events). A match
that is not playing answers one ``end`` event at once. Redis down: one ``error`` event.
"""

from __future__ import annotations

import json

import redis
from flask import Response, stream_with_context

from api.database import db, settings
from api.ui import access
from api.ui.views import _deny, _match, bp
from arena.core import access as policy
from arena.core import live

LIVE_STATUSES = ("queued", "running", "pending")


@bp.route("/matches/<int:match_id>/live")
def match_live(match_id: int):
    account = access.viewer()
    m, t = _match(match_id)
    if not policy.can_read_match(db(), account, m, t):
        _deny(account, f"match {m.id}")
    full = policy.is_organizer(account)
    status, url, mid = m.status, settings().broker_url, m.id
    db().close()  # hold no database connection while streaming

    def events():
        if status not in LIVE_STATUSES:
            yield "data: " + json.dumps({"type": "end", "match_id": mid, "status": status}) + "\n\n"
            return
        yield ": live\n\n"
        try:
            for text in live.subscribe(url, mid, full=full):
                yield ": keep-alive\n\n" if text is None else f"data: {text}\n\n"
        except redis.RedisError as exc:
            yield "event: error\ndata: " + json.dumps({"error": str(exc)[:200]}) + "\n\n"

    return Response(stream_with_context(events()), mimetype="text/event-stream",
                    headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
