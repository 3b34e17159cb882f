"""Checking a bot before it may enter a tournament (``POST /api/v1/bots/{id}/check``).

The check runs on a worker (Celery task ``arena.check_bot``, :func:`run_check`; in-process in
eager mode); the API answers 202 at once and the bot is ``checking`` until it is done.
:func:`check_bot` runs, in order: URL validation (:func:`arena.url_policy.check_bot_url`);
the health check (:func:`health_check`: ``GET <url>`` must answer 200 with a JSON object
holding a string ``name`` and a ``protocol`` int or ``protocols`` list); one badly signed
request (:func:`signature_probe`: must be answered 401, else a warning); for each rule set
(:func:`conformance_game`) a random short match and the fixed positions of :data:`PROBES`
(ACT; LR-5 give, LR-6 discard, MD-7 penalty), which ask every decision kind whatever the
bot plays, under :data:`CONFORMANCE_TIME_RULES_S`. A rule set passes with no fault (FAULT-1)
and every kind of :data:`REQUIRED_KINDS` (all of :data:`DECISION_KINDS`) asked; a kind of
:data:`CHOICE_KINDS` (none today) never asked is warned about. Step by step:
docs/operations.md, "Conformance game (bot check)".

The outcome is a JSON-ready dict ``{"ok": bool, "url": {...}, "health": {...},
"signature": {...}, "conformance": [...], "warnings": [str], "warning_codes": [{"code",
"params"}]}`` (``warning_codes[i]`` is ``warnings[i]`` as a message id and its parameters,
which the pages translate); :func:`run_check` stores it
(``bot_checks.result`` and ``bots.last_check``) and the bot becomes ``ready`` or ``failed``
(:func:`arena.lifecycle.finish_check`).
"""

from __future__ import annotations

import json
import logging
import secrets as _secrets
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import redis
from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.sync.client import connect as ws_connect

import engine
from arena import lifecycle, notices, relay
from arena.config import Settings
from arena.db.session import shared_sessions
from arena.health import HEALTH_TIMEOUT_S, health_check, judge_health_body, truncate_text
from arena.matchlog import Exchange
from arena.runner.connected import ConnectedPlayer
from arena.runner.match import Match, MatchConfig, Observers
from arena.runner.players import ArenaFailure, HttpPlayer, LocalPlayer, Outcome, Player, SlotUse
from arena.url_policy import BotUrlError, check_bot_url
from bots_sdk import protocol, wire
from bots_sdk.bot import Bot, Request
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules

log = logging.getLogger("arena.checks")

#: Time rules of the conformance games, seconds (TIME-1): a 10 s bank, +1 s, 10 s cap.
CONFORMANCE_TIME_RULES_S = {"initial": 10.0, "increment": 1.0, "cap": 10.0}
#: The sample bot seated against the checked bot.
CONFORMANCE_OPPONENT = "greedy"
#: The random short match of each rule set: 2 Million Doubt games (a duplicate pair), one
#: Trump Millionaire deal (target 1 point), one JDF game (1 set of 1 game).
CONFORMANCE_SETUP = {
    "million_doubt": ({}, 2),
    "trump_millionaire": ({"target_score": 1}, 1),
    "jdf": ({"sets": 1, "games_per_set": 1}, 1),
}
#: Faults listed in the outcome at most.
MAX_LISTED_FAULTS = 5
#: Every decision kind of each rule set (ACT). The fixed positions of :data:`PROBES`
#: ask every one of them of the checked bot whatever it plays: never asked fails the check.
DECISION_KINDS: dict[str, tuple[str, ...]] = {
    "million_doubt": ("play", "doubt", "penalty"),
    "trump_millionaire": ("play", "exchange", "rate", "give", "discard"),
    "jdf": ("play", "give", "discard"),
}
#: Kinds the fixed positions always ask the checked bot (today every kind of
#: :data:`DECISION_KINDS`): never asked fails the check.
REQUIRED_KINDS: dict[str, tuple[str, ...]] = dict(DECISION_KINDS)
#: Kinds of :data:`DECISION_KINDS` not in :data:`REQUIRED_KINDS`: asked only when the bot's
#: own choice calls for them; never asked gives the warning ``kind_not_asked`` (see
#: :func:`kind_not_asked`). Empty: an opening (:class:`Probe`) reaches any decision the engine
#: can reach, so every kind is forced. A kind added to the engine with no position forcing it
#: yet is left out of REQUIRED_KINDS, and lands here.
CHOICE_KINDS: dict[str, tuple[str, ...]] = {
    rs: tuple(k for k in DECISION_KINDS[rs] if k not in REQUIRED_KINDS[rs]) for rs in DECISION_KINDS
}

#: Both local rules of the give and discard positions (LR-5, LR-6): a bot is checked with them together.
_LOCAL = {"seven_pass": True, "ten_discard": True}
_WEAK = {"1": ["3C", "4C", "5C", "6C", "3D"], "2": ["4D", "5D", "6D", "3H", "4H"], "3": ["5H", "6H", "4S", "5S", "6S"]}
_SEVENS_TENS = ["7S", "7H", "TS", "TH"]
_MD_HIGH = ["9S", "9D", "TH", "QD", "KC", "AS", "2H"]
_MD_LOW = ["3C", "3D", "3H", "4C", "4D", "4H", "5C"]


