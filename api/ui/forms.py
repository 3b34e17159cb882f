"""Contestant and organizer forms of the ``/ui`` pages: the browser as a whole client.

Every form does what its REST endpoint does, through the same code: the body the endpoint
would get is checked by the endpoint's own schema (:func:`api.errors.load_json`: the input
guard, then marshmallow), then the same use case (:mod:`arena.usecases`) runs as the
signed-in account, and a refusal is the one the API answers (:func:`api.errors.refusal`:
status, message, fields). Validation, access rules and status changes (``arena.lifecycle``)
live there; nothing here re-implements them. A 422 is shown next to the fields it names.

======================================= ==================================================
``GET|POST /ui/signup``                 create a contestant account; the token shown once
``GET /ui/bots``                        your bots; the register form
``POST /ui/bots``                       register (``POST /api/v1/bots``); the secret shown once
``GET /ui/bots/<id>``                   the bot, its check, cap (a bot that connects: its
                                        presence, the gateway URL), rating history, matches, faults
``POST /ui/bots/<id>/check``            ``POST /api/v1/bots/<id>/check``
``POST /ui/bots/<id>/secret``           ``POST /api/v1/bots/<id>/secret``; shown once
``GET|POST /ui/tournaments/new``        organizers: ``POST /api/v1/tournaments``
``POST /ui/tournaments/<id>/<action>``  organizers: start, cancel, resume, retry
======================================= ==================================================

CSRF: every form carries ``csrf``, a random per-session token kept in the signed session
cookie; a POST here without the matching token is a 400 (the cookie is ``SameSite=Lax`` too).
Tokens and secrets are rendered into the answer of the POST that made them and never stored
for a later page: reloading does not show them again.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from typing import Any, TypeVar

from flask import abort, redirect, render_template, request, session, url_for
from flask_babel import gettext as _
from sqlalchemy import func, select
from sqlalchemy.orm import selectinload
from werkzeug.exceptions import NotFound

import engine
from api.common import MAX_ID
from api.database import db, dispatcher, redis_client, settings
from api.errors import CORE_ERRORS, Refusal, RefusalError, load_json, refusal
from api.ratelimit import client
from api.resources.accounts import AccountCreateSchema, WebhookSetSchema
from api.resources.bots import BotCreateSchema, BotSchema, with_presence
from api.resources.tournaments import TournamentCreateSchema
from api.ui import access, fields
from api.ui.chart import rating_chart
from api.ui.i18n import ruleset_names
from api.ui.lang import option_names
from api.ui.profiles import ladder_profiles
from api.ui.views import OFFLINE_ASKED_KEY, bp, entrant_label, load_log
from arena import access as policy
from arena import roll_call, webhooks
from arena.accounts import create_account
from arena.db.models import Account, Bot, Match, MatchSeat, Rating, RatingHistory, Tournament, TournamentParticipant
from arena.roll_call import absences_of
from arena.schedule import DEFAULT_HOUSE_BOT, HOUSE_BOTS
from arena.standings import tournament_standings
from arena.status import BotStatus, BotTransport, TournamentStatus
from arena.usecases import EntrantsOffline
from arena.usecases import bots as bot_cases
from arena.usecases import entrants as entrant_cases
from arena.usecases import tournaments as tournament_cases
from arena.usecases import webhooks as webhook_cases

CSRF_KEY = "csrf"
#: Matches per page of a bot page (newest first; ``?page=N``).
BOT_MATCHES_PER_PAGE = 25
#: Finished tournaments shown in a bot's rating history (the latest ones).
RATING_TOURNAMENTS_SHOWN = 50
ACTIONS = ("start", "cancel", "resume", "retry")


# ----------------------------------------------------------------------------- plumbing
def csrf_token() -> str:
    """This session's CSRF token (made on first use)."""
    tok = session.get(CSRF_KEY)
    if not isinstance(tok, str) or len(tok) < 32:
        tok = secrets.token_urlsafe(32)
        session[CSRF_KEY] = tok
    return tok


def check_csrf() -> None:
    """Abort 400 unless the form's CSRF token is this session's."""
    sent = request.form.get(CSRF_KEY, "")
    tok = session.get(CSRF_KEY)
    if not isinstance(tok, str) or not sent or not hmac.compare_digest(sent, tok):
        abort(400, _("The form expired or came from another site: reload the page and try again."))


@bp.app_context_processor
def _csrf_globals():
    return {"csrf_token": csrf_token}


T = TypeVar("T")


