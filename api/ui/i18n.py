"""English and Japanese for the ``/ui`` pages (Flask-Babel).

Locale of a page request: the ``arena_lang`` cookie when it names a supported locale (set by
the switch link ``GET /ui/lang/<code>?next=<path>``), else the best match of the browser's
``Accept-Language`` among :data:`LOCALES`, else English. Requests outside ``/ui`` (the REST
API) are always English. UI responses carry ``Vary: Accept-Language, Cookie``.

Catalogs: ``api/ui/translations/<locale>/LC_MESSAGES/messages.po`` is the source; the compiled
``messages.mo`` next to it is committed, so a fresh clone needs no build step. After editing
templates or a ``.po`` file run ``bash infra/i18n.sh`` (extract, update, compile);
``tests/api/ui/test_i18n.py`` fails when a committed ``.mo`` does not match its ``.po``.

Japanese game terms follow the rule book (``docs/rules.md``) and its source texts: 大富豪,
革命, 8切り, Jバック, 縛り, 階段, 都落ち, 反則上がり, ミリオネア, ディール, ダウト, スルー,
バースト, 持ち時間.

The replay script (``static/replay.js``) is translated through :func:`js_strings`: a JSON
object of English message -> translated message embedded in every page (``#i18n``);
``{name}`` placeholders are filled in by the script.
"""

from __future__ import annotations

from pathlib import Path

from flask import Flask, Response, request
from flask_babel import Babel, get_locale
from flask_babel import gettext as _

from api.ui.marks import N_
from api.ui.rulesets import PAGE_RULESETS

#: Supported locales, the first is the default.
LOCALES = ("en", "ja")
LOCALE_NAMES = {"en": "English", "ja": "日本語"}
COOKIE = "arena_lang"
#: Lifetime of the language cookie, seconds (one year).
COOKIE_MAX_AGE_S = 365 * 24 * 3600
TRANSLATIONS = Path(__file__).resolve().parent / "translations"


def select_locale() -> str:
    """The locale of this request (module docstring)."""
    if not request.path.startswith("/ui"):
        return LOCALES[0]
    chosen = request.cookies.get(COOKIE, "")
    if chosen in LOCALES:
        return chosen
    return request.accept_languages.best_match(LOCALES, default=LOCALES[0]) or LOCALES[0]


def current_locale() -> str:
    loc = get_locale()
    return str(loc.language) if loc is not None else LOCALES[0]


def vary(resp: Response) -> Response:
    resp.vary.add("Accept-Language")
    resp.vary.add("Cookie")
    return resp


def init_i18n(app: Flask) -> None:
    """Attach Flask-Babel to ``app`` with the UI's catalogs and locale selector."""
    Babel(app, locale_selector=select_locale, default_translation_directories=str(TRANSLATIONS))


def ruleset_names() -> dict[str, str]:
    """Display names of the rule sets in the current locale (``api.ui.rulesets``' titles)."""
    return {name: _(rs.title) for name, rs in PAGE_RULESETS.items()}


def status_name(status: str) -> str:
    """Display name of a status (tournaments, matches, ladders, their entries and sets: the
    lifecycle enums) in the current locale (one catalog lookup: a page of 200 matches calls
    it 200 times)."""
    message = _STATUS_MESSAGES.get(status)
    return _(message) if message is not None else status


def check_warnings(result: dict | None) -> list[str]:
    """The warnings of a bot check's outcome (``arena.conformance``: ``warnings`` and the
    parallel ``warning_codes``) in the current locale: a known code is translated with its
    parameters, anything else (an older outcome, an unknown code) is shown as stored."""
    result = result or {}
    texts = list(result.get("warnings") or [])
    codes = list(result.get("warning_codes") or [])
    out = []
    for i, text in enumerate(texts):
        code = codes[i] if i < len(codes) and isinstance(codes[i], dict) else {}
        message = _WARNING_MESSAGES.get(str(code.get("code")))
        params = dict(code.get("params") or {})
        if message is None:
            out.append(text)
            continue
        if "ruleset" in params:
            params["ruleset"] = ruleset_names().get(params["ruleset"], params["ruleset"])
        if "kind" in params:
            params["kind"] = _(str(params["kind"]))  # the decision kinds' names (JS_MESSAGES)
        if "fault" in params:
            params["fault"] = fault_names().get(params["fault"], params["fault"])
        try:
            out.append(_(message, **params))
        except (KeyError, TypeError, ValueError):  # parameters that do not fit: the stored text
            out.append(text)
    return out


