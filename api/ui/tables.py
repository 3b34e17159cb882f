"""The pages of the tables where people play (docs/tables.md, docs/ui.md "Play").

========================================== ================================================
``GET|POST /ui/play``                      choose a rule set, its options, the opponents
                                           (sample bots, ``search``, your bots, bots people
                                           may play) and your time bank; ``POST
                                           /api/v1/tables``; organizers also open a class
                                           table (``person`` seats)
``GET /ui/tables/<id>``                    the table: the game (your seat) while it plays, the
                                           seats and the link of a class table, the result,
                                           replay and log once over
``POST /ui/tables/<id>/<action>``          join (the class link), start, cancel
``GET /ui/tables/<id>/events``             your seat's frames (server-sent events,
                                           :mod:`arena.tables`); ``end`` when it is over
``GET /ui/tables/<id>/seat.json``          the same frames now (the page polls it when the
                                           stream is refused)
``POST /ui/tables/<id>/answer``            a try at the decision asked now (JSON ``{rid,
                                           action}``, header ``X-CSRF-Token``)
``GET /ui/account``                        your tables and your rating in the people's pool
========================================== ================================================

What reaches the page of a seat is exactly what a bot in that seat gets (its decision
requests, its notices, its own observation after each decision): :mod:`arena.runner.person`
builds every frame, and the worker's engine judges every try (a refusal names its rule).
Streams: :data:`STREAMS_PER_PROCESS` per server process and :data:`STREAMS_PER_ACCOUNT` per
account (Redis leases); beyond, 429 and the page polls ``seat.json`` every second instead.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import redis
from flask import Response, abort, jsonify, redirect, render_template, request, url_for
from flask_babel import gettext as _
from sqlalchemy import select

import engine
from api.database import db, dispatcher, redis_client, settings
from api.errors import load_json
from api.errors import refusal as refusal_of
from api.resources.tables import PlayTableCreateSchema, seat_frames_of, seat_names, table_dict
from api.resources.tables import answer_for as push_answer
from api.resources.tables import limits as open_limits
from api.ui import access, fields
from api.ui.forms import attempt, check_csrf, csrf_token, field_errors, form_number, need_viewer, refusal_banner
from api.ui.live import SSE_HEADERS, status_reader
from api.ui.rulesets import PAGE_RULESETS, replay_facts
from api.ui.views import bp, deny
from arena import access as policy
from arena import live
from arena import tables as seat_frames
from arena.db.models import Match, MatchResult, Table, Tournament
from arena.leases import LeaseSet
from arena.lifecycle import tables as table_states
from arena.people import person_ratings, tables_of
from arena.schedule import HOUSE_BOTS
from arena.status import BotTransport, TournamentStatus
from arena.usecases import Forbidden
from arena.usecases import bots as bot_cases
from arena.usecases import tables as table_cases

#: Seat streams per server process (each holds a thread); beyond, the page polls.
STREAMS_PER_PROCESS = 12
#: Seat streams per account, across every server process (a person with two tabs open).
STREAMS_PER_ACCOUNT = 3
#: Seconds without a frame before a keep-alive (and a look at the table's status).
IDLE_S = 5.0
#: Longest life of one stream, seconds (then the browser reconnects).
MAX_STREAM_S = 600.0
#: The opponents offered first: the strongest house bot, then the others.
HOUSE_ORDER = ("search", "heuristic", "greedy", "random")

_streams = threading.BoundedSemaphore(STREAMS_PER_PROCESS)


# ----------------------------------------------------------------------------- the form
def _opponent_choices(account, ruleset: str | None = None) -> list[dict[str, Any]]:
    """Who may sit at the viewer's table: the house bots, then the bots it may play."""
    out: list[dict[str, Any]] = [
        {"value": h, "label": _("%(bot)s (house bot)", bot=h), "rulesets": list(engine.RULESETS), "house": True}
        for h in HOUSE_ORDER
        if h in HOUSE_BOTS
    ]
    bots = table_cases.playable_bots(db(), account, ruleset)
    presence = bot_cases.presence_of(redis_client(), bots)
    for b in bots:
        mine = b.owner_id == account.id
        label = f"{b.name} #{b.id}"
        if mine:
            label = _("%(bot)s (your bot, %(status)s)", bot=label, status=b.status)
        p = presence.get(b.id)
        if b.transport == BotTransport.CONNECT and p is not None and not p.get("connected"):
            label += " · " + _("offline")
        out.append({"value": str(b.id), "label": label, "rulesets": list(b.rulesets), "house": False, "mine": mine})
    return out


