"""The ladder pages of ``/ui`` (docs/ui.md, "Ladders"; the rules: docs/ladder.md).

=================================================== ==============================================
``GET /ui/ladders``                                 the ladders the viewer may read
``GET|POST /ui/ladders/new``                        organizers: ``POST /api/v1/ladders``
``GET /ui/ladders/<id>``                            live table, sets playing now, recent sets,
                                                    the official table and its matrix, the
                                                    collusion view (organizers), the viewer's
                                                    entries and the enter form
``GET /ui/ladders/<id>/live.html``                  the parts of the page that move (the page's
                                                    script re-reads them every
                                                    :data:`LIVE_POLL_S` seconds)
``POST /ui/ladders/<id>/enter``                     ``POST /api/v1/ladders/<id>/entries``
``POST /ui/ladders/<id>/entries/<bot>/<action>``    ``pause``, ``resume``, ``withdraw``
=================================================== ==============================================

A bot's profile (``/ui/bots/<id>``) has one ladder section per ladder it is entered in:
:mod:`api.ui.profiles`.

Access is the REST API's (:mod:`arena.usecases.ladders`, :mod:`arena.access`): an open
ladder is read by anyone, a private one by its members and organizers (to others it does not
exist: a visitor is asked to sign in, an account gets 404). The forms run the endpoints'
schemas and use cases (:func:`api.ui.forms.attempt`), with the same CSRF token as the
other forms.
"""

from __future__ import annotations

import re
from typing import Any

from flask import abort, redirect, render_template, request, session, url_for
from flask_babel import gettext as _
from sqlalchemy import func, select

import engine
from api.common import MAX_ID
from api.database import db, settings
from api.errors import Refusal, load_json
from api.resources.ladders import EntryCreateSchema, LadderCreateSchema, ladder_dict, online
from api.ui import access, fields
from api.ui.forms import (
    attempt,
    check_csrf,
    field_errors,
    form_number,
    need_viewer,
    refusal_banner,
    route_refusal,
    rule_labels,
)
from api.ui.i18n import ruleset_names, status_name
from api.ui.views import bp, next_target
from arena import access as policy
from arena import ladderboard
from arena.db.models import Account, Bot, Ladder, LadderEntry, LadderMember
from arena.sources.ladder import LadderConfig
from arena.status import BotStatus, EntryStatus, LadderStatus, SetRating
from arena.usecases import ladders as usecases

#: Seconds between two reads of a ladder page's moving parts by its script.
LIVE_POLL_S = 10
#: Sets listed as playing now, and as recent, on a ladder page.
PLAYING_SHOWN = 20
RECENT_SHOWN = 20
ENTRY_ACTIONS = ("pause", "resume", "withdraw")
#: Entry statuses that keep a bot out of the enter form (it holds a place, or was replaced).
NOT_ENTERABLE = (EntryStatus.ACTIVE, EntryStatus.PAUSED, EntryStatus.REPLACED)


# ----------------------------------------------------------------------------- reads
def _readable(ladder_id: int) -> Ladder:
    """The ladder if the viewer may read it; else a visitor is asked to sign in (401) and an
    account gets 404 (a private ladder does not exist for others)."""
    account = access.viewer()
    ladder, refused = (
        attempt(lambda: usecases.ladder_for(db(), account, ladder_id))
        if 1 <= ladder_id <= MAX_ID
        else (None, route_refusal())
    )
    if ladder is None:
        if account is None:
            abort(401, _("Sign in with your API token to see %(what)s.", what=_("ladder %(id)s", id=ladder_id)))
        abort(404, _("There is no ladder %(id)s.", id=ladder_id))
    return ladder