def health_error(health: dict | None) -> str:
    """The error of a check's health step (``arena.conformance``: ``error`` and, for a bot that
    dials out and was found not connected, ``error_code``: the step it reached) in the current
    locale; the stored text when its code is unknown (an older outcome)."""
    health = health or {}
    text = str(health.get("error") or "")
    raw = health.get("error_code")
    code: dict = raw if isinstance(raw, dict) else {}
    message = _HEALTH_MESSAGES.get(str(code.get("code")))
    if message is None:
        return text
    try:
        return _(message, **dict(code.get("params") or {}))
    except (KeyError, TypeError, ValueError):  # parameters that do not fit: the stored text
        return text


#: The English text of each health ``error_code`` (:func:`health_error`; ``arena.conformance.DIAL_MESSAGES``).
_HEALTH_MESSAGES: dict[str, str] = {
    "dial_unknown": N_("the bot is not connected to a gateway (no connection within %(wait_s)s s)"),
    "dial_never_connected": N_(
        "the bot never connected: no connection with its id reached a gateway in the last hour, none within"
        " %(wait_s)s s (is it running, with ARENA_BOT_ID and ARENA_GATEWAY_URL set?)"
    ),
    "dial_auth_failed": N_(
        "the bot connected %(ago_s)s s ago but failed authentication (close 4401: a wrong signature for its id;"
        " check ARENA_BOT_ID, ARENA_BOT_SECRET and the machine's clock)"
    ),
    "dial_refused": N_(
        "the bot connected %(ago_s)s s ago but its connection was refused (close %(code)s: %(meaning)s)"
    ),
    "dial_dropped": N_(
        "the bot authenticated, then its connection dropped %(ago_s)s s ago without a close (its program stopped"
        " or crashed, or its network went away), and it did not connect again within %(wait_s)s s"
    ),
    "dial_closed_by_bot": N_(
        "the bot authenticated, then closed its connection %(ago_s)s s ago (close %(code)s), and it did not"
        " connect again within %(wait_s)s s"
    ),
    "dial_closed_by_gateway": N_(
        "the bot authenticated, then the gateway closed its connection %(ago_s)s s ago (close %(code)s:"
        " %(meaning)s), and it did not connect again within %(wait_s)s s"
    ),
    "dial_connected": N_(
        "the bot authenticated %(ago_s)s s ago, but no connection of it took the check's request within %(wait_s)s s"
    ),
}


#: The English text of each check warning code (:func:`check_warnings`), marked for extraction.
_WARNING_MESSAGES: dict[str, str] = {
    "kind_not_asked": N_(
        "%(ruleset)s: the bot was never asked '%(kind)s' (its own plays never called for it), so its %(kind)s "
        "answers are not checked"
    ),
    "signature_not_refused": N_(
        "the bot answered a badly signed request with HTTP %(status)s, not 401: it does not check "
        "X-Arena-Signature, so anyone who knows its URL can play its moves (docs/protocol.md, signatures)"
    ),
    "auth_not_refused": N_(
        "a connection that answered the gateway's challenge with a wrong secret was not refused (close code "
        "%(status)s): the gateway does not check the proof"
    ),
    "auth_probe_failed": N_("the authentication probe could not reach the gateway: %(error)s"),
    "no_pings": N_(
        "the bot sent no keep-alive ping in %(silent_s)s s of connection: the protocol asks for a WebSocket ping"
        " every 5 s on each connection, answered before the next, so that a gateway that froze or a network gone"
        ' silent is noticed and the bot connects again in time (docs/protocol.md, "Pools and reconnection")'
    ),
    "signature_no_answer": N_(
        "the bot did not answer a badly signed request (%(fault)s), not 401: it does not check "
        "X-Arena-Signature, so anyone who knows its URL can play its moves (docs/protocol.md, signatures)"
    ),
}

#: The English name of each status (:func:`status_name`), marked for extraction.
_STATUS_MESSAGES: dict[str, str] = {
    "draft": N_("draft"),
    "running": N_("running"),
    "paused": N_("paused"),
    "finished": N_("finished"),
    "cancelled": N_("cancelled"),
    "queued": N_("queued"),
    "playing": N_("playing"),
    "failed": N_("failed"),
    "forfeited": N_("forfeited"),
    "scheduled": N_("scheduled"),
    "pending": N_("pending"),
    "ready": N_("ready"),
    "checking": N_("checking"),
    "check_failed": N_("check failed"),
    "created": N_("created"),
    "retrying": N_("retrying"),
    # ladders (arena.status: LadderStatus, EntryStatus, SetRating)
    "active": N_("active"),
    "closed": N_("closed"),
    "withdrawn": N_("withdrawn"),
    "replaced": N_("replaced"),
    "house": N_("house"),
    "rated": N_("rated"),
    "unrated": N_("unrated"),
    "void": N_("void"),
    "comparison": N_("comparison"),
}