def _default_play_form(ruleset: str, opponent: str | None) -> dict[str, Any]:
    defaults = fields.default_values()
    for rs, facts in PAGE_RULESETS.items():  # a first game short (the API's defaults: the rule set's)
        for name, value in facts.first_game_options.items():
            defaults[fields.field_name(rs, name)] = value
    first = opponent or "search"
    return {
        "ruleset": ruleset,
        "opponents": [first, "heuristic", "greedy"],
        "games": "2",
        "initial": str(int(table_cases.PERSON_TIME_RULES["initial"])),
        "increment": str(int(table_cases.PERSON_TIME_RULES["increment"])),
        "cap": str(int(table_cases.PERSON_TIME_RULES["cap"])),
        "seed": "",
        "class_table": False,
        "class_seats": ["person", "person", "person", "person"],
        "opts": defaults,
    }


def _play_page(form: dict[str, Any], errors: dict | None = None, message: str | None = None, status: int = 200):
    account = need_viewer()
    return render_template(
        "play.html",
        form=form,
        errors=errors or {},
        message=message,
        choices=_opponent_choices(account),
        rulesets=engine.RULESETS,
        seats=engine.SEATS,
        option_fields=fields.option_fields(),
        field_name=fields.field_name,
        is_organizer=policy.is_organizer(account),
        tables_enabled=redis_client() is not None,
        max_games=table_cases.MAX_GAMES,
        bank_range=table_cases.PERSON_INITIAL_S,
    ), status


def _labels(ruleset: str) -> dict[str, str]:
    return {
        "ruleset": _("Rule set"),
        "opponents": _("Opponents"),
        "seats": _("Seats"),
        "games": _("Games"),
        "person_time_rules": _("Your time bank"),
        "person_time_rules.initial": _("Your time bank"),
        "person_time_rules.increment": _("Added per answer"),
        "person_time_rules.cap": _("Largest bank"),
        "seed": _("Seed"),
        "options": _("Options"),
    }


@bp.route("/play", methods=["GET", "POST"])
def play():
    """GET: the form (``?ruleset=``, ``?opponent=<bot id>``: "play against my bot"); POST: what
    ``POST /api/v1/tables`` does with its fields, then the table's page."""
    account = need_viewer()
    if request.method == "GET":
        ruleset = request.args.get("ruleset", engine.MILLION_DOUBT)
        if ruleset not in engine.RULESETS:
            ruleset = engine.MILLION_DOUBT
        return _play_page(_default_play_form(ruleset, request.args.get("opponent")))
    check_csrf()
    f = request.form
    form: dict[str, Any] = {k: f.get(k, "") for k in ("ruleset", "games", "initial", "increment", "cap", "seed")}
    form["class_table"] = f.get("class_table") == "1"
    form["opponents"] = [f.get(f"opponent-{i}", "") for i in range(3)]
    form["class_seats"] = [f.get(f"class-seat-{i}", "") for i in range(4)]
    form["opts"] = {}
    for rs, option_fields in fields.option_fields().items():
        for of in option_fields:
            name = fields.field_name(rs, of.name)
            form["opts"][name] = f.get(name) == "1" if of.kind == "bool" else f.get(name, "")
    ruleset = form["ruleset"]
    n = engine.SEATS.get(ruleset, 2)
    body: dict[str, Any] = {
        "ruleset": ruleset,
        "options": fields.form_to_options(ruleset, f),
        "games": form_number(form["games"]) if engine.SEATS.get(ruleset) == 2 else 1,
        "person_time_rules": {k: form_number(form[k], float) for k in ("initial", "increment", "cap")},
    }
    if form["seed"].strip():
        body["seed"] = form_number(form["seed"])
    limits = open_limits()
    if form["class_table"]:
        body["seats"] = [form_number(s) if s.isdigit() else s for s in form["class_seats"][:n]]

        def run():
            data = load_json(PlayTableCreateSchema(), body)
            data.pop("opponents", None)
            data.pop("seat", None)
            return table_cases.open_class_table(db(), account, **data, **limits)
    else:
        body["opponents"] = [form_number(o) if o.isdigit() else o for o in form["opponents"][: n - 1]]

        def run():
            data = load_json(PlayTableCreateSchema(), body)
            data.pop("seats", None)
            return table_cases.open_solo_table(db(), dispatcher(), account, **data, **limits)

    made, refused = attempt(run)
    if made is None:
        assert refused is not None
        errors = fields.option_error_fields(ruleset, field_errors(refused))
        message = refusal_banner(refused, _("The table was not opened"), errors, _labels(ruleset))
        return _play_page(form, errors, message, refused.status)
    return redirect(url_for("ui.table_page", table_id=made.id), code=303)