def _live(ladder: Ladder) -> dict[str, Any]:
    """The moving parts of a ladder page: the live table with who can play now, the sets
    playing now (``more_playing``: past :data:`PLAYING_SHOWN`)."""
    account = access.viewer()
    _ladder, rows = usecases.live_table(db(), account, ladder.id, online(), settings().ladder_probe_s)
    playing = usecases.ladder_sets(db(), account, ladder.id, playing=True, limit=PLAYING_SHOWN + 1)
    return {
        "rows": rows,
        "playing": playing[:PLAYING_SHOWN],
        "more_playing": len(playing) > PLAYING_SHOWN,
        "cfg": LadderConfig.from_dict(ladder.config),
        "poll_s": LIVE_POLL_S,
    }


def official_view(ladder: Ladder) -> dict[str, Any] | None:
    """The last batch fit for the page: rows with names, bot ids and 95% intervals of the
    strength, and the significance matrix of the top of the table (``cells[i][j]``: row ``i``
    against column ``j``, its z and whether it is significant at 95%). None before the first fit."""
    fitted = ladderboard.official(db(), ladder.id)
    if fitted is None:
        return None
    ids = [int(r["entry_id"]) for r in fitted.table] + [int(e) for e in fitted.matrix.get("entries", [])]
    names = ladderboard.entry_names(db(), ids)
    bots = dict(db().execute(select(LadderEntry.id, LadderEntry.bot_id).where(LadderEntry.id.in_(set(ids)))).all())
    rank = {int(r["entry_id"]): int(r["rank"]) for r in fitted.table}
    rows = [
        {
            **r,
            "name": names.get(int(r["entry_id"]), "?"),
            "bot_id": bots.get(int(r["entry_id"])),
            "lo": r["strength"] - 1.96 * r["se"],
            "hi": r["strength"] + 1.96 * r["se"],
        }
        for r in fitted.table
    ]
    head = [int(e) for e in fitted.matrix.get("entries", [])]
    z, sig = fitted.matrix.get("z", []), fitted.matrix.get("significant", [])
    matrix = [
        {
            "entry_id": e,
            "name": names.get(e, "?"),
            "rank": rank.get(e),
            "cells": [
                {"z": z[i][j], "z1": round(z[i][j], 1) + 0.0, "significant": bool(sig[i][j]), "self": i == j}
                for j in range(len(head))
            ],
        }
        for i, e in enumerate(head)
    ]
    return {"computed_at": fitted.computed_at, "sets": fitted.sets, "rows": rows, "matrix": matrix}


def _collusion(ladder: Ladder, account: Account) -> dict[str, list[dict[str, Any]]]:
    """The organizers' integrity view (:func:`arena.usecases.ladders.collusion_view`) with the
    entries' names: ``pairs`` (head-to-head records far from what the strengths predict) and
    ``recall`` (entries better in a set's last game than in its first)."""
    view = usecases.collusion_view(db(), account, ladder.id)
    pairs, recall = view["pairs"], view["recall"]
    names = ladderboard.entry_names(
        db(), [r["a"] for r in pairs] + [r["b"] for r in pairs] + [r["entry_id"] for r in recall]
    )
    return {
        "pairs": [{**r, "a_name": names.get(r["a"], "?"), "b_name": names.get(r["b"], "?")} for r in pairs],
        "recall": [{**r, "name": names.get(r["entry_id"], "?")} for r in recall],
    }


def _mine(ladder: Ladder, account: Account | None, rows: list[ladderboard.TableRow]) -> dict[str, Any] | None:
    """What a signed-in viewer may do on the ladder: its entries shown in the table (to pause,
    resume, withdraw), its bots that may enter (ready, of the rule set, not entered now) and
    those that could once checked."""
    if account is None:
        return None
    held = set(
        db().scalars(
            select(LadderEntry.bot_id).where(
                LadderEntry.ladder_id == ladder.id,
                LadderEntry.bot_id.is_not(None),
                LadderEntry.status.in_(NOT_ENTERABLE),
            )
        )
    )
    own = [
        b
        for b in db().scalars(
            select(Bot).where(Bot.owner_id == account.id, Bot.status != BotStatus.DELETED).order_by(Bot.id)
        )
        if ladder.ruleset in (b.rulesets or []) and b.id not in held
    ]
    return {
        "entries": [r for r in rows if r.owner_id == account.id],
        "ready": [b for b in own if b.status == BotStatus.READY],
        "unready": [b for b in own if b.status != BotStatus.READY],
    }


