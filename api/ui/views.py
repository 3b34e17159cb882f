"""The ``/ui`` pages (see :mod:`api.ui` for the addresses and :mod:`api.ui.access` for the rules)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_babel import gettext as _
from sqlalchemy import func, select
from sqlalchemy.orm import selectinload
from werkzeug.exceptions import HTTPException

import engine
from api.database import db, match_log_download, tournament_logs_download
from api.resources.tournaments import tournament_dict
from api.ui import access
from api.ui.board import board_view, entrant_label, entrant_names
from api.ui.faults import fault_detail
from api.ui.replay import ReplayDataError, build_replay
from arena import access as policy
from arena import lifecycle, matchlog
from arena.db.models import Account, Match, MatchLog, Tournament
from arena.leaderboard import leaderboard
from arena.roll_call import NOT_CONNECTED, Absence, absences_of
from arena.status import MatchStatus, TournamentFormat, TournamentStatus

bp = Blueprint(
    "ui", __name__, url_prefix="/ui", template_folder="templates", static_folder="static", static_url_path="/static"
)

MAX_ID = 2**31 - 1


# ----------------------------------------------------------------------------- plumbing
@bp.after_request
def _headers(resp: Response) -> Response:
    resp.headers.setdefault("X-Content-Type-Options", "nosniff")
    resp.headers.setdefault("Referrer-Policy", "same-origin")
    if resp.mimetype == "text/html":
        resp.headers.setdefault("Cache-Control", "no-store")
        resp.headers.setdefault("X-Frame-Options", "DENY")
    return resp


@bp.errorhandler(HTTPException)
def _error_page(exc: HTTPException):
    if exc.code == 401:
        return render_template("login.html", error=exc.description, next=next_target(request.path)), 401
    return render_template("error.html", code=exc.code, name=exc.name, message=exc.description), exc.code


@bp.app_template_filter("when")
def _when(value: datetime | str | None) -> str:
    """``2026-12-01 19:46 UTC`` of a datetime or of an API's ISO 8601 text (naive: UTC);
    "—" for none; a text that is no date is shown as it is."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return value
        value = parsed.astimezone(UTC) if parsed.tzinfo is not None else parsed
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else "—"


@bp.app_template_filter("signed")
def _signed(value, digits: int = 2) -> str:
    if value is None:
        return "—"
    return f"{value:+.{digits}f}"


def offline_reason(a: Absence) -> str:
    """Why an entrant is offline, in the page's language."""
    if a.reason == NOT_CONNECTED:
        return _("not connected")
    return _("health check failed: %(detail)s", detail=a.detail)


@bp.context_processor
def _globals():
    return {"viewer": access.viewer(), "offline_reason": offline_reason}  # translated names: api.ui.lang


def next_target(path: str | None) -> str:
    """A safe place to return to after signing in: a path under /ui, else /ui/."""
    if path and path.startswith("/ui/") and not path.startswith("//") and "\\" not in path:
        return path
    return url_for("ui.index")


def deny(account, what: str):
    """Abort: 401 (sign in to see ``what``) without an account, else 403 (not visible)."""
    if account is None:
        abort(401, _("Sign in with your API token to see %(what)s.", what=what))
    abort(403, _("%(what)s is not visible to your account.", what=what[0].upper() + what[1:]))


def tournament_or_404(tournament_id: int) -> Tournament:
    """The tournament, or abort 404 naming it (an id outside 1..MAX_ID included)."""
    t = db().get(Tournament, tournament_id) if 1 <= tournament_id <= MAX_ID else None
    if t is None:
        abort(404, _("There is no tournament %(id)s.", id=tournament_id))
    return t


def match_or_404(match_id: int) -> tuple[Match, Tournament]:
    """The match and its tournament, or abort 404 naming it (an id outside 1..MAX_ID included)."""
    m = db().get(Match, match_id) if 1 <= match_id <= MAX_ID else None
    if m is None:
        abort(404, _("There is no match %(id)s.", id=match_id))
    t = db().get(Tournament, m.tournament_id)
    assert t is not None  # matches.tournament_id is a foreign key
    return m, t