# ----------------------------------------------------------------------------- the table
def _table(table_id: int) -> Table:
    account = access.viewer()
    table = db().get(Table, table_id) if 1 <= table_id <= 2**31 - 1 else None
    if table is None:
        abort(404, _("There is no table %(id)s.", id=table_id))
    if not policy.can_view_tournament(db(), account, table.tournament):
        key = request.args.get("key", "")
        if account is not None and table.join_key and secrets.compare_digest(key.encode(), table.join_key.encode()):
            return table  # a class link: the page offers to take a seat
        deny(account, _("table %(id)s", id=table_id))
    return table


def _page_data(table: Table, account, match: Match | None, seat: int | None) -> dict[str, Any]:
    t = table.tournament
    return {
        "table_id": table.id,
        "match_id": match.id if match is not None else None,
        "ruleset": t.ruleset,
        # what the indicators show: games and a match score, deals and the rate, or sets of games
        "scoring_unit": replay_facts(t.ruleset)["scoring_unit"],
        "seat": seat,
        "players": seat_names(table),
        "kinds": [s.get("kind") for s in table.seats],
        "events_url": url_for("ui.table_events", table_id=table.id),
        "seat_url": url_for("ui.table_seat", table_id=table.id),
        "answer_url": url_for("ui.table_answer", table_id=table.id),
        "rules_url": url_for("ui.guide", name="rules"),
        "csrf": csrf_token(),
        "status": t.status,
    }


@bp.route("/tables/<int:table_id>")
def table_page(table_id: int):
    """The table (module docstring): its game for a seated person while it plays."""
    return _render_table(table_id)


def _render_table(table_id: int, message: str | None = None, status: int = 200):
    table = _table(table_id)
    account = access.viewer()
    t: Tournament = table.tournament
    match = db().scalar(select(Match).where(Match.tournament_id == t.id))
    result = db().get(MatchResult, match.id) if match is not None else None
    seat = table_states.seated(table, account.id) if account is not None else None
    names = seat_names(table)
    info = table_dict(table, account) if account is not None else None
    can_run = account is not None and (table.opened_by == account.id or policy.is_organizer(account))
    return render_template(
        "table.html",
        table=table,
        t=t,
        info=info,
        match=match,
        result=result,
        seat=seat,
        names=names,
        can_run=can_run,
        key=request.args.get("key", ""),
        free=table_states.free_seats(table),
        playing=t.status == TournamentStatus.RUNNING and seat is not None,
        can_read_log=match is not None and policy.can_read_log(db(), account, match, t),
        can_watch=match is not None and policy.live_view_for(db(), account, match, t) == "full",
        join_url=url_for("ui.table_page", table_id=table.id, key=table.join_key, _external=True)
        if table.join_key and can_run
        else None,
        data=_page_data(table, account, match, seat),
        person_ratings=person_ratings(db(), account.id) if account is not None else [],
        message=message,
    ), status


TABLE_ACTIONS = ("join", "start", "cancel")


