"""Live match stream for the pages: ``GET /ui/matches/<id>/live`` (server-sent events).

The worker publishes every decision of a running match to Redis (:mod:`arena.core.live`);
this stream relays the match's channel to the browser, one ``data: <json>`` event per
decision, ``: keep-alive`` comments while nothing happens, and ends after the ``end``
message. Who may watch: whoever may read the match's log (``arena.core.access.can_read_log``):
the log embargo (docs/fairness.md) keeps a running tournament's moves from contestants until
it is over, and a live view of them would undo it, so while a tournament runs only organizers
watch (the full channel: hands, face-down cards named). Everyone else gets 403 (a sign-in
page when signed out). Other viewers get the public channel (hand sizes, the field with
face-down cards as counts, public events) should the policy allow them. A match that is not
playing answers one ``end`` event at once. Redis down: one ``error`` event.
"""

from __future__ import annotations

import json

import redis
from flask import Response, abort, stream_with_context
from flask_babel import gettext as _

from api.database import db, settings
from api.ui import access
from api.ui.views import _deny, _match, bp
from arena.core import access as policy
from arena.core import live

LIVE_STATUSES = ("queued", "running", "pending")


def can_watch_live(m, t) -> bool:
    """True when the viewer may open the live stream of match ``m`` of tournament ``t`` now."""
    return m.status in LIVE_STATUSES and policy.can_read_log(db(), access.viewer(), m, t)


@bp.app_context_processor
def _live_globals():
    return {"can_watch_live": can_watch_live}


@bp.route("/matches/<int:match_id>/live")
def match_live(match_id: int):
    account = access.viewer()
    m, t = _match(match_id)
    if not policy.can_read_match(db(), account, m, t):
        _deny(account, f"match {m.id}")
    if not policy.can_read_log(db(), account, m, t):
        abort(403, _("The live view of match %(id)s is embargoed until the tournament is finished.", id=m.id))
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