class Probe(NamedTuple):
    """A fixed position of the check, the checked bot at seat 0.

    Attributes:
        name: the position's name in the outcome (``games[].probe``, ``faults[].probe``).
        options: the rule set's options (the local rules the position needs: LR-5, LR-6).
        setup: the scenario ``setup`` (:func:`engine.from_setup`): hands, leader, state.
        liars: seats played by :class:`FaceDownLiar` (the others: the greedy sample bot).
        opening: ``(seat, action)`` moves the check itself answers, in order, before any
            request reaches a bot: the position a bot is then asked in is reached whatever it
            plays (a 7 just played: ``give``; a doubt just lost: ``penalty``). The opening's
            decisions of seat 0 are not sent to the bot nor counted as asked.
        forces: the decision kinds the position asks the checked bot whatever it answers.
    """

    name: str
    options: dict[str, Any]
    setup: dict[str, Any]
    liars: tuple[int, ...] = ()
    opening: tuple[tuple[int, dict[str, Any]], ...] = ()
    forces: tuple[str, ...] = ()


#: Fixed positions per rule set (docs/operations.md, "Conformance game", step 4). Check-only
#: deals: no seed, nothing taken from a tournament's deals.
#: The give and discard positions of Trump Millionaire and JDF: the bot's seat leads 7S (LR-5)
#: and is asked give at once, or leads TS (LR-6) and is asked discard.
_GIVE_DISCARD = (
    Probe(
        "give",
        _LOCAL,
        {"hands": {"0": _SEVENS_TENS, **_WEAK}, "leader": 0},
        opening=((0, {"type": "play", "cards": ["7S"]}),),
        forces=("give", "play"),
    ),
    Probe(
        "discard",
        _LOCAL,
        {"hands": {"0": _SEVENS_TENS, **_WEAK}, "leader": 0},
        opening=((0, {"type": "play", "cards": ["TS"]}),),
        forces=("discard", "play"),
    ),
)

PROBES: dict[str, list[Probe]] = {
    "million_doubt": [
        # The bot leads; the liar answers every play with face-down low cards (a lie over the
        # bot's high cards; no 8, J or 4 of a kind): the bot is asked doubt (MD-6).
        Probe("doubt", {}, {"hands": {"0": _MD_HIGH, "1": _MD_LOW}, "leader": 0}, liars=(1,), forces=("play", "doubt")),
        # Opening: seat 1 leads 3C, the bot's seat plays 9S face down (honest), seat 1 doubts:
        # the doubt fails, the bot is the executor and is asked penalty at once (MD-7).
        Probe(
            "penalty",
            {},
            {"hands": {"0": _MD_HIGH, "1": _MD_LOW}, "leader": 1},
            opening=(
                (1, {"type": "play", "cards": ["3C"]}),
                (0, {"type": "play", "cards": ["9S"], "face_down": ["9S"]}),
                (1, {"type": "doubt"}),
            ),
            forces=("penalty", "play"),
        ),
    ],
    "trump_millionaire": [
        # TM-3: the bot is the Millionaire of this deal: exchange, then rate, then it leads.
        Probe(
            "exchange-rate",
            {},
            {
                "hands": {
                    "0": ["3S", "4H", "5D", "6C", "7S", "9H", "TD", "QC", "KS", "AH"],
                    "1": ["3H", "4D", "5C", "6S", "7H", "9D", "TC", "QS", "KH", "AD"],
                    "2": ["3D", "4C", "5S", "6H", "7D", "9C", "TS", "QH", "KD", "AC"],
                    "3": ["3C", "4S", "5H", "6D", "7C", "9S", "TH", "QD", "KC", "AS"],
                },
                "leader": 0,
                "set_aside": ["2S", "2H", "2D", "2C", "JK", "JK", "8S", "8H", "8D", "8C", "JS", "JH", "JD", "JC"],
                "state": {"millionaire": 0},
            },
            forces=("exchange", "rate", "play"),
        ),
        *_GIVE_DISCARD,
    ],
    "jdf": [
        # JDF-4: game 2 of a set, the bot was daifugo: it gives 2 cards.
        Probe(
            "exchange-give",
            {},
            {
                "hands": {
                    "0": ["3H", "3D", "9S", "TS"],
                    "1": ["4S", "6S", "7S"],
                    "2": ["QD", "5D", "6D"],
                    "3": ["JK", "2S", "5C"],
                },
                "leader": 3,
                "state": {"game_in_set": 2, "previous_ranks": {"0": 1, "1": 2, "2": 3, "3": 4}},
            },
            forces=("give",),
        ),
        *_GIVE_DISCARD,
    ],
}

ProgressFn = Callable[[dict[str, Any]], None]


class FaceDownLiar(Bot):
    """A house opponent of the Million Doubt probe: answers every play with the right number
    of its lowest cards, all face down (a lie over higher cards); anything else as greedy."""

    name = "face-down"

    def __init__(self) -> None:
        super().__init__()
        self._greedy = SAMPLE_BOTS[CONFORMANCE_OPPONENT]()

    def decide(self, request: Any) -> dict:
        req = request if isinstance(request, Request) else Request(request)
        field = req.observation.get("field") or []
        if req.kind == "play" and field and req.raw.get("face_down"):
            count = int(req.observation.get("trick_count") or 1)
            if len(req.hand) > count:
                cards = req.weakest_cards(count)
                return {"type": "play", "cards": cards, "face_down": cards}
        return self._greedy.decide(req)


