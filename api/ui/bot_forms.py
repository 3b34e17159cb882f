"""The bots' pages and forms of the ``/ui`` pages (the rules of every form:
:mod:`api.ui.forms`):

======================================= ==================================================
``GET /ui/bots``                        your bots; the register form
``POST /ui/bots``                       register (``POST /api/v1/bots``); the secret shown once
``POST /ui/webhook``                    your account's webhook (``PUT|DELETE /api/v1/accounts/me/webhook``)
``GET /ui/bots/<id>``                   the bot, its check, cap (a bot that connects: its
                                        presence, the gateway URL), rating history, matches, faults
``POST /ui/bots/<id>/check``            ``POST /api/v1/bots/<id>/check``
``POST /ui/bots/<id>/secret``           ``POST /api/v1/bots/<id>/secret``; shown once
======================================= ==================================================
"""

from __future__ import annotations

import secrets
from typing import Any

from flask import abort, redirect, render_template, request, session, url_for
from flask_babel import gettext as _
from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

import engine
from api.common import MAX_ID
from api.database import db, dispatcher, settings
from api.errors import load_json
from api.ratelimit import client
from api.resources.accounts import WebhookSetSchema
from api.resources.bots import BotCreateSchema, BotSchema, with_presence
from api.ui import access
from api.ui.board import entrant_label
from api.ui.chart import rating_chart
from api.ui.forms import (
    attempt,
    bot_labels,
    check_csrf,
    field_errors,
    need_viewer,
    refusal_banner,
    route_refusal,
)
from api.ui.profiles import ladder_profiles
from api.ui.views import bp, load_log
from arena import access as policy
from arena import webhooks
from arena.db.models import Account, Bot, Match, MatchSeat, Rating, RatingHistory, Tournament, TournamentParticipant
from arena.roll_call import absences_of
from arena.standings import tournament_standings
from arena.status import BotStatus, BotTransport, TournamentStatus
from arena.usecases import bots as bot_cases
from arena.usecases import webhooks as webhook_cases

#: Matches per page of a bot page (newest first; ``?page=N``).
BOT_MATCHES_PER_PAGE = 25


#: The sections of a bot page in page order (one block of ``bot.html`` each), and whether only
#: its owner and organizers get it (:func:`arena.access.can_open_bot`).
BOT_SECTIONS: tuple[tuple[str, bool], ...] = (
    ("waiting", True),
    ("check", True),
    ("connection", True),
    ("facts", False),
    ("rating_history", False),
    ("ladders", False),
    ("matches", False),
    ("faults", False),
)


#: Finished tournaments shown in a bot's rating history (the latest ones).
RATING_TOURNAMENTS_SHOWN = 50


#: Session key of the register forms already sent (form id -> bot id): the bot page answers the
#: form (its secret is shown once, so no redirect), and a reload sends the form again.
REGISTERED_KEY = "ui_registered"


#: Register forms remembered per session.
REGISTERED_KEPT = 10


def _bots_page(
    form: dict | None = None,
    errors: dict | None = None,
    message: str | None = None,
    status: int = 200,
    webhook: dict | None = None,
):
    """The bots page; ``webhook``: what the webhook form answered (``secret`` shown once,
    ``url`` as typed, ``error``, ``notice``)."""
    account = need_viewer()
    items, _total = bot_cases.list_bots(db(), account, per_page=100)
    bots = BotSchema(many=True).dump(with_presence(items))
    me = db().get(Account, account.id)
    return render_template(
        "bots.html",
        bots=bots,
        form=form or {"name": "", "transport": BotTransport.HTTP.value, "url": "", "rulesets": []},
        errors=errors or {},
        message=message,
        rulesets=engine.RULESETS,
        form_id=secrets.token_hex(16),
        me=me,
        webhook=webhook or {},
        webhook_events=webhooks.EVENTS,
    ), status


@bp.route("/webhook", methods=["POST"])
def webhook_form():
    """The webhook card of the bots page: ``action`` ``set`` (``url``: what ``PUT
    /api/v1/accounts/me/webhook`` does; the secret shown once on the answer), ``remove``
    (``DELETE``), ``test`` (``POST .../test``)."""
    account = need_viewer()
    check_csrf()
    action = request.form.get("action", "")
    if action == "set":
        url = request.form.get("url", "")
        got, refused = attempt(
            lambda: webhook_cases.set_webhook(
                db(),
                account,
                load_json(WebhookSetSchema(), {"url": url})["url"],
                allow_private=settings().allow_private_bot_urls,
            )
        )
        if got is None:
            assert refused is not None
            error = field_errors(refused).get("url") or refused.message
            return _bots_page(status=refused.status, webhook={"url": url, "error": error})
        return _bots_page(webhook={"secret": got[1]})
    if action == "remove":
        webhook_cases.clear_webhook(db(), account)
        return redirect(url_for("ui.bots"), code=303)
    if action == "test":
        sent, refused = attempt(lambda: webhook_cases.ping_webhook(db(), dispatcher(), account))
        notice = _("A test event was sent: reload this page to see how it was answered.") if sent else None
        return _bots_page(
            status=refused.status if refused else 202,
            webhook={"notice": notice, "error": refused.message if refused else None},
        )
    abort(404)