def _house_bot(t: Tournament) -> str | None:
    """The sample bot a tournament's house seats play, for their labels; None for a ladder's
    sets and a table's match, whose house seats are named after the sample bot they play
    (``random (house)``)."""
    return None if t.format in (TournamentFormat.LADDER, TournamentFormat.TABLE) else t.house_bot


def _progress(t: Tournament) -> dict:
    """``finished``, ``total``, ``percent`` and ``by_status`` (match count per status), from
    one grouped query."""
    counts = {
        str(st): int(n)
        for st, n in db().execute(
            select(Match.status, func.count()).where(Match.tournament_id == t.id).group_by(Match.status)
        )
    }
    total, done = sum(counts.values()), counts.get(MatchStatus.FINISHED, 0)
    return {"finished": done, "total": total, "percent": round(100 * done / total) if total else 0, "by_status": counts}


def organizer_actions(t: Tournament, progress: dict, account) -> list[str]:
    """The organizer's actions that apply to ``t`` now, in the page's order (none for anyone
    else, nor for a finished tournament without failed matches: no empty card). Resume only
    where it does something: a running tournament with matches to send again and none being
    played (:func:`arena.lifecycle.resume_would_help`)."""
    if not policy.is_organizer(account):
        return []
    by_status = progress.get("by_status") or {}
    running = t.status == TournamentStatus.RUNNING
    wanted = {
        "start": t.status == TournamentStatus.CREATED or (running and bool(by_status.get(MatchStatus.PENDING))),
        "resume": running and lifecycle.resume_would_help(db(), t.id),
        "retry": bool(by_status.get(MatchStatus.FAILED)),
        "cancel": t.status in (TournamentStatus.CREATED, TournamentStatus.RUNNING),
    }
    return [action for action, on in wanted.items() if on]


# ----------------------------------------------------------------------------- sign in / out
def _refuse_cross_site() -> None:
    """Login CSRF: a sign-in or sign-out posted from another site (the browser's
    ``Sec-Fetch-Site`` or ``Origin`` says so) is refused with 400, so no page elsewhere can
    sign a visitor into the attacker's account."""
    if request.headers.get("Sec-Fetch-Site") == "cross-site":
        abort(400, _("The form expired or came from another site: reload the page and try again."))
    origin = request.headers.get("Origin")
    if origin is not None and (origin == "null" or urlsplit(origin).netloc != request.host):
        abort(400, _("The form expired or came from another site: reload the page and try again."))


@bp.route("/login", methods=["GET", "POST"])
def login():
    """GET: the form; POST ``token`` (and ``next``): sign in and go back to ``next``."""
    target = next_target(request.values.get("next"))
    if request.method == "GET":
        return render_template("login.html", error=None, next=target)
    _refuse_cross_site()
    account = access.account_for_token(request.form.get("token", ""))
    if account is None:
        return render_template("login.html", error=_("That token is not valid."), next=target), 401
    access.sign_in(account)
    return redirect(target, code=303)


@bp.route("/logout", methods=["POST"])
def logout():
    _refuse_cross_site()
    access.sign_out()
    return redirect(url_for("ui.index"), code=303)


# ----------------------------------------------------------------------------- pages
@bp.route("/")
def index():
    """Tournaments the viewer may open: all when signed in, else the public finished ones
    (not the tournaments holding the ladders' sets: /ui/ladders lists the ladders)."""
    account = access.viewer()
    hidden = [TournamentFormat.LADDER.value, TournamentFormat.TABLE.value]  # /ui/ladders; a table's page
    stmt = select(Tournament).where(Tournament.format.not_in(hidden))
    stmt = stmt.order_by(Tournament.id.desc()).limit(500)
    if account is None:
        stmt = stmt.where(Tournament.status == TournamentStatus.FINISHED, Tournament.public_when_finished.is_(True))
    tournaments = db().scalars(stmt.options(selectinload(Tournament.participants))).all()
    rows = [{"t": t, "progress": _progress(t), "public": policy.is_public(t)} for t in tournaments]
    return render_template("index.html", rows=rows)


#: Bots per page of the leaderboard (/ui/leaderboard?page=N).
LEADERBOARD_PER_PAGE = 50