class _Opening:
    """A seat's player in a probe: answers the seat's moves of the probe's opening itself (no
    request reaches the bot, ``elapsed_ms`` 0), then hands every decision to ``inner``.
    ``opening`` is shared by every seat of the game (moves in order); ``scripted`` says
    whether the last decision was an opening move."""

    def __init__(self, inner: Player, seat: int, opening: list[tuple[int, dict[str, Any]]]) -> None:
        self.inner, self.seat, self.opening = inner, seat, opening
        self.kind, self.name, self.url = inner.kind, inner.name, inner.url
        self.scripted = False

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        self.scripted = bool(self.opening)
        if self.scripted:
            if self.opening[0][0] != self.seat:
                raise RuntimeError(f"opening move for seat {self.opening[0][0]} asked of seat {self.seat}")
            return Outcome(dict(self.opening.pop(0)[1]), None, None, "", 0, None)
        return self.inner.decide(body, timeout_s)

    def notify(self, body: bytes) -> SlotUse:
        return self.inner.notify(body)

    def close(self) -> None:
        pass  # the inner player outlives the probe (one HTTP client for the whole check)


def match_like_id() -> str:
    """A ``match_id`` for a check's game as a tournament match's (``arena-<number>``,
    ``arena.playing.protocol_match_id``), its number drawn at random: nothing in a check's
    requests tells the bot it is checked."""
    return f"arena-{_secrets.randbelow(10**6) + 1}"


class CheckTimeUp(RuntimeError):
    """The check ran past its deadline (``ARENA_CHECK_TIME_LIMIT_S``); ``str(exc)`` says so."""


def _time_up(limit_s: float | None) -> str:
    limit = f"{limit_s:g} s" if limit_s is not None else "its limit"
    return (
        f"the check ran over its time limit of {limit}: answer its decisions faster "
        f"(each of its games has a {CONFORMANCE_TIME_RULES_S['initial']:g} s time bank)"
    )


def _kinds_table(ruleset: str) -> dict[str, dict[str, int]]:
    return {k: {"asked": 0, "faults": 0} for k in DECISION_KINDS[ruleset]}


def kind_not_asked(ruleset: str, kind: str) -> dict[str, Any]:
    """The warning ``kind_not_asked`` (a kind of :data:`CHOICE_KINDS` the bot's own play never
    called for): ``{"code": "kind_not_asked", "params": {"ruleset", "kind"}, "text": English}``.
    The pages translate it from ``code`` and ``params`` (``api/ui/i18n.py``)."""
    text = (
        f"{ruleset}: the bot was never asked '{kind}' (its own plays never called for it), "
        f"so its {kind} answers are not checked"
    )
    return {"code": "kind_not_asked", "params": {"ruleset": ruleset, "kind": kind}, "text": text}


def _runs(ruleset: str) -> list[Probe]:
    """The random short match (a probe with no setup) then every fixed position of ``ruleset``."""
    options, _ = CONFORMANCE_SETUP[ruleset]
    return [Probe("random", options, {}), *PROBES.get(ruleset, [])]