@bp.route("/tables/<int:table_id>/<action>", methods=["POST"])
def table_action(table_id: int, action: str):
    """Join (the class link's ``key``), start or cancel, then the table's page (with the
    API's message when it refused)."""
    if action not in TABLE_ACTIONS:
        abort(404)
    account = need_viewer()
    check_csrf()
    cfg = settings()
    run = {
        "join": lambda: table_cases.join_table(
            db(), account, table_id, request.form.get("key", ""), tables_per_account=cfg.tables_per_account
        ),
        "start": lambda: table_cases.start_class_table(db(), dispatcher(), account, table_id),
        "cancel": lambda: table_cases.cancel_table(db(), account, table_id),
    }
    _done, refused = attempt(run[action])
    if refused is not None:
        what = {
            "join": _("You did not take a seat"),
            "start": _("The table was not started"),
            "cancel": _("The table was not cancelled"),
        }[action]
        message = _("%(not_done)s: %(reason)s", not_done=what, reason=refused.message)
        return _refused_page(table_id, message, refused.status)
    return redirect(url_for("ui.table_page", table_id=table_id), code=303)


def _refused_page(table_id: int, message: str, status: int):
    return _render_table(table_id, message, status)


# ----------------------------------------------------------------------------- the seat's frames
def _seat_of(table: Table) -> tuple[int, int]:
    """``(match id, seat)`` of the viewer at a running table, or abort 403/409."""
    account = access.viewer()
    if account is None:
        abort(401, _("Sign in with your API token to see %(what)s.", what=_("this page")))
    try:
        return table_cases.playing_seat(db(), account, table)
    except (Forbidden, table_states.Conflict) as exc:
        answer = refusal_of(exc)
        assert answer is not None
        abort(answer.status, answer.message)


def _end(status: str | None) -> str:
    return "event: end\ndata: " + json.dumps({"type": "end", "status": status}) + "\n\n"


class _Place:
    """A seat stream's place (module docstring): one of this process's, and a lease of the
    account's (Redis); :meth:`release` is idempotent."""

    def __init__(self, url: str, account_id: int):
        if not _streams.acquire(blocking=False):
            abort(429, _("Too many tables are streaming on this server; the page asks every second instead."))
        self.token = uuid.uuid4().hex
        self.leases = LeaseSet(live.redis_client(url), f"arena:table:streams:{account_id}", STREAMS_PER_ACCOUNT)
        self._released = threading.Event()
        try:
            taken = self.leases.take(self.token, MAX_STREAM_S + 30)
        except redis.RedisError:
            _streams.release()
            abort(503, _("The tables' relay (Redis) cannot be reached; try again in a moment."))
        if not taken:
            _streams.release()
            abort(429, _("You have %(n)s tables streaming already.", n=STREAMS_PER_ACCOUNT))

    def release(self) -> None:
        if self._released.is_set():
            return
        self._released.set()
        _streams.release()
        try:
            self.leases.release(self.token)
        except redis.RedisError:
            pass  # the lease ends by itself


def _error(exc: Exception) -> str:
    return "event: error\ndata: " + json.dumps({"error": str(exc)[:200]}) + "\n\n"


def _after_over(status_of: Callable[[], str | None]) -> str:
    """The worker is done with the seat: wait (a little) for the result's store, then ``end``."""
    for _i in range(60):
        if status_of() != TournamentStatus.RUNNING:
            break
        time.sleep(0.5)
    return _end(status_of())


def _seat_events(url: str, mid: int, seat: int, status_of: Callable[[], str | None], place: _Place) -> Iterator[str]:
    try:
        sub = live.Subscription(url, seat_frames.seat_channel(mid, seat))
    except redis.RedisError as exc:
        place.release()
        yield _error(exc)
        return
    deadline = time.monotonic() + MAX_STREAM_S
    try:
        yield "retry: 2000\n: seat\n\n"
        for frame in seat_frames.snapshot(live.redis_client(url), mid, seat):
            yield f"data: {frame}\n\n"
        status = status_of()
        if status != TournamentStatus.RUNNING:
            yield _end(status)
            return
        for text in sub.messages(IDLE_S, until_end=False):
            if text is not None:
                yield f"data: {text}\n\n"
                if text.startswith('{"type":"over"'):
                    yield _after_over(status_of)
                    return
                continue
            status = status_of()
            if status != TournamentStatus.RUNNING:
                yield _end(status)
                return
            if time.monotonic() > deadline:
                return  # the browser reconnects
            yield ": keep-alive\n\n"
    except redis.RedisError as exc:
        yield _error(exc)
    finally:
        sub.close()
        place.release()