#: English messages of ``static/replay.js`` and ``static/tournament_live.js`` (``{name}`` placeholders are
#: filled in by the script).
JS_MESSAGES: tuple[str, ...] = (
    N_("Joker"),
    N_("face-down: {card}"),
    N_("revealed by a doubt"),
    N_("played face-down (revealed)"),
    N_("seat {n}"),
    N_("Seat {n}"),
    N_("{n} card"),
    N_("{n} cards"),
    N_("bank {s}"),
    N_("out"),
    N_("to play"),
    N_("to decide on a doubt"),
    N_("to decide on the exchange"),
    N_("to give cards"),
    N_("to set the rate"),
    N_("to give the penalty cards"),
    N_("to discard"),
    N_("to act"),
    N_("act"),
    N_("no cards"),
    N_("empty"),
    N_("revealed"),
    N_("forfeits ({reason})"),
    N_("plays {cards}"),
    N_("({n} face-down: {cards})"),
    N_("(joker as {ranks})"),
    N_("passes"),
    N_("lets it through (スルー)"),
    N_("doubts! (ダウト)"),
    N_("gives {cards} as penalty"),
    N_("gives {cards}"),
    N_("accepts the exchange"),
    N_("declines the exchange"),
    N_("sets the rate to {rate}"),
    N_("{who} plays {cards}"),
    N_("({n} face-down)"),
    N_("{who} passes"),
    N_("{who} lets it through (スルー)"),
    N_("{who} doubts (ダウト)"),
    N_("Doubt reveal: the play was honest"),
    N_("Doubt reveal: the play was a bluff"),
    N_("{who} gives {cards} to {to} (penalty)"),
    N_("Field cleared (trick over)"),
    N_("8-cut by {who}: the field is cleared"),
    N_("Revolution! Card strength is reversed"),
    N_("Revolution reversed: normal strength again"),
    N_("J-back: strength reversed until the field clears"),
    N_("J-back ends"),
    N_("Suit lock {suits}: only these suits may follow"),
    N_("Number lock (stairs): only the next ranks may follow"),
    N_("Direction now clockwise"),
    N_("Direction now counter-clockwise"),
    N_("{who} is out of cards"),
    N_("(foul finish: ranked last)"),
    N_("{who} leads"),
    N_("{who} gives {cards} to {to}"),
    N_("{who} gives {count} card(s) to {to}"),
    N_("{who} accepts the exchange"),
    N_("{who} declines the exchange"),
    N_("{who} discards {cards}"),
    N_("5-skip: the next player is skipped"),
    N_("{who} forfeits ({reason})"),
    N_("Game {game} of set {set}"),
    N_("Deal {n}"),
    N_("{who} sets the rate to {rate}"),
    N_("Miyako-ochi: {who} falls to last place"),
    N_("Game over"),
    N_(": {who} wins"),
    N_("Score"),
    N_("Deal over: {who} wins"),
    N_("Set {n} over"),
    N_("Match over"),
    N_("Deal void"),
    N_("Revolution"),
    N_("card strength reversed"),
    N_("J-back"),
    N_("strength reversed until the trick ends"),
    N_("Lock {suits}"),
    N_("suit lock"),
    N_("Number lock"),
    N_("↻ clockwise"),
    N_("↺ counter-clockwise"),
    N_("Game {n}"),
    N_("Start of game {n}: {who} {turn}"),
    N_("{ms} ms"),
    N_("{s} s"),
    N_("bank {before} → {after}"),
    N_("FAULT {kind}"),
    N_("step {step} / {last}"),
    N_("Exchange (TM-3): the Millionaire may swap its whole hand for 10 cards drawn at random from the 14 set aside"),
    N_(
        "Card exchange (JDF-4): the daihinmin gives its 2 strongest cards to the daifugo, the hinmin its "
        "strongest to the fugo; they give back cards of their choice"
    ),
    N_("Running totals"),
    N_("after"),
    N_("Total"),
    N_("play"),
    N_("doubt"),
    N_("exchange"),
    N_("give"),
    N_("rate"),
    N_("penalty"),
    N_("discard"),
    N_("Running totals after {what}"),
    N_("before the first result"),
    N_("new in this hand: {card}"),
    N_("Outlined cards are new in the hand."),
    N_("Spade-3 return (スペ3返し) by {who}: beats the joker, the field is cleared"),
    N_("blind cards: {cards}"),
    N_("Set {set} · game {game}"),
    N_("through"),
    N_("Seat"),
    N_("game {g} · decision {n}"),
    N_("live view unavailable"),
    N_("hidden card"),
    N_("face-down card"),
    N_("Open the replay"),
    N_("The replay is shown when the tournament is finished."),
    N_("Match page"),
    N_("waiting for the next decision"),
    N_("reconnecting…"),
    N_("no longer running"),
    N_("live"),
    N_("in {m} min {s} s"),
    N_("in {s} s"),
    N_("any moment now"),
)