def conformance_game(
    url: str,
    ruleset: str,
    *,
    secret: str | None = None,
    seed: int | None = None,
    allow_private: bool = False,
    previous_secret: str | None = None,
    on_progress: ProgressFn | None = None,
    deadline: float | None = None,
    limit_s: float | None = None,
    player: Player | None = None,
    name: str = "",
) -> dict[str, Any]:
    """Play the conformance matches of ``ruleset`` (docs/operations.md, "Conformance game",
    step 4): the bot at ``url`` (seat 0) against sample bots. ``deadline``
    (``time.monotonic()`` seconds): past it, the check stops after the bot's current decision
    and fails (``error`` names the limit, ``limit_s``).

    Setup: the random short match of :data:`CONFORMANCE_SETUP` (its seed ``seed``, else a
    fresh random one: never a tournament's), then every position of :data:`PROBES` (each
    asks the kinds of its ``forces``, whatever the bot plays); :data:`CONFORMANCE_TIME_RULES_S`;
    the bot signed with ``secret`` (and ``previous_secret``); ``max_faults`` 1 (the first fault
    ends the check: FAULT-3). ``on_progress(kinds)`` is called after every decision asked of
    the bot with the ``kinds`` table. ``player``: the bot's player when it is not the HTTP bot
    at ``url`` (a bot that dials out, :class:`arena.runner.connected.ConnectedPlayer`);
    ``name``: the bot's name as a tournament names it (``name#id``). The games look to the bot
    like any match (:func:`match_like_id`, house opponents' names): a bot cannot tell it is
    being checked.

    Returns ``{"ok": bool, "ruleset", "kinds": {kind: {"asked": n, "faults": n}},
    "games": [{"probe", "decisions", "faults"}], "faults": [{"kind", "code", "params", "rule",
    "detail", "received", "elapsed_ms", "decision", "probe"}...] (at most 5; ``code``, ``params``
    and ``rule`` as in the log's fault records, :mod:`arena.faults`), "decisions": int, "elapsed_ms": int
    (the bot's total, milliseconds), "wall_s": float (seconds), "warnings": [str],
    "warning_codes": [{"code", "params"}] (the same warnings, for translation),
    "error": str | None}``. ``ok``: no fault and every kind of :data:`REQUIRED_KINDS` asked.
    Never raises for the bot's behaviour; :class:`~arena.runner.connected.RelayUnavailable`
    (the relay to a bot that dials out failed) goes through: the check errs, the bot keeps
    its status.
    """
    out: dict[str, Any] = {
        "ok": False,
        "ruleset": ruleset,
        "kinds": {},
        "games": [],
        "faults": [],
        "decisions": 0,
        "elapsed_ms": 0,
        "wall_s": None,
        "warnings": [],
        "warning_codes": [],
        "error": None,
    }
    if ruleset not in CONFORMANCE_SETUP:
        out["error"] = f"unknown rule set {ruleset!r}"
        return out
    kinds = out["kinds"] = _kinds_table(ruleset)
    seed = _secrets.randbits(62) if seed is None else seed
    start = time.monotonic()
    if player is None:
        player = HttpPlayer(
            url, secret, name=name or "bot", allow_private=allow_private, previous_secret=previous_secret
        )
    faults: list[dict[str, Any]] = []
    try:
        for i, probe in enumerate(_runs(ruleset)):
            if deadline is not None and time.monotonic() > deadline:
                out["error"] = _time_up(limit_s)
                return out
            try:
                own = _play_probe(player, ruleset, probe, seed, i, kinds, out, on_progress, deadline, limit_s)
            except CheckTimeUp as exc:
                out["error"] = str(exc)
                return out
            except ArenaFailure:  # the arena's failure, not the bot's: the check errs
                raise
            except Exception as exc:  # a runner bug must not pass or crash the check
                out["error"] = truncate_text(f"{probe.name}: {type(exc).__name__}: {exc}")
                return out
            faults += own
            if own:
                break  # the first fault decides (max_faults 1)
    finally:
        player.close()
    out["wall_s"] = round(time.monotonic() - start, 3)
    out["faults"] = faults[:MAX_LISTED_FAULTS]
    missing = [k for k in REQUIRED_KINDS[ruleset] if not kinds[k]["asked"]]
    if faults:
        f = faults[0]
        out["error"] = f"{f['kind']} answering {f['decision']} ({f['probe']}): {truncate_text(f['detail'] or '')}"
    elif missing:
        out["error"] = f"the bot was never asked {', '.join(missing)}"
    else:
        out["ok"] = True
        for k in CHOICE_KINDS[ruleset]:
            if not kinds[k]["asked"]:
                w = kind_not_asked(ruleset, k)
                out["warnings"].append(w["text"])
                out["warning_codes"].append({"code": w["code"], "params": w["params"]})
    return out


def _play_probe(
    player: Player,
    ruleset: str,
    probe: Probe,
    seed: int,
    index: int,
    kinds: dict[str, dict[str, int]],
    out: dict[str, Any],
    on_progress: ProgressFn | None,
    deadline: float | None,
    limit_s: float | None,
) -> list[dict[str, Any]]:
    """Play one run of :func:`conformance_game` (``index`` in :func:`_runs`), count the bot's
    decisions into ``kinds`` and ``out`` (``games``, ``decisions``, ``elapsed_ms``) and return
    its faults (``out["faults"]`` rows).

    Raises:
        CheckTimeUp: past ``deadline``; anything the runner raises (a runner bug)."""
    n = engine.SEATS[ruleset]
    opening = list(probe.opening)
    inner: list[Player] = [player]
    for s in range(1, n):
        bot = FaceDownLiar() if s in probe.liars else SAMPLE_BOTS[CONFORMANCE_OPPONENT](seed=seed + s)
        inner.append(LocalPlayer(bot, f"house-{s} ({CONFORMANCE_OPPONENT})"))  # as a tournament's house seats
    seats = [_Opening(p, s, opening) for s, p in enumerate(inner)]
    mine: list[Exchange] = []  # the decisions asked of the bot (seat 0's opening moves left out)

    def seen(ex: Exchange) -> None:
        if deadline is not None and time.monotonic() > deadline:
            raise CheckTimeUp(_time_up(limit_s))
        if ex["player"] != 0 or seats[0].scripted:
            return
        mine.append(ex)
        row = kinds.setdefault(ex["kind"], {"asked": 0, "faults": 0})
        row["asked"] += 1
        row["faults"] += int(ex["fault"] is not None)
        if on_progress is not None:
            on_progress(kinds)

    games = CONFORMANCE_SETUP[ruleset][1]
    config = MatchConfig(
        ruleset,
        probe.options,
        seed=seed + 7 * index,
        games=games,
        game_specs=[{"setup": probe.setup, "seats": list(range(n))}] if probe.setup else None,
        time_rules=TimeRules.from_seconds(**CONFORMANCE_TIME_RULES_S),
        max_faults=1,
        # a random id, never the seed (it would give the bot every hand of the random run)
        match_id=match_like_id(),
    )
    match_log = Match(seats, config, Observers(on_decision=seen)).play()
    if opening:
        raise RuntimeError(f"probe {probe.name}: {len(opening)} opening move(s) never asked")
    kind_of = {(g, ex["n"]): ex["kind"] for g, gm in enumerate(match_log["games"]) for ex in gm["exchanges"]}
    own = [f for f in match_log["faults"] if f["player"] == 0]
    out["games"].append({"probe": probe.name, "decisions": len(mine), "faults": len(own)})
    out["decisions"] += len(mine)
    out["elapsed_ms"] += sum(ex["elapsed_ms"] for ex in mine)
    return [
        {
            "kind": f["kind"],
            **{k: f[k] for k in ("code", "params", "rule") if k in f},  # arena.faults: the pages translate by code
            "detail": f["detail"],
            "received": truncate_text(f["received"] or ""),
            "elapsed_ms": f["elapsed_ms"],
            "decision": kind_of.get((f["game"], f["n"])),
            "probe": probe.name,
        }
        for f in own
    ]