def attempt(action: Callable[[], T]) -> tuple[T | None, Refusal | None]:
    """``(what action() returns, None)``, or ``(None, the API's refusal)`` when it raises
    a refusal of :func:`api.errors.load_json` or a core error (:func:`api.errors.refusal`)."""
    try:
        return action(), None
    except RefusalError as exc:
        return None, exc.refusal
    except CORE_ERRORS as exc:
        answer = refusal(exc)
        if answer is None:
            raise
        return None, answer


def route_refusal() -> Refusal:
    """What the API answers for an id outside 1..:data:`api.common.MAX_ID` (no route matches)."""
    return Refusal(404, NotFound.description or "Not Found")


def field_errors(answer: Refusal) -> dict[str, str]:
    """``{"field": "message"}`` from a refusal's ``errors.json.<field>``."""
    out: dict[str, str] = {}
    errs = answer.field_errors()
    if isinstance(errs, dict):
        for field, msgs in errs.items():
            if isinstance(msgs, list):
                out[field] = "; ".join(str(m) for m in msgs)
            elif isinstance(msgs, dict):  # a nested schema (time_rules): one entry per inner field
                for k, v in msgs.items():
                    out[f"{field}.{k}"] = "; ".join(str(m) for m in v) if isinstance(v, list) else str(v)
            else:
                out[field] = str(msgs)
    return out


def refusal_banner(answer: Refusal, not_done: str, errors: dict[str, str], labels: dict[str, str]) -> str:
    """The banner above a refused form, in the reader's words and language: ``not_done``
    (e.g. "The tournament was not created"), then the fields to correct by their labels on the
    form (``errors``: the field errors as the form shows them, keyed by form field; ``labels``:
    form field -> label), or, for a refusal that names no field (409, 429, 503...), the API's
    reason. The API's own wording (``invalid request: json.options.target_score: ...``) stays
    by the fields, where it is precise, and in the REST API."""
    if not errors:
        return _("%(not_done)s: %(reason)s", not_done=not_done, reason=answer.message)
    names = []
    for key, message in errors.items():
        label = labels.get(key) or labels.get(key.split(".", 1)[0])
        names.append(label if label else f"{key}: {message}")
    return _("%(not_done)s: correct the fields marked below (%(fields)s).", not_done=not_done, fields=", ".join(names))


def rule_labels(ruleset: str) -> dict[str, str]:
    """Form field -> label of the fields the tournament and the ladder forms share (their name,
    rule set, time bank and every option), for :func:`refusal_banner`."""
    bank = _("Time bank")
    labels = {
        "name": _("Name"),
        "ruleset": _("Rule set"),
        "time_rules": bank,
        "time_rules.initial": f"{bank}: {_('initial')}",
        "time_rules.increment": f"{bank}: {_('per action')}",
        "time_rules.cap": f"{bank}: {_('cap')}",
        "options": _("Options: %(ruleset)s", ruleset=ruleset_names().get(ruleset, ruleset)),
    }
    names = option_names()
    for rs, option_fields in fields.option_fields().items():
        for of in option_fields:
            labels[fields.field_name(rs, of.name)] = names.get(of.name, of.name)
    return labels


def _tournament_labels(ruleset: str) -> dict[str, str]:
    """Form field -> label of the tournament form (:func:`refusal_banner`)."""
    return {
        **rule_labels(ruleset),
        "participants": _("Participants (ready bots)"),
        "games_per_pairing": _("Games per pairing"),
        "until_settled": _("Play until settled"),
        "until_settled.max_rounds": f"{_('Play until settled')}: {_('most rounds')}",
        "until_settled.delta": f"{_('Play until settled')}: {_('difference')}",
        "max_faults": _("Faults per match before forfeit (FAULT-3)"),
        "seed": _("Seed"),
        "house_bot": _("House bot"),
        "fill_with_house_bots": _("Fill empty seats with house bots"),
        "separate_owners": _("Never two bots of one owner at one table"),
        "public_when_finished": _("Public once finished"),
    }


def _bot_labels() -> dict[str, str]:
    return {
        "name": _("Name"),
        "transport": _("How the arena reaches it"),
        "url": _("URL of the bot (http or https)"),
        "rulesets": _("Rule sets it plays"),
    }


def need_viewer():
    """The signed-in account, or abort 401."""
    account = access.viewer()
    if account is None:
        abort(401, _("Sign in with your API token to see %(what)s.", what=_("this page")))
    return account


def form_number(text: str, kind: type = int):
    """The form text as a number for the API, or the text itself (the API's 422 names it).
    ``nan`` and ``inf`` stay text (the API refuses them as numbers)."""
    text = (text or "").strip()
    try:
        value = kind(text)
    except ValueError:
        return text
    return value if value == value and value not in (float("inf"), float("-inf")) else text