@bp.route("/bots", methods=["GET", "POST"])
def bots():
    """GET: your bots and the register form; POST ``name``, ``transport`` (``http``: the arena
    calls ``url``; ``connect``: the bot dials out, no URL), ``url``, ``rulesets``: register."""
    if request.method == "GET":
        return _bots_page()
    account = need_viewer()
    check_csrf()
    form_id = request.form.get("form_id", "")[:64]
    sent: dict[str, int] = session.get(REGISTERED_KEY) or {}
    if form_id and form_id in sent:  # the answer page reloaded: the browser sent the form again
        return _bot_page(
            sent[form_id],
            message=_(
                "This form was sent already: the bot was registered then and its secret shown once. "
                "Rotate the secret below if you did not keep it."
            ),
        )
    form: dict[str, Any] = {
        "name": request.form.get("name", ""),
        "transport": request.form.get("transport", BotTransport.HTTP.value),
        "url": request.form.get("url", ""),
        "rulesets": request.form.getlist("rulesets"),
    }
    body = {k: v for k, v in form.items() if k != "url" or v.strip()}  # an empty URL field: no URL
    bot, refused = attempt(
        lambda: bot_cases.register_bot(
            db(),
            account,
            allow_private=settings().allow_private_bot_urls,
            max_bots=settings().max_bots_per_account,
            **load_json(BotCreateSchema(), body),
        )
    )
    if bot is None:
        assert refused is not None
        errors = field_errors(refused)
        message = refusal_banner(refused, _("The bot was not registered"), errors, bot_labels())
        return _bots_page(form, errors, message, refused.status)
    if form_id:
        session[REGISTERED_KEY] = dict(list(sent.items())[-(REGISTERED_KEPT - 1) :] + [(form_id, bot.id)])
    return _bot_page(bot.id, secret=bot.secret, status=201)