#: Seconds allowed for the badly signed request (connect + answer).
SIGNATURE_PROBE_TIMEOUT_S = 5.0


def signature_probe(
    url: str, *, allow_private: bool = False, timeout_s: float = SIGNATURE_PROBE_TIMEOUT_S
) -> dict[str, Any]:
    """Send one real decision request signed with a wrong secret (step 3).

    Returns ``{"ok": bool, "status": int | None, "warning": str | None}``: ``ok`` when the
    bot answered 401 (protocol: a bad signature is refused); otherwise ``warning`` says what
    it did, and ``warning_code`` is ``{"code": "signature_not_refused", "params": {"status"}}``
    or ``{"code": "signature_no_answer", "params": {"fault"}}`` (for translation). Never raises.
    """
    g = engine.new_game("million_doubt", None, _secrets.randbits(62))
    d = g.decision()
    assert d is not None  # a new game always asks a first decision
    rules = TimeRules.from_seconds(**CONFORMANCE_TIME_RULES_S)
    body = protocol.dumps(
        protocol.build_request(
            g,
            d.seat,
            match_id=match_like_id(),
            game=0,
            time_rules=rules,
            remaining_ms=rules.initial_ms,
        )
    )
    player = HttpPlayer(url, "wrong-" + _secrets.token_hex(32), name="signature-probe", allow_private=allow_private)
    try:
        outcome = player.decide(body, timeout_s)
    finally:
        player.close()
    if outcome.status == 401:
        return {"ok": True, "status": 401, "warning": None}
    what = f"HTTP {outcome.status}" if outcome.status is not None else f"no answer ({outcome.fault})"
    code = (
        {"code": "signature_not_refused", "params": {"status": outcome.status}}
        if outcome.status is not None
        else {"code": "signature_no_answer", "params": {"fault": outcome.fault}}
    )
    return {
        "ok": False,
        "status": outcome.status,
        "warning": f"the bot answered a badly signed request with {what}, not 401: it does not check "
        "X-Arena-Signature, so anyone who knows its URL can play its moves "
        "(docs/protocol.md, signatures)",
        "warning_code": code,
    }


def _new_check(
    rulesets: list[str], stage: str, on_progress: ProgressFn | None
) -> tuple[dict[str, Any], dict[str, Any], Callable[[str], None]]:
    """A check's empty outcome (module docstring shape), its progress at ``stage``, and the
    ``report(stage)`` that records a stage and calls ``on_progress``."""
    result: dict[str, Any] = {
        "ok": False,
        "url": {"ok": True, "error": None},
        "health": None,
        "signature": None,
        "conformance": [],
        "warnings": [],
        "warning_codes": [],
    }
    progress: dict[str, Any] = {
        "stage": stage,
        "rulesets": {rs: _kinds_table(rs) for rs in rulesets if rs in DECISION_KINDS},
    }

    def report(stage: str) -> None:
        progress["stage"] = stage
        if on_progress is not None:
            on_progress(progress)

    return result, progress, report


def check_bot(
    url: str,
    rulesets: list[str],
    *,
    allow_private: bool,
    secret: str | None = None,
    previous_secret: str | None = None,
    timeout_s: float = HEALTH_TIMEOUT_S,
    on_progress: ProgressFn | None = None,
    limit_s: float | None = None,
    name: str = "",
) -> dict[str, Any]:
    """Run the URL check, the health check, the signature probe and the conformance games
    (module docstring), within ``limit_s`` seconds in all (None: no limit; past it the
    conformance games stop after the bot's current decision and the check fails). ``on_progress(progress)``
    gets ``{"stage": "url" | "health" |
    "signature" | "conformance" | "done", "rulesets": {ruleset: {kind: {"asked", "faults"}}}}``.
    Never raises for the bot's behaviour."""
    result, progress, report = _new_check(rulesets, "url", on_progress)

    deadline = None if limit_s is None else time.monotonic() + float(limit_s)
    report("url")
    try:
        check_bot_url(url, allow_private=allow_private)
    except BotUrlError as exc:
        result["url"] = {"ok": False, "error": str(exc)}
        report("done")
        return result
    report("health")
    result["health"] = health_check(url, timeout_s=timeout_s, allow_private=allow_private)
    if not result["health"]["ok"]:
        report("done")
        return result
    report("signature")
    result["signature"] = signature_probe(url, allow_private=allow_private)
    if result["signature"]["warning"]:
        result["warnings"].append(result["signature"]["warning"])
        result["warning_codes"].append(result["signature"]["warning_code"])
    _conformance_stage(
        result,
        rulesets,
        progress,
        report,
        lambda rs, kinds_done: conformance_game(
            url,
            rs,
            secret=secret,
            previous_secret=previous_secret,
            allow_private=allow_private,
            on_progress=kinds_done,
            deadline=deadline,
            limit_s=limit_s,
            name=name,
        ),
    )
    return result