# ----------------------------------------------------------------------------- contestants
@bp.route("/signup", methods=["GET", "POST"])
def signup():
    """GET: the form; POST ``name``: what ``POST /api/v1/accounts`` does, sign in, show the
    token once."""
    if request.method == "GET":
        return render_template("signup.html", name="", errors={}, message=None, token=None)
    check_csrf()
    name = request.form.get("name", "")
    made, refused = attempt(lambda: create_account(db(), load_json(AccountCreateSchema(), {"name": name})["name"]))
    if made is None:
        assert refused is not None
        errors = field_errors(refused)
        message = refusal_banner(refused, _("The account was not created"), errors, {"name": _("Account name")})
        return render_template("signup.html", name=name, errors=errors, message=message, token=None), refused.status
    account, token = made
    access.sign_in(account)
    return render_template("signup.html", name=name, errors={}, message=None, token=token, account=account), 201


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
        message = refusal_banner(refused, _("The bot was not registered"), errors, _bot_labels())
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
    worker when a tournament finishes: :func:`arena.standings.rebuild_ratings`)."""
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


# ----------------------------------------------------------------------------- organizers
def _ready_bots() -> list[Bot]:
    return list(db().scalars(select(Bot).where(Bot.status == BotStatus.READY).order_by(Bot.id)))


def _new_tournament_page(form: dict, errors: dict | None = None, message: str | None = None, status: int = 200):
    account = need_viewer()
    if not policy.is_organizer(account):
        abort(403, _("Only organizers create tournaments."))
    ready = _ready_bots()
    return render_template(
        "tournament_new.html",
        form=form,
        errors=errors or {},
        message=message,
        bots=ready,
        presence=bot_cases.presence_of(redis_client(), ready),
        rulesets=engine.RULESETS,
        seats=engine.SEATS,
        option_fields=fields.option_fields(),
        ranges=fields.schema_ranges(),
        field_name=fields.field_name,
        house_bots=HOUSE_BOTS,
    ), status


def _default_form() -> dict[str, Any]:
    return {
        "name": "",
        "ruleset": engine.MILLION_DOUBT,
        "participants": [],
        "initial": "60",
        "increment": "10",
        "cap": "60",
        "games_per_pairing": "2",
        "max_faults": "3",
        "seed": "",
        "max_rounds": "",
        "settle_delta": "",
        "fill_with_house_bots": False,
        "house_bot": DEFAULT_HOUSE_BOT,
        "separate_owners": True,
        "public_when_finished": True,
        "opts": fields.default_values(),
    }


_TEXT_FIELDS = (
    "name",
    "ruleset",
    "initial",
    "increment",
    "cap",
    "games_per_pairing",
    "max_faults",
    "seed",
    "max_rounds",
    "settle_delta",
)


@bp.route("/tournaments/new", methods=["GET", "POST"])
def tournament_new():
    """GET: the form; POST: what ``POST /api/v1/tournaments`` does with the form's fields, then
    its page.

    Fields: ``name``, ``ruleset``, ``participants`` (bot ids, repeated), ``initial``,
    ``increment``, ``cap`` (TIME-1, seconds), ``games_per_pairing``, ``max_faults``, ``seed``
    (empty: drawn at the start), ``max_rounds`` and ``settle_delta`` (``until_settled``; empty
    max_rounds: one round), ``fill_with_house_bots``, ``separate_owners`` and
    ``public_when_finished`` (``1`` when checked), ``house_bot`` (a sample bot's name; absent: ``heuristic``), and one
    ``opt-<ruleset>-<option>`` per option (:mod:`api.ui.fields`); only the chosen rule set's
    options are sent. A refusal (422) shows the API's messages by the fields they name, with
    the form as typed."""
    if request.method == "GET":
        return _new_tournament_page(_default_form())
    account = need_viewer()
    check_csrf()
    f = request.form
    form: dict[str, Any] = {k: f.get(k, "") for k in _TEXT_FIELDS}
    form["house_bot"] = f.get("house_bot", DEFAULT_HOUSE_BOT)
    form["participants"] = f.getlist("participants")
    form["fill_with_house_bots"] = f.get("fill_with_house_bots") == "1"
    form["public_when_finished"] = f.get("public_when_finished") == "1"
    form["separate_owners"] = f.get("separate_owners") == "1"
    opts: dict[str, Any] = {}
    for rs, option_fields in fields.option_fields().items():
        for of in option_fields:
            name = fields.field_name(rs, of.name)
            opts[name] = f.get(name) == "1" if of.kind == "bool" else f.get(name, "")
    form["opts"] = opts
    body: dict[str, Any] = {
        "name": form["name"],
        "ruleset": form["ruleset"],
        "options": fields.form_to_options(form["ruleset"], f),
        "participants": [form_number(p) for p in form["participants"]],
        "time_rules": {k: form_number(form[k], float) for k in ("initial", "increment", "cap")},
        "games_per_pairing": form_number(form["games_per_pairing"]),
        "max_faults": form_number(form["max_faults"]),
        "fill_with_house_bots": form["fill_with_house_bots"],
        "house_bot": form["house_bot"],
        "public_when_finished": form["public_when_finished"],
        "separate_owners": form["separate_owners"],
    }
    if form["seed"].strip():
        body["seed"] = form_number(form["seed"])
    if form["max_rounds"].strip():
        body["until_settled"] = {"max_rounds": form_number(form["max_rounds"])}
        if form["settle_delta"].strip():
            body["until_settled"]["delta"] = form_number(form["settle_delta"], float)
    made, refused = attempt(
        lambda: tournament_cases.create_tournament(db(), account, **load_json(TournamentCreateSchema(), body))
    )
    if made is None:
        assert refused is not None
        errors = fields.option_error_fields(form["ruleset"], field_errors(refused))
        message = refusal_banner(
            refused, _("The tournament was not created"), errors, _tournament_labels(form["ruleset"])
        )
        return _new_tournament_page(form, errors, message, refused.status)
    return redirect(url_for("ui.tournament_page", tournament_id=made.id), code=303)


@bp.route("/tournaments/<int:tournament_id>/<action>", methods=["POST"])
def tournament_action(tournament_id: int, action: str):
    """What ``POST /api/v1/tournaments/<id>/<action>`` does (start, cancel, resume, retry),
    then its page with the API's message when it refused (409 nothing to do, 503 broker
    down, ...)."""
    if action not in ACTIONS:
        abort(404)
    account = need_viewer()
    check_csrf()
    include_running = action == "resume" and bool(request.form.get("include_running"))
    run: dict[str, Callable[[], Tournament]] = {
        "start": lambda: _start(account, tournament_id),
        "cancel": lambda: tournament_cases.cancel_tournament(db(), account, tournament_id, dispatcher()),
        "resume": lambda: tournament_cases.resume_tournament(
            db(), dispatcher(), account, tournament_id, include_running=include_running
        ),
        "retry": lambda: tournament_cases.retry_tournament(
            db(), dispatcher(), account, tournament_id, settings=settings()
        ),
    }
    _done, refused = attempt(run[action]) if 1 <= tournament_id <= MAX_ID else (None, route_refusal())
    if refused is not None:
        what = {
            "start": _("The tournament was not started"),
            "cancel": _("The tournament was not cancelled"),
            "resume": _("The tournament was not resumed"),
            "retry": _("The failed matches were not retried"),
        }[action]
        session["ui_notice"] = refusal_banner(refused, what, {}, {})[:500]
    return redirect(url_for("ui.tournament_page", tournament_id=tournament_id), code=303)


def _start(account, tournament_id: int) -> Tournament:
    """What ``POST /api/v1/tournaments/<id>/start`` does with the form's ``if_offline`` (ask,
    wait, start) and ``wait_minutes`` (1..60); asked about offline entrants, the page shows
    them once with the choice (:data:`api.ui.views.OFFLINE_ASKED_KEY`)."""
    if_offline = request.form.get("if_offline", entrant_cases.ASK)
    minutes = form_number(request.form.get("wait_minutes", ""), float)
    wait_s = minutes * 60 if isinstance(minutes, float) else None
    roll = roll_call.caller(redis_client(), allow_private=settings().allow_private_bot_urls)
    try:
        outcome = entrant_cases.start_or_wait(
            db(), dispatcher(), account, tournament_id, roll, if_offline=if_offline, wait_s=wait_s
        )
    except EntrantsOffline as exc:
        session[OFFLINE_ASKED_KEY] = {"tournament_id": tournament_id, "offline": [a.to_dict() for a in exc.offline]}
        t = db().get(Tournament, tournament_id)
        assert t is not None  # the start found it
        return t
    return outcome.tournament


@bp.app_template_filter("number")
def _number_text(value) -> str:
    """A bound as a reader writes it: ``3600`` for 3600.0, ``0.001``, integers in full."""
    return f"{value:g}" if isinstance(value, float) else str(value)


@bp.app_context_processor
def _notice():
    """A one-time notice (the API's refusal of a tournament action), shown once then dropped."""

    def pop_notice():
        return session.pop("ui_notice", None)

    return {"pop_notice": pop_notice}
