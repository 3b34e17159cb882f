"""Contestant and organizer forms of the ``/ui`` pages: the browser as a whole client.

Every form does what its REST endpoint does, through the same code: the body the endpoint
would get is checked by the endpoint's own schema (:func:`api.errors.load_json`: the input
guard, then marshmallow), then the same use case (:mod:`arena.usecases`) runs as the
signed-in account, and a refusal is the one the API answers (:func:`api.errors.refusal`:
status, message, fields). Validation, access rules and status changes (``arena.lifecycle``)
live there; nothing here re-implements them. A 422 is shown next to the fields it names.
The bots' pages and forms: :mod:`api.ui.bot_forms`; the ladders': :mod:`api.ui.ladders`.

======================================= ==================================================
``GET|POST /ui/signup``                 create a contestant account; the token shown once
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
from sqlalchemy import select
from werkzeug.exceptions import NotFound

import engine
from api.common import MAX_ID
from api.database import db, dispatcher, redis_client, settings
from api.errors import CORE_ERRORS, Refusal, RefusalError, load_json, refusal
from api.resources.accounts import AccountCreateSchema
from api.resources.tournament_schemas import TournamentCreateSchema
from api.ui import access, fields
from api.ui.i18n import ruleset_names
from api.ui.lang import option_names
from api.ui.views import OFFLINE_ASKED_KEY, bp
from arena import access as policy
from arena import roll_call
from arena.accounts import create_account
from arena.db.models import Bot, Tournament
from arena.schedule import DEFAULT_HOUSE_BOT, HOUSE_BOTS
from arena.status import BotStatus
from arena.usecases import EntrantsOffline
from arena.usecases import bots as bot_cases
from arena.usecases import entrants as entrant_cases
from arena.usecases import tournaments as tournament_cases

CSRF_KEY = "csrf"
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


def bot_labels() -> dict[str, str]:
    return {
        "name": _("Name"),
        "transport": _("How the arena reaches it"),
        "url": _("URL of the bot (http or https)"),
        "rulesets": _("Rule sets it plays"),
    }


def need_viewer():
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