def _conformance_stage(
    result: dict[str, Any],
    rulesets: list[str],
    progress: dict[str, Any],
    report: Callable[[str], None],
    play: Callable[[str, Callable[[dict], None]], dict[str, Any]],
    finish: Callable[[], None] | None = None,
) -> None:
    """Step 4 of a check: ``play(ruleset, kinds_done)`` (a :func:`conformance_game`) for each
    rule set until one fails; fills ``result`` (``conformance``, ``warnings``, ``ok``); then
    ``finish()``, before the stage ``done`` is reported."""
    report("conformance")
    for rs in rulesets:

        def kinds_done(kinds: dict, rs: str = rs) -> None:
            progress["rulesets"][rs] = kinds
            report("conformance")

        game = play(rs, kinds_done)
        result["conformance"].append(game)
        result["warnings"] += game["warnings"]
        result["warning_codes"] += game["warning_codes"]
        progress["rulesets"][rs] = game["kinds"]
        if not game["ok"]:
            break  # the first failing rule set decides
    result["ok"] = len(result["conformance"]) == len(rulesets) and all(c["ok"] for c in result["conformance"])
    if finish is not None:
        finish()
    report("done")


#: Seconds the check of a bot that dials out waits for it to be connected (its health request).
CONNECT_WAIT_S = HEALTH_TIMEOUT_S


def connected_health(
    player: ConnectedPlayer, *, timeout_s: float = CONNECT_WAIT_S, story: Callable[[], relay.Story] | None = None
) -> dict[str, Any]:
    """The health check over a bot's connection: a ``health`` frame, answered within
    ``timeout_s`` seconds (the bot must be connected by then). The shape of :func:`health_check`
    (``status`` None). A bot found not connected: ``story()`` (the bot's
    :class:`~arena.relay.Story`, as the gateways wrote it) says which step it reached,
    :func:`dial_step` (``step``, ``error``, ``error_code``). Never raises for the bot's
    behaviour (the relay's failure: :class:`~arena.runner.connected.RelayUnavailable`)."""
    out: dict[str, Any] = {
        "ok": False,
        "status": None,
        "elapsed_ms": None,
        "name": None,
        "protocols": [],
        "error": None,
    }
    outcome = player.health(timeout_s)
    out["elapsed_ms"] = float(outcome.elapsed_ms)
    if outcome.action is None:
        out["error"] = truncate_text(f"{outcome.fault}: {outcome.detail}")
        if outcome.fault == "connection_error":
            try:
                told = story() if story is not None else None
            except (redis.RedisError, OSError):
                told = None
            out.update(dial_step(told, wait_s=timeout_s))
        return out
    judge_health_body(out, bytearray(protocol.dumps(outcome.action)))
    return out


#: The English text of each ``error_code`` of :func:`dial_step` (the pages translate them:
#: ``api/ui/i18n.py``), with its parameters.
DIAL_MESSAGES: dict[str, str] = {
    "dial_unknown": "the bot is not connected to a gateway (no connection within %(wait_s)s s)",
    "dial_never_connected": (
        "the bot never connected: no connection with its id reached a gateway in the last hour, none within"
        " %(wait_s)s s (is it running, with ARENA_BOT_ID and ARENA_GATEWAY_URL set?)"
    ),
    "dial_auth_failed": (
        "the bot connected %(ago_s)s s ago but failed authentication (close 4401: a wrong signature for its id;"
        " check ARENA_BOT_ID, ARENA_BOT_SECRET and the machine's clock)"
    ),
    "dial_refused": "the bot connected %(ago_s)s s ago but its connection was refused (close %(code)s: %(meaning)s)",
    "dial_dropped": (
        "the bot authenticated, then its connection dropped %(ago_s)s s ago without a close (its program stopped"
        " or crashed, or its network went away), and it did not connect again within %(wait_s)s s"
    ),
    "dial_closed_by_bot": (
        "the bot authenticated, then closed its connection %(ago_s)s s ago (close %(code)s), and it did not"
        " connect again within %(wait_s)s s"
    ),
    "dial_closed_by_gateway": (
        "the bot authenticated, then the gateway closed its connection %(ago_s)s s ago (close %(code)s:"
        " %(meaning)s), and it did not connect again within %(wait_s)s s"
    ),
    "dial_connected": (
        "the bot authenticated %(ago_s)s s ago, but no connection of it took the check's request within %(wait_s)s s"
    ),
}