#: The messages of a person's table (static/table.js).
TABLE_MESSAGES: tuple[str, ...] = (
    N_("you"),
    N_("Your time ran out: a time-out is a fault (FAULT-1); the decision was forfeited."),
    N_("not sent"),
    N_("The answer was not sent (network): try again."),
    N_("Choose exactly {n} card(s)."),
    N_("Choose from {min} to {max} card(s)."),
    N_("The match is over: the result follows."),
    N_("to {who}"),
    N_("you lead"),
    N_("no legal play: pass (TM-6)"),
    N_("Waiting for the deal…"),
    N_("Game over."),
    N_("Waiting…"),
    N_("Waiting for {who} {turn}"),
    N_("Your time {t}"),
    N_("has passed"),  # a seat's tag (not "passed", a bot check's status)
    N_("Millionaire"),
    N_("total {n}"),
    N_("Rate ×{n}"),
    N_("{n}-card trick"),
    N_("Doubt or through?"),
    N_("Your total {n}"),
    N_("Refused"),
    N_("Not your turn."),
    N_("Sent; the arena checks it…"),
    N_("Play cards"),  # the button (not "Play", the page's name in the navigation)
    N_("Pass"),
    N_("Clear"),
    N_(
        "Million Doubt: F (or the ↓ on a selected card) plays a card face down; a face-down play is "
        "accepted if the hidden cards could make it legal (MD-3), and may be doubted (MD-6)."
    ),
    N_("Which reading of the joker?"),
    N_("joker as {ranks}"),
    N_("Legal plays (a click selects them):"),
    N_("and {n} more"),
    N_("No face-up play beats the table: play face down, or pass."),
    N_("Doubt! (ダウト)"),
    N_("Let it through (スルー)"),
    N_(
        "A doubt reveals the face-down cards (MD-7): if they lie you give the penalty, if they are "
        "honest your opponent does."
    ),
    N_("Exchange my hand"),
    N_("Keep my hand"),
    N_("Exchanging gives up your 10 cards for 10 drawn at random from the 14 set aside (TM-3)."),
    N_("Every point of this deal is multiplied by the rate, your own included (TM-3)."),
    N_("Give {n} card(s)"),
    N_("Discard {n} card(s)"),
    N_("Give {n} card(s) as the penalty"),
    N_("exactly {n}"),
    N_("from {min} to {max}"),
    N_("Click cards of the table: they go into your opponent's hand; the others leave the game (MD-7)."),
    N_("face down"),
    N_("face down (F)"),
    N_("Your hand: {cards}"),
    N_("Show every hand"),
    N_("Your turn: play cards or pass"),
    N_("Your turn: doubt the face-down play, or let it through"),
    N_("You give the penalty: choose cards of the table for your opponent"),
    N_("You are the Millionaire: exchange your hand, or keep it"),
    N_("You are the Millionaire: set the rate"),
    N_("Give cards"),
    N_("Discard cards, or none"),
    N_("Your turn"),
    N_("Card exchange: give {n} card(s) to {who}"),
    N_("7-pass: give up to {n} card(s) to {who}, or none"),
    N_("10-discard: discard up to {n} card(s), or none"),
    N_("You play {n} card(s) face down"),
    N_("{who} plays {n} card(s) face down"),
    N_("You play {cards}"),
    N_("You give {cards} to {to} (penalty)"),
    N_("You give {cards} to {to}"),
    N_("You forfeit ({reason})"),
    N_("Deal over: you win"),
    N_("You exchange your hand"),
    N_("You keep your hand"),
    N_("You pass"),
    N_("You let it through (スルー)"),
    N_("You doubt (ダウト)"),
    N_("You are out of cards"),
    N_("You lead"),
    N_("You discard {cards}"),
    N_("You set the rate to {rate}"),
    N_("Your match score {n}"),
    N_("Game over: your score {n}"),
    N_("and {n} with a joker standing in for a card: select it with them (C-4)"),
)


def fault_names() -> dict[str, str]:
    """Display names of the fault kinds recorded by the runner (FAULT-1, FAULT-3)."""
    return {
        "timeout": _("time-out"),
        "connection_error": _("connection error"),
        "http_status": _("HTTP error status"),
        "body_too_large": _("answer too large"),
        "invalid_json": _("invalid JSON"),
        "invalid_action": _("invalid action"),
        "bot_error": _("bot error"),
        "max_faults": _("too many faults (forfeit)"),
    }


def js_strings() -> dict[str, str]:
    """English message -> message in the current locale, for ``static/replay.js``; fault kinds
    as ``"fault:<kind>"`` -> display name."""
    out = {k: _(k) for k in JS_MESSAGES + TABLE_MESSAGES}
    out.update({f"fault:{k}": v for k, v in fault_names().items()})
    return out