def _sees_members(ladder: Ladder, account: Account | None) -> bool:
    """A private ladder's members are listed to its owner and organizers."""
    if usecases.is_public(ladder) or account is None:
        return False
    return policy.is_organizer(account) or account.id == ladder.owner_id


def _ladder_page(ladder_id: int, *, errors: dict | None = None, form: dict | None = None, status: int = 200):
    ladder = _readable(ladder_id)
    account = access.viewer()
    live = _live(ladder)
    before = request.args.get("before", type=int)
    if before is not None and not 0 < before <= MAX_ID:
        before = None
    recent = usecases.ladder_sets(db(), account, ladder.id, playing=False, limit=RECENT_SHOWN, before=before)
    cfg = live["cfg"]
    return render_template(
        "ladder.html",
        ladder=ladder,
        info=ladder_dict(ladder),
        live=live,
        recent=recent,
        older=recent[-1].match_id if len(recent) == RECENT_SHOWN else None,
        official=official_view(ladder),
        collusion=_collusion(ladder, account) if account is not None and policy.is_organizer(account) else None,
        mine=_mine(ladder, account, live["rows"]),
        errors=errors or {},
        form=form or {"bot_id": "", "max_concurrent": "1", "max_sets_per_hour": "30"},
        limits={"max_concurrent": cfg.max_concurrent, "max_sets_per_hour": cfg.max_sets_per_hour},
        public=usecases.is_public(ladder),
        members=members_of(ladder) if _sees_members(ladder, account) else None,
    ), status


@bp.route("/ladders")
def ladders_page():
    """The ladders the viewer may read (open ones first), each with its entrants and sets."""
    account = access.viewer()
    found = usecases.list_ladders(db(), account)
    counts = dict(
        db()
        .execute(
            select(LadderEntry.ladder_id, func.count())
            .where(
                LadderEntry.ladder_id.in_([ld.id for ld in found]),
                LadderEntry.status.in_((EntryStatus.ACTIVE, EntryStatus.PAUSED)),
            )
            .group_by(LadderEntry.ladder_id)
        )
        .all()
    )
    return render_template("ladders.html", ladders=found, entrants=counts)


@bp.route("/ladders/<int:ladder_id>")
def ladder_page(ladder_id: int):
    return _ladder_page(ladder_id)


@bp.route("/ladders/<int:ladder_id>/live.html")
def ladder_live(ladder_id: int):
    """The live table and the sets playing now (``_ladder_live.html``), under the page's rules."""
    ladder = _readable(ladder_id)
    return render_template("_ladder_live.html", ladder=ladder, live=_live(ladder))


# ----------------------------------------------------------------------------- entries
@bp.route("/ladders/<int:ladder_id>/enter", methods=["POST"])
def ladder_enter(ladder_id: int):
    """What ``POST /api/v1/ladders/<id>/entries`` does with ``bot_id``, ``max_concurrent``
    and ``max_sets_per_hour``; then the page (a refusal shown by its field, values kept)."""
    account = need_viewer()
    check_csrf()
    form = {k: request.form.get(k, "") for k in ("bot_id", "max_concurrent", "max_sets_per_hour")}
    body = {k: form_number(v) for k, v in form.items()}
    made, refused = (
        attempt(lambda: usecases.enter_ladder(db(), account, ladder_id, **load_json(EntryCreateSchema(), body)))
        if 1 <= ladder_id <= MAX_ID
        else (None, route_refusal())
    )
    if made is None:
        assert refused is not None
        if refused.status == 404:
            abort(404, _("There is no ladder %(id)s.", id=ladder_id))
        errors = field_errors(refused)
        labels = {
            "bot_id": _("Bot"),
            "max_concurrent": _("Sets at once"),
            "max_sets_per_hour": _("Sets per hour"),
        }
        errors["message"] = refusal_banner(refused, _("The bot was not entered"), errors, labels)
        return _ladder_page(ladder_id, errors=errors, form=form, status=refused.status)
    return redirect(url_for("ui.ladder_page", ladder_id=ladder_id) + "#mine", code=303)