def dial_step(story: relay.Story | None, *, wait_s: float, now: float | None = None) -> dict[str, Any]:
    """Which step a bot that dials out reached, when no connection of it took the check's
    health request within ``wait_s`` seconds, from its ``story`` (:class:`arena.relay.Story`;
    None: unreadable). Returns ``{"step", "error": English, "error_code": {"code", "params"}}``
    (``code`` a key of :data:`DIAL_MESSAGES`, translated by the pages), ``step`` one of:

    * ``never_connected``: no connection claimed the bot in :data:`arena.relay.STORY_TTL_S`;
    * ``auth_failed``: its last connection was refused with 4401 (a wrong proof: id, secret, clock);
    * ``refused``: its last connection was refused otherwise (4429 over a cap, 4403...);
    * ``dropped``: it authenticated, then its connection closed (by the bot, or the gateway,
      with a close code) or dropped without one (the program crashed or its network went away);
    * ``connected``: it authenticated and the gateways wrote no end, yet no connection took the
      request (a gateway that stalled); ``unknown``: the story could not be read.
    """
    now = time.time() if now is None else now
    code = story.code if story is not None else None
    params: dict[str, Any] = {
        "wait_s": f"{wait_s:g}",
        "ago_s": max(0, round(now - story.at)) if story is not None and story.at is not None else 0,
        "code": code,
        "meaning": wire.CLOSE_CODES.get(code, "") if code is not None else "",
    }
    if story is None:
        step, message = "unknown", "dial_unknown"
    elif story.event is None:
        step, message = "never_connected", "dial_never_connected"
    elif story.event == "refused":
        step = "auth_failed" if code == wire.CLOSE_AUTH_FAILED else "refused"
        message = f"dial_{step}"
    elif story.event == "closed":
        step = "dropped"
        message = "dial_dropped" if code is None else f"dial_closed_by_{'bot' if story.by == 'bot' else 'gateway'}"
    else:
        step, message = "connected", "dial_connected"
    return {"step": step, "error": DIAL_MESSAGES[message] % params, "error_code": {"code": message, "params": params}}


def ping_warning(
    story: Callable[[], relay.Story],
    since: Callable[[], float | None],
    *,
    silence_s: float = wire.PING_SILENCE_S,
    first_s: float = wire.PING_FIRST_S,
    until: float | None = None,
    now: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any] | None:
    """The warning ``no_pings`` when a connected bot sends none of the protocol's keep-alive
    pings (docs/protocol.md, "Pools and reconnection"): ``{"code": "no_pings", "params":
    {"silent_s"}, "text": English}``, or None (it pinged, or it is not connected: nothing to
    judge). ``story()`` gives its :class:`~arena.relay.Story` (``pinged``), ``since()`` the Unix
    seconds its oldest live connection opened (None: none). Warned: no ping since that
    connection opened, which is ``first_s`` seconds old or more (the first ping is due after the
    protocol's interval), or none in the last ``silence_s`` seconds. A younger connection without
    a ping is waited for (polling every half second, at most until ``until``, a
    ``time.monotonic()`` deadline), until its first ping or until it is ``first_s`` old.

    Raises:
        redis.RedisError: the story or the presence cannot be read.
    """
    while True:
        pinged, opened, t = story().pinged, since(), now()
        if opened is None:
            return None
        if pinged is not None and pinged >= opened and t - pinged <= silence_s:
            return None
        pinged_since = pinged is not None and pinged >= opened
        if t - opened >= (silence_s if pinged_since else first_s):
            silent = round(t - (pinged if pinged_since and pinged is not None else opened))
            text = (
                f"the bot sent no keep-alive ping in {silent} s of connection: the protocol asks for a WebSocket ping"
                f" every {wire.PING_INTERVAL_S:g} s on each connection, answered before the next, so that a gateway"
                " that froze or a network gone silent is noticed and the bot connects again in time"
                ' (docs/protocol.md, "Pools and reconnection")'
            )
            return {"code": "no_pings", "params": {"silent_s": silent}, "text": text}
        if until is not None and time.monotonic() >= until:
            return None
        sleep(0.5)


#: Seconds allowed for the authentication probe (connect, challenge, refusal).
AUTH_PROBE_TIMEOUT_S = 5.0


def auth_probe(gateway_url: str, bot_id: int, *, timeout_s: float = AUTH_PROBE_TIMEOUT_S) -> dict[str, Any]:
    """Connect to the gateway as bot ``bot_id`` and answer its challenge with a wrong secret
    (step 3 for a bot that dials out): the gateway must close the connection with
    :data:`bots_sdk.wire.CLOSE_AUTH_FAILED`.

    Returns ``{"ok": bool, "status": close code | None, "warning": str | None}`` (and
    ``warning_code`` ``{"code": "auth_not_refused" | "auth_probe_failed", "params"}`` when not
    ok). Never raises."""
    code: int | None = None
    why = ""
    try:
        with ws_connect(gateway_url, open_timeout=timeout_s, close_timeout=1, max_size=wire.MAX_FRAME_BYTES) as ws:
            challenge = json.loads(ws.recv(timeout=timeout_s))
            ws.send(wire.auth_frame(bot_id, "wrong-" + _secrets.token_hex(32), str(challenge.get("nonce", ""))))
            reply = ws.recv(timeout=timeout_s)
            why = f"the gateway accepted a wrong proof ({str(reply)[:80]})"
    except ConnectionClosed as exc:
        code = exc.rcvd.code if exc.rcvd is not None else None
    except (OSError, TimeoutError, ValueError, WebSocketException) as exc:
        why = truncate_text(f"{type(exc).__name__}: {exc}")
        return {
            "ok": False,
            "status": None,
            "warning": f"the authentication probe could not reach the gateway {gateway_url}: {why}",
            "warning_code": {"code": "auth_probe_failed", "params": {"error": why}},
        }
    if code == wire.CLOSE_AUTH_FAILED:
        return {"ok": True, "status": code, "warning": None}
    return {
        "ok": False,
        "status": code,
        "warning": f"a connection that answered the challenge with a wrong secret was not refused: {why or code}",
        "warning_code": {"code": "auth_not_refused", "params": {"status": code}},
    }