@bp.route("/leaderboard")
def leaderboard_page():
    """Ratings across tournaments of one rule set (``?ruleset=``, default the first;
    ``?page=N``), public: the API's ``GET /api/v1/leaderboard`` rows
    (:func:`arena.leaderboard.leaderboard`); every bot's name links to its page, public for
    a rated bot (:func:`arena.access.can_view_bot_profile`)."""
    ruleset = request.args.get("ruleset") or next(iter(engine.RULESETS))
    if ruleset not in engine.RULESETS:
        abort(404, _("There is no rule set %(name)s.", name=ruleset))
    page = max(1, request.args.get("page", 1, type=int) or 1)
    rows, total = leaderboard(db(), ruleset, page, LEADERBOARD_PER_PAGE)
    pages = max(1, -(-total // LEADERBOARD_PER_PAGE))
    if page > pages:  # past the end: the last page
        page = pages
        rows, total = leaderboard(db(), ruleset, page, LEADERBOARD_PER_PAGE)
    items = [{"r": r, "link": True} for r in rows]
    return render_template(
        "leaderboard.html",
        ruleset=ruleset,
        rulesets=list(engine.RULESETS),
        rows=items,
        total=total,
        page=page,
        pages=pages,
    )


@bp.route("/tournaments/<int:tournament_id>")
def tournament_page(tournament_id: int):
    account = access.viewer()
    t = tournament_or_404(tournament_id)
    ladder = policy.ladder_of(db(), t)  # a ladder's sets are its tournament's matches: its page is the ladder's
    if ladder is not None:
        return redirect(url_for("ui.ladder_page", ladder_id=ladder.id), code=303)
    if not policy.can_view_tournament(db(), account, t):
        deny(account, _("tournament %(id)s", id=t.id))
    view = board_view(t, account, request.args.get("page", 1, type=int) or 1)
    progress = view["progress"]
    return render_template(
        "tournament.html",
        t=t,
        offline_asked=_offline_asked(t.id),
        actions=organizer_actions(t, progress, account),
        public=policy.is_public(t),
        # offered once a log exists: a match finished (a failed or cancelled one has none)
        logs_link=progress["finished"] > 0 and policy.can_download_tournament_logs(db(), account, t),
        seats_per_match=engine.SEATS.get(t.ruleset, 0),
        show_seed=policy.can_see_seed(db(), account, t),
        seed_revealed=policy.seed_revealed(db(), t),
        **view,
    )


@bp.route("/matches/<int:match_id>")
def match_page(match_id: int):
    account = access.viewer()
    m, t = match_or_404(match_id)
    if not policy.can_read_match(db(), account, m, t):
        deny(account, _("match %(id)s", id=m.id))
    labels = seat_labels(m, t)
    replay = None
    replay_error = None
    embargoed = not policy.can_read_log(db(), account, m, t)
    match_log = None if embargoed else load_log(m.id)
    if match_log is not None:
        try:
            replay = _translated_details(build_replay(match_log, labels))
            seat = request.args.get("seat", type=int)
            if seat is not None and 0 <= seat < len(labels):
                replay["perspective"] = seat  # a person's replay: its own hand, the others' at will
        except (ReplayDataError, engine.InvalidAction, KeyError, TypeError, ValueError) as exc:
            current_app.logger.warning("ui: match %s log does not replay: %s", m.id, exc)
            replay_error = str(exc) or type(exc).__name__
    faults = match_log.get("faults", []) if match_log else []
    r = m.result
    seats = []
    for i, label in enumerate(labels):
        seats.append(
            {
                "seat": i,
                "label": label,
                "score": r.scores[i] if r else None,
                "place": r.places[i] if r else None,
                "faults": r.faults[i] if r else None,
            }
        )
    return render_template(
        "match.html",
        m=m,
        t=t,
        seats=seats,
        result=r,
        faults=faults,
        labels=labels,
        live_players=[{"index": i, "name": x, "label": x} for i, x in enumerate(labels)],
        replay=replay,
        replay_error=replay_error,
        has_log=match_log is not None,
        public=policy.is_public(t),
        embargoed=embargoed,
        show_seed=policy.can_see_match_seed(db(), account, m, t),
    )


def seat_labels(m: Match, t: Tournament) -> list[str]:
    """Each seat's label on the match page: a bot's ``name #id``, a house seat's, a person's
    ``name (person)`` (a table's: docs/tables.md; its house seats are named by their sample bot)."""
    names = entrant_names([s.bot_id for s in m.seats])
    people = [s.account_id for s in m.seats if s.account_id is not None]
    persons = dict(db().execute(select(Account.id, Account.name).where(Account.id.in_(people))).all()) if people else {}
    return [
        _("%(name)s (person)", name=persons.get(s.account_id, "?"))
        if s.account_id is not None
        else entrant_label(s.bot_id, s.house_bot, names, _house_bot(t))
        for s in m.seats
    ]


#: The session key of a start the organizer was asked about: entrants offline (the page offers
#: to wait for them or to start without them).
OFFLINE_ASKED_KEY = "ui_offline"


def _offline_asked(tournament_id: int) -> list[Any] | None:
    """The offline entrants of the start just refused on this tournament's page (shown once)."""
    asked = session.pop(OFFLINE_ASKED_KEY, None)
    if not isinstance(asked, dict) or asked.get("tournament_id") != tournament_id:
        return None
    return absences_of({"offline": asked.get("offline") or []})


def _translated_details(replay: dict) -> dict:
    """The replay data with its fault details in the page's language (:func:`api.ui.faults.fault_detail`)."""
    for game in replay.get("games") or []:
        for frame in game.get("frames") or []:
            for part in (frame.get("fault"), frame.get("exchange")):
                if isinstance(part, dict) and part.get("detail"):
                    part["detail"] = fault_detail(part)
    return replay


# ----------------------------------------------------------------------------- downloads
def load_log(match_id: int) -> dict | None:
    """The stored log of a match (arena.matchlog's JSON), None when it has none; no access check."""
    data = db().scalar(select(MatchLog.data).where(MatchLog.match_id == match_id))
    return None if data is None else json.loads(matchlog.decompress(data))


def _readable_match(match_id: int) -> Match:
    """The match if the viewer may read its log (log embargo included); 401/403/404."""
    account = access.viewer()
    m, t = match_or_404(match_id)
    if not policy.can_read_match(db(), account, m, t):
        deny(account, _("match %(id)s", id=m.id))
    if not policy.can_read_log(db(), account, m, t):
        abort(403, _("The log of match %(id)s is embargoed until the tournament is finished.", id=m.id))
    return m


@bp.route("/matches/<int:match_id>/log.json")
def match_log(match_id: int):
    response, missing = match_log_download(_readable_match(match_id), access.viewer())
    if response is None:
        abort(404, missing[0].upper() + missing[1:] + ".")
    return response


@bp.route("/matches/<int:match_id>/replay.json")
def match_replay(match_id: int):
    m = _readable_match(match_id)
    match_log = load_log(m.id)
    if match_log is None:
        abort(404, f"Match {m.id} has no log yet (status {m.status}).")
    labels = seat_labels(m, m.tournament)
    try:
        data = build_replay(match_log, labels)
    except (ReplayDataError, engine.InvalidAction) as exc:
        abort(409, f"Match {m.id}: the log does not replay ({exc}).")
    return Response(json.dumps(data, separators=(",", ":")), mimetype="application/json")


@bp.route("/tournaments/<int:tournament_id>/logs.jsonl")
def tournament_logs(tournament_id: int):
    """The tournament's JSON Lines download (:func:`api.database.tournament_logs_download`:
    the tournament first, then every match log the viewer may read), as the API sends it;
    ``arena logs verify tournament-<id>-logs.jsonl`` checks it."""
    account = access.viewer()
    t = tournament_or_404(tournament_id)
    if not policy.can_download_tournament_logs(db(), account, t):
        if account is not None and not policy.is_over(t) and policy.owns_participant(db(), account, t.id):
            abort(403, _("The logs of tournament %(id)s are embargoed until it is finished.", id=t.id))
        deny(account, _("the logs of tournament %(id)s", id=t.id))
    return tournament_logs_download(t, account, tournament_dict(t))