@bp.route("/ladders/<int:ladder_id>/entries/<int:bot_id>/<action>", methods=["POST"])
def ladder_entry_action(ladder_id: int, bot_id: int, action: str):
    """What ``POST /api/v1/ladders/<id>/entries/<bot>/<action>`` does (pause, resume,
    withdraw); then back to ``next`` (the ladder page, or the bot's page) with the API's
    message when it refused."""
    if action not in ENTRY_ACTIONS:
        abort(404)
    account = need_viewer()
    check_csrf()
    run = {"pause": usecases.pause_entry, "resume": usecases.resume_entry, "withdraw": usecases.withdraw_entry}[action]
    ok = 1 <= ladder_id <= MAX_ID and 1 <= bot_id <= MAX_ID
    _done, refused = attempt(lambda: run(db(), account, ladder_id, bot_id)) if ok else (None, route_refusal())
    if refused is not None:
        what = {
            "pause": _("The entry was not paused"),
            "resume": _("The entry was not resumed"),
            "withdraw": _("The bot was not withdrawn"),
        }[action]
        session["ui_notice"] = refusal_banner(refused, what, {}, {})[:500]
    target = request.form.get("next") or url_for("ui.ladder_page", ladder_id=ladder_id) + "#mine"
    return redirect(next_target(target), code=303)


# ----------------------------------------------------------------------------- organizers
def _default_form() -> dict[str, Any]:
    return {
        "name": "",
        "ruleset": engine.MILLION_DOUBT,
        "open": False,
        "members": "",
        "description": "",
        "initial": "60",
        "increment": "10",
        "cap": "60",
        "max_faults": "3",
        "fill_with_house_bots": True,
        "opts": fields.default_values(),
    }


def _new_ladder_page(form: dict, errors: dict | None = None, message: str | None = None, status: int = 200):
    account = need_viewer()
    if not policy.is_organizer(account):
        abort(403, _("Only organizers create ladders."))
    taken = set(db().scalars(select(Ladder.open_ruleset).where(Ladder.open_ruleset.is_not(None))))
    return render_template(
        "ladder_new.html",
        form=form,
        errors=errors or {},
        message=message,
        rulesets=engine.RULESETS,
        seats=engine.SEATS,
        open_taken=[ruleset_names().get(rs, rs) for rs in engine.RULESETS if rs in taken],
        option_fields=fields.option_fields(),
        ranges=fields.schema_ranges(),
        field_name=fields.field_name,
    ), status


def _members(text: str) -> tuple[list[int | str], str | None]:
    """The members typed in the form (account names or ids, separated by commas or spaces) as
    account ids; an id is passed on as it is (the API judges it), a name is looked up. Returns
    ``(ids, error)``: ``error`` names the names that are no account."""
    tokens = [t for t in re.split(r"[,\s、，]+", text.strip()) if t]
    names = [t for t in tokens if not t.isdigit()]
    found = dict(db().execute(select(Account.name, Account.id).where(Account.name.in_(names))).all()) if names else {}
    missing = [n for n in names if n not in found]
    if missing:
        return [], _("no account named %(names)s", names=", ".join(missing))
    return [int(t) if t.isdigit() else found[t] for t in tokens], None


def _ladder_labels(ruleset: str) -> dict[str, str]:
    """Form field -> label of the ladder form (:func:`api.ui.forms.refusal_banner`)."""
    return {
        **rule_labels(ruleset),
        "open": _("Open ladder"),
        "members": _("Members (private ladder)"),
        "description": _("Description"),
        "max_faults": _("Faults per set before forfeit (FAULT-3)"),
        "config": _("Fill tables with house bots"),
    }