def check_connected_bot(
    bot_id: int,
    rulesets: list[str],
    *,
    client: redis.Redis,
    gateway_url: str | None,
    reconnect_s: float = CONNECT_WAIT_S,
    on_progress: ProgressFn | None = None,
    limit_s: float | None = None,
    name: str = "",
) -> dict[str, Any]:
    """:func:`check_bot` for a bot that dials out: the health check over its connection
    (:func:`connected_health`; not connected: the step it reached, :func:`dial_step`), the
    authentication probe (:func:`auth_probe`, when ``gateway_url`` is known, else a warning),
    the same conformance games through a :class:`~arena.runner.connected.ConnectedPlayer`,
    then its keep-alive pings (:func:`ping_warning`: the warning ``no_pings``). The same
    outcome shape (``url``: ``{"ok": True, "error": None}``; ``signature``: the probe's
    result). Never raises for the bot's behaviour."""
    result, progress, report = _new_check(rulesets, "health", on_progress)

    deadline = None if limit_s is None else time.monotonic() + float(limit_s)
    player = ConnectedPlayer(bot_id, client, name or f"bot#{bot_id}", reconnect_s=reconnect_s)
    report("health")
    result["health"] = connected_health(player, story=lambda: relay.story(client, bot_id))
    if not result["health"]["ok"]:
        report("done")
        return result
    report("signature")
    if gateway_url:
        result["signature"] = auth_probe(gateway_url, bot_id)
    else:
        result["signature"] = {
            "ok": False,
            "status": None,
            "warning": "the authentication probe did not run: ARENA_GATEWAY_URL is not set",
            "warning_code": {"code": "auth_probe_failed", "params": {"error": "ARENA_GATEWAY_URL is not set"}},
        }
    if result["signature"]["warning"]:
        result["warnings"].append(result["signature"]["warning"])
        result["warning_codes"].append(result["signature"]["warning_code"])

    def pings() -> None:  # the keep-alive pings the protocol asks for (a warning)
        try:
            warning = ping_warning(
                lambda: relay.story(client, bot_id),
                lambda: relay.presence(client, [bot_id])[bot_id].since,
                until=deadline,
            )
        except (redis.RedisError, OSError):
            warning = None  # the relay's failure: nothing said of the bot
        if warning is not None:
            result["warnings"].append(warning["text"])
            result["warning_codes"].append({"code": warning["code"], "params": warning["params"]})

    _conformance_stage(
        result,
        rulesets,
        progress,
        report,
        lambda rs, kinds_done: conformance_game(
            "", rs, on_progress=kinds_done, deadline=deadline, limit_s=limit_s, player=player
        ),
        pings,
    )
    return result


# -- the task ------------------------------------------------------------------------------------
#: Least seconds between two progress writes of a running check (its heartbeat).
PROGRESS_EVERY_S = 1.0


def run_check(check_id: int, settings: Settings | None = None) -> str:
    """What the task ``arena.check_bot`` does: claim the check
    (:func:`arena.lifecycle.claim_check`), run :func:`check_bot` on the URL and rule sets
    recorded with it, writing its progress at most every :data:`PROGRESS_EVERY_S` seconds,
    and store the outcome (:func:`arena.lifecycle.finish_check`). Returns a status line.

    An exception of the check itself (not the bot's behaviour) makes the check ``error`` and
    gives the bot back its status before the check.

    Raises:
        sqlalchemy.exc.OperationalError: the database is unreachable (the task retries).
    """
    settings = settings or Settings.from_env()
    factory = shared_sessions(settings.database_url)
    with factory() as session:
        plan = lifecycle.claim_check(session, int(check_id))
    if plan is None:
        return f"skipped check {check_id}: not queued or running, or it could not run (its error says why)"
    last = [0.0]

    def beat(progress: dict[str, Any], force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - last[0] < PROGRESS_EVERY_S and progress.get("stage") != "done":
            return
        last[0] = now
        with factory() as s:
            lifecycle.record_check_progress(s, plan.check_id, progress)

    try:
        if plan.transport == "connect":
            outcome = check_connected_bot(
                plan.bot_id,
                list(plan.rulesets),
                client=redis.Redis.from_url(settings.broker_url, socket_timeout=5, socket_connect_timeout=5),
                gateway_url=settings.gateway_url or None,
                reconnect_s=min(CONNECT_WAIT_S, float(settings.gateway_reconnect_s)),
                on_progress=beat,
                limit_s=float(settings.check_time_limit_s),
                name=plan.name,
            )
        else:
            outcome = check_bot(
                plan.url or "",
                list(plan.rulesets),
                allow_private=settings.allow_private_bot_urls,
                secret=plan.secret,
                previous_secret=plan.previous_secret,
                on_progress=beat,
                limit_s=float(settings.check_time_limit_s),
                name=plan.name,
            )
    except Exception as exc:
        log.exception("check %s broke", plan.check_id)
        with factory() as session:
            if lifecycle.error_check(session, plan.check_id, f"internal error: {type(exc).__name__}: {exc}"):
                notices.check_finished(session, notices.sender_for(settings), plan.check_id)
        return f"check {plan.check_id}: internal error"
    with factory() as session:
        status = lifecycle.finish_check(session, plan.check_id, outcome)
        if status is not None:  # the owner's webhook hears of it (arena.notices)
            notices.check_finished(session, notices.sender_for(settings), plan.check_id)
    line = f"check {plan.check_id} of bot {plan.bot_id}: {'passed' if outcome['ok'] else 'failed'} (bot {status})"
    log.info(line)
    return line