@bp.route("/tables/<int:table_id>/events")
def table_events(table_id: int):
    """The viewer's seat frames as server-sent events (module docstring): first the seat's
    snapshot, then each frame as it comes; ``end`` once the table is no longer running."""
    table = _table(table_id)
    mid, seat = _seat_of(table)
    account = access.viewer()
    assert account is not None
    url = settings().broker_url
    status_of = status_reader(Tournament, table.tournament_id)
    db().close()  # hold no database connection while streaming
    place = _Place(url, account.id)
    events = _seat_events(url, mid, seat, status_of, place)
    resp = Response(events, mimetype="text/event-stream", headers=SSE_HEADERS)
    resp.call_on_close(place.release)
    return resp


@bp.route("/tables/<int:table_id>/seat.json")
def table_seat(table_id: int):
    """The viewer's seat frames now (``GET /api/v1/tables/<id>/seat``), and the table's status."""
    table = _table(table_id)
    account = need_viewer()
    status = table.tournament.status
    if status != TournamentStatus.RUNNING:
        return jsonify({"status": status, "frames": []})
    got, refused = attempt(lambda: seat_frames_of(table_id, account))
    if got is None:
        assert refused is not None
        return jsonify({"message": refused.message}), refused.status
    return jsonify({"status": status, **got})


@bp.route("/tables/<int:table_id>/answer", methods=["POST"])
def table_answer(table_id: int):
    """A try at the decision asked now: JSON ``{"rid", "action"}``, header ``X-CSRF-Token``
    (the page's); 202 ``{"rid"}``, or the API's refusal as JSON ``{"message", "field"}``."""
    account = need_viewer()
    sent = request.headers.get("X-CSRF-Token", "")
    if not sent or sent != csrf_token():
        abort(400, _("The form expired or came from another site: reload the page and try again."))
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("rid"), str) or not isinstance(body.get("action"), dict):
        return jsonify({"message": "send {rid, action}", "field": "action"}), 422
    done, refused = attempt(lambda: push_answer(table_id, account, body["rid"][:64], body["action"]))
    if refused is not None:
        errs = field_errors(refused)
        return jsonify({"message": refused.message, "field": next(iter(errs), None)}), refused.status
    return jsonify({"rid": body["rid"]}), 202


@bp.route("/bots/<int:bot_id>/people", methods=["POST"])
def bot_people(bot_id: int):
    """What ``PATCH /api/v1/bots/<id>`` does with ``play_people`` (the owner), then the bot's page."""
    account = need_viewer()
    check_csrf()
    wanted = request.form.get("play_people") == "1"
    _done, refused = attempt(
        lambda: bot_cases.change_bot(
            db(), account, bot_id, allow_private=settings().allow_private_bot_urls, play_people=wanted
        )
    )
    if refused is not None:
        abort(refused.status, refused.message)
    return redirect(url_for("ui.bot_page", bot_id=bot_id), code=303)


# ----------------------------------------------------------------------------- the account page
@bp.route("/account")
def account_page():
    """The viewer's tables (newest first, ``?page=N``) and its ratings in the people's pool."""
    account = need_viewer()
    page = max(1, request.args.get("page", 1, type=int) or 1)
    rows, total = tables_of(db(), account.id, page=page, per_page=25)
    results = {}
    for r in rows:
        if r.match is not None:
            results[r.match.id] = db().get(MatchResult, r.match.id)
    return render_template(
        "account.html",
        rows=rows,
        total=total,
        page=page,
        results=results,
        ratings=person_ratings(db(), account.id),
        names={r.table.id: seat_names(r.table) for r in rows},
    )