@bp.route("/ladders/new", methods=["GET", "POST"])
def ladder_new():
    """GET: the form; POST: what ``POST /api/v1/ladders`` does with the form's fields, then
    the ladder's page.

    Fields: ``name``, ``ruleset``, ``open`` (``1``: the rule set's one open ladder, public;
    else private), ``members`` (account names or ids, for a private ladder), ``description``,
    ``initial``, ``increment``, ``cap`` (TIME-1, seconds), ``max_faults``,
    ``fill_with_house_bots`` (``1``), and one ``opt-<ruleset>-<option>`` per option
    (:mod:`api.ui.fields`). A refusal shows the API's messages by their fields, the form kept."""
    if request.method == "GET":
        return _new_ladder_page(_default_form())
    account = need_viewer()
    check_csrf()
    f = request.form
    form: dict[str, Any] = {
        k: f.get(k, "") for k in ("name", "ruleset", "members", "description", "initial", "increment", "cap")
    }
    form["max_faults"] = f.get("max_faults", "")
    form["open"] = f.get("open") == "1"
    form["fill_with_house_bots"] = f.get("fill_with_house_bots") == "1"
    form["opts"] = {
        fields.field_name(rs, of.name): (f.get(fields.field_name(rs, of.name)) == "1")
        if of.kind == "bool"
        else f.get(fields.field_name(rs, of.name), "")
        for rs, option_fields in fields.option_fields().items()
        for of in option_fields
    }
    members, bad_members = _members(form["members"])
    if bad_members:
        unknown = Refusal(422, bad_members, {"json": {"members": [bad_members]}})
        errors = {"members": bad_members}
        message = refusal_banner(unknown, _("The ladder was not created"), errors, _ladder_labels(form["ruleset"]))
        return _new_ladder_page(form, errors, message, 422)
    body: dict[str, Any] = {
        "name": form["name"],
        "ruleset": form["ruleset"],
        "open": form["open"],
        "members": members,
        "description": form["description"],
        "options": fields.form_to_options(form["ruleset"], f),
        "time_rules": {k: form_number(form[k], float) for k in ("initial", "increment", "cap")},
        "max_faults": form_number(form["max_faults"]),
        "config": {"fill_with_house_bots": form["fill_with_house_bots"]},
    }

    def create():
        data = load_json(LadderCreateSchema(), body)
        return usecases.create_ladder(db(), account, open_ladder=data.pop("open"), **data)

    made, refused = attempt(create)
    if made is None:
        assert refused is not None
        errors = fields.option_error_fields(form["ruleset"], field_errors(refused))
        message = refusal_banner(refused, _("The ladder was not created"), errors, _ladder_labels(form["ruleset"]))
        return _new_ladder_page(form, errors, message, refused.status)
    return redirect(url_for("ui.ladder_page", ladder_id=made.id), code=303)


def members_of(ladder: Ladder) -> list[str]:
    """The names of a private ladder's members (its page shows them to organizers)."""
    return list(
        db().scalars(
            select(Account.name)
            .join(LadderMember, LadderMember.account_id == Account.id)
            .where(LadderMember.ladder_id == ladder.id)
            .order_by(Account.name)
        )
    )


def ladder_status(status: str) -> str:
    """A ladder's status in the page's language: ``active`` reads *running* (the entries'
    ``active`` reads *entered*: :func:`api.ui.i18n.status_name`)."""
    return _("running") if status == LadderStatus.ACTIVE else status_name(status)


@bp.app_context_processor
def _ladder_notes():
    """What each rating status of a ladder set means (the sets tables' titles); a ladder's
    status (:func:`ladder_status`)."""
    return {
        "ladder_status": ladder_status,
        "rating_notes": {
            SetRating.PENDING.value: _("not stored yet, or waiting for its pars"),
            SetRating.RATED.value: _("moved its entrants' ratings once"),
            SetRating.UNRATED.value: _("a seat never made a valid decision (a forfeit): never rated"),
            SetRating.VOID.value: _("cancelled or failed: no result"),
            SetRating.COMPARISON.value: _("a new version and its parent on the same deal: compared, not rated"),
        },
    }