def _rating_history(bot_id: int, viewer=None) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The bot's rating in each finished tournament it played that ``viewer`` may read
    (:func:`arena.access.public_tournaments_condition`: the public ones for a visitor; oldest
    first, the latest :data:`RATING_TOURNAMENTS_SHOWN`) and a chart per rule set.

    Each tournament's rating is the openskill rating of its standings
    (:func:`arena.standings.tournament_standings`: every tournament starts from the
    model's prior, matches rated in schedule order). A finished tournament's fold is cached in
    ``standings_cache``, so a read folds nothing again. The rating across tournaments is the
    ``ratings`` table (:func:`current_ratings`); its value after each tournament (``after``:
    a ``rating_history`` row, or None before the worker rebuilt the ratings) comes from
    ``rating_history``.
    """
    s = db()
    ts = list(
        s.scalars(
            select(Tournament)
            .join(TournamentParticipant, TournamentParticipant.tournament_id == Tournament.id)
            .where(
                TournamentParticipant.bot_id == bot_id,
                Tournament.status == TournamentStatus.FINISHED,
                *policy.public_tournaments_condition(viewer),
            )
            .order_by(Tournament.finished_at.desc(), Tournament.id.desc())
            .limit(RATING_TOURNAMENTS_SHOWN)
            .options(selectinload(Tournament.participants))
        )
    )
    after = {
        h.tournament_id: h
        for h in s.scalars(
            select(RatingHistory).where(
                RatingHistory.bot_id == bot_id, RatingHistory.tournament_id.in_([t.id for t in ts])
            )
        )
    }
    rows: list[dict[str, Any]] = []
    for t in reversed(ts):
        table = tournament_standings(s, t)
        mine = next((st for st in table if st.entrant == bot_id), None)
        if mine is None or not mine.games:
            continue
        rows.append({"t": t, "s": mine, "entrants": len(table), "after": after.get(t.id)})
    charts: dict[str, dict[str, Any]] = {}
    for rs in engine.RULESETS:
        pts = [(r["t"].name or f"#{r['t'].id}", r["s"].mu, r["s"].sigma) for r in rows if r["t"].ruleset == rs]
        geometry = rating_chart(pts)
        if geometry is not None:
            charts[rs] = geometry
    return rows, charts


def current_ratings(bot_id: int) -> list[Rating]:
    """The bot's rating across tournaments per rule set (the ``ratings`` table, rebuilt by the
    worker when a tournament finishes: :func:`arena.ratings.rebuild_ratings`)."""
    return list(db().scalars(select(Rating).where(Rating.bot_id == bot_id).order_by(Rating.ruleset)))


#: The sample bots' names (``bots_sdk.samples.SAMPLE_BOTS``, which the web process does not load).
SAMPLE_NAMES = ("random", "greedy", "heuristic", "search")


def run_command(last_check: dict | None) -> dict[str, str | None]:
    """What a bot that dials out is, for its page's run command: ``{"seen": the name its last
    check's health answer gave (None: not checked, or no answer), "sample": the sample bot to
    name in ``arena bots connect`` (``greedy`` when nothing was seen), or None when the bot is a
    program of its own (a name that is no sample's: a starter, your program)}``."""
    health = (last_check or {}).get("health") or {}
    seen = health.get("name") if health.get("ok") and isinstance(health.get("name"), str) else None
    if seen is None:
        return {"seen": None, "sample": "greedy"}
    return {"seen": seen, "sample": seen if seen in SAMPLE_NAMES else None}


def _bot_page(bot_id: int, *, secret: str | None = None, status: int = 200, message: str | None = None):
    """The bot page, public where its tournaments are (:func:`arena.access.can_view_bot_profile`:
    a visitor gets 401, a signed-in account 404, for a bot it may not see): its rating across
    tournaments, rating history (:func:`_rating_history`), one page of the matches the viewer
    may read (``?page=N``, :data:`BOT_MATCHES_PER_PAGE` newest first;
    :func:`arena.access.readable_matches_condition`) and the faults in them.

    Its owner and organizers (:func:`arena.access.can_open_bot`) also get the owner's parts,
    the bot as ``GET /api/v1/bots/<id>`` shows it: URL, check and its details, connection,
    concurrency cap, tournaments waiting for it; the owner alone the forms (check, rotate the
    secret) and the run command. Each part is one block of ``bot.html`` (``sections``: the
    names of the parts this viewer gets), so a section is added with one block there and its
    name here. Its ladders (:func:`api.ui.profiles.ladder_profiles`): one section per ladder
    the viewer reads (an open ladder's entrants' profiles are public, as its table is).

    Access (:mod:`arena.access`): a match is linked when the viewer may read it; fault
    details (kind, request, detail) come from the match log, shown only when the viewer may
    read the log (log embargo: not while the tournament runs, except to organizers); else
    only the count of the result."""
    account = access.viewer()
    row = db().get(Bot, bot_id) if 1 <= bot_id <= MAX_ID else None
    if row is None or row.status == BotStatus.DELETED:
        abort(404, _("There is no bot %(id)s.", id=bot_id))
    privileged = policy.can_open_bot(account, row.owner_id)
    if not privileged and not policy.can_view_bot_profile(db(), account, row):
        if account is None:
            abort(401, _("Sign in with your API token to see %(what)s.", what=_("this page")))
        abort(404, _("There is no bot %(id)s.", id=bot_id))
    bot = BotSchema().dump(with_presence([row])[0]) if privileged else public_bot(row)
    s = db()
    cond = [MatchSeat.bot_id == bot_id]
    readable_cond = None if privileged else policy.readable_matches_condition(account)
    if readable_cond is not None:
        cond.append(readable_cond)
    total = s.scalar(select(func.count()).select_from(Match).join(MatchSeat).where(*cond)) or 0
    pages = max(1, -(-total // BOT_MATCHES_PER_PAGE))
    page = min(max(1, request.args.get("page", 1, type=int) or 1), pages)
    rows = s.execute(
        select(Match, MatchSeat.seat)
        .join(MatchSeat, MatchSeat.match_id == Match.id)
        .where(*cond)
        .order_by(Match.id.desc())
        .offset((page - 1) * BOT_MATCHES_PER_PAGE)
        .limit(BOT_MATCHES_PER_PAGE)
        .options(selectinload(Match.result))
    ).all()
    tournaments = (
        {
            t.id: t
            for t in s.scalars(select(Tournament).where(Tournament.id.in_({m.tournament_id for m, _seat in rows})))
        }
        if rows
        else {}
    )
    matches, faults, embargoed = [], [], 0
    for m, seat in rows:
        t = tournaments[m.tournament_id]
        readable = policy.can_read_match(s, account, m, t)
        r = m.result if readable else None
        n_faults = r.faults[seat] if r else None
        matches.append(
            {
                "m": m,
                "t": t,
                "seat": seat,
                "readable": readable,
                "score": r.scores[seat] if r else None,
                "place": r.places[seat] if r else None,
                "faults": n_faults,
            }
        )
        if not n_faults:
            continue
        if not policy.can_read_log(s, account, m, t):
            embargoed += 1
            continue
        log = load_log(m.id) or {}
        for f in log.get("faults") or []:
            if f.get("player") == seat:
                faults.append({"m": m, "t": t, **f})
    history, charts = _rating_history(bot_id, account)
    owner = account is not None and row.owner_id == account.id
    return render_template(
        "bot.html",
        run=run_command(bot.get("last_check")),
        bot=bot,
        secret=secret,
        matches=matches,
        message=message,
        owner=owner,
        privileged=privileged,
        sections=bot_sections(privileged, row),
        waiting=waiting_for(bot_id) if privileged else [],
        label=entrant_label,
        page=page,
        pages=pages,
        total_matches=total,
        faults=faults,
        faults_embargoed=embargoed,
        history=history,
        charts=charts,
        ratings=current_ratings(bot_id),
        gateway_url=settings().gateway_url,
        ladders=ladder_profiles(bot_id, account),
    ), status


def public_bot(row: Bot) -> dict[str, Any]:
    """What a bot's public profile shows of the bot itself: id, name, owner's name, rule
    sets, registration (no URL, status, check, secret or connection)."""
    return {
        "id": row.id,
        "name": row.name,
        "owner_id": row.owner_id,
        "owner_name": db().scalar(select(Account.name).where(Account.id == row.owner_id)),
        "rulesets": list(row.rulesets or []),
        "created_at": row.created_at,
    }


def bot_sections(privileged: bool, row: Bot) -> list[str]:
    """The names of the sections of :data:`BOT_SECTIONS` this viewer gets of bot ``row``
    (the connection only for a bot that connects)."""
    return [
        name
        for name, owner_side in BOT_SECTIONS
        if (privileged or not owner_side) and (name != "connection" or row.transport == BotTransport.CONNECT)
    ]


def waiting_for(bot_id: int) -> list[dict[str, Any]]:
    """The tournaments whose start waits for this bot to come online (its last roll call found
    it offline): each ``{"t", "until", "absence"}``."""
    rows = db().scalars(
        select(Tournament)
        .join(TournamentParticipant, TournamentParticipant.tournament_id == Tournament.id)
        .where(
            TournamentParticipant.bot_id == bot_id,
            Tournament.status == TournamentStatus.CREATED,
            Tournament.waiting_until.is_not(None),
        )
        .order_by(Tournament.waiting_until)
    )
    out = []
    for t in rows:
        mine = next((a for a in absences_of(t.roll_call) if a.bot_id == bot_id), None)
        if mine is not None:
            out.append({"t": t, "until": t.waiting_until, "absence": mine})
    return out


@bp.route("/bots/<int:bot_id>")
def bot_page(bot_id: int):
    return _bot_page(bot_id)


@bp.route("/bots/<int:bot_id>/check", methods=["POST"])
def bot_check(bot_id: int):
    """What ``POST /api/v1/bots/<id>/check`` does, then the bot page (its ``last_check``, or
    ``checking``)."""
    account = need_viewer()
    check_csrf()
    limit = settings().check_seconds_per_hour
    done, refused = (
        attempt(
            lambda: bot_cases.check_bot(
                db(), dispatcher(), account, bot_id, max_seconds_per_hour=limit, client=client()
            )
        )
        if 1 <= bot_id <= MAX_ID
        else (None, route_refusal())
    )
    if done is None:
        assert refused is not None
        return _bot_page(
            bot_id, status=refused.status, message=refusal_banner(refused, _("The check was not started"), {}, {})
        )
    return redirect(url_for("ui.bot_page", bot_id=bot_id), code=303)


@bp.route("/bots/<int:bot_id>/secret", methods=["POST"])
def bot_secret(bot_id: int):
    """What ``POST /api/v1/bots/<id>/secret`` does; the new secret shown once on the answer."""
    account = need_viewer()
    check_csrf()
    bot, refused = (
        attempt(lambda: bot_cases.rotate_secret(db(), account, bot_id))
        if 1 <= bot_id <= MAX_ID
        else (None, route_refusal())
    )
    if bot is None:
        assert refused is not None
        return _bot_page(
            bot_id, status=refused.status, message=refusal_banner(refused, _("The secret was not rotated"), {}, {})
        )
    return _bot_page(bot_id, secret=bot.secret)
