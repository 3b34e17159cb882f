"""Language switch and translated names for the ``/ui`` pages (see :mod:`api.ui.i18n`).

``GET /ui/lang/<code>?next=<path>`` stores ``code`` (``en`` or ``ja``) in the ``arena_lang``
cookie (path ``/ui``, one year, ``SameSite=Lax``) and redirects (303) to ``next`` when it is a
path under ``/ui``, else to ``/ui/``; an unknown code is a 404.
"""

from __future__ import annotations

from flask import Response, abort, redirect, request
from flask_babel import gettext as _
from markupsafe import Markup, escape

from api.ui import i18n
from api.ui.faults import fault_detail
from api.ui.rulesets import page_facts
from api.ui.views import bp, next_target


@bp.route("/lang/<code>")
def set_language(code: str):
    if code not in i18n.LOCALES:
        abort(404, _("There is no language %(code)s.", code=code[:16]))
    resp = redirect(next_target(request.args.get("next")), code=303)
    resp.set_cookie(i18n.COOKIE, code, max_age=i18n.COOKIE_MAX_AGE_S, path="/ui", samesite="Lax", httponly=True)
    return resp


@bp.after_request
def _vary(resp: Response) -> Response:
    return i18n.vary(resp)


def option_value(value) -> str:
    """An option value as a reader expects it: yes/no for booleans, lists joined by commas."""
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if value is None:
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(option_value(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {option_value(v)}" for k, v in value.items())
    return str(value)


bp.add_app_template_filter(option_value, "option_value")


def option_names() -> dict[str, str]:
    """Display names of the rule-set options (engine option keys)."""
    return {
        "burst_score": _("burst score (バースト)"),
        "target_score": _("target score"),
        "rate_choices": _("rate choices"),
        "sets": _("sets"),
        "games_per_set": _("games per set"),
        "rank_points": _("rank points"),
        "set_bonus": _("set bonus"),
        "eleven_back": _("11-back (イレブンバック)"),
        "stairs_revolution": _("stair revolution (階段革命)"),
        "number_lock": _("number lock (数字しばり)"),
        "five_skip": _("5-skip (5スキップ)"),
        "seven_pass": _("7-pass (7渡し)"),
        "ten_discard": _("10-discard (10捨て)"),
    }


def paren(text) -> Markup:
    """``text`` in the current language's parentheses (``(…)``; Japanese ``（…）``), HTML-safe:
    ``text`` is escaped unless it is markup already (a link)."""
    return Markup(escape(_("(%(text)s)"))) % {"text": text}


@bp.context_processor
def _i18n_globals():
    return {
        "locale": i18n.current_locale(),
        "locale_names": i18n.LOCALE_NAMES,
        "js_strings": i18n.js_strings(),
        "ruleset_names": i18n.ruleset_names(),
        "ruleset_facts": page_facts,
        "status_name": i18n.status_name,
        "check_warnings": i18n.check_warnings,
        "health_error": i18n.health_error,
        "option_names": option_names(),
        "fault_names": i18n.fault_names(),
        "fault_detail": fault_detail,
        # punctuation of the current language: "、" "：" "（…）" in Japanese
        "list_sep": _(", "),
        "colon": _(": "),
        "paren": paren,
        "kind_names": {k: _(k) for k in ("play", "doubt", "exchange", "give", "rate", "penalty", "discard")},
        "role_names": {"organizer": _("organizer"), "contestant": _("contestant"), "admin": _("admin")},
    }
