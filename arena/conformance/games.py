"""The bot check's conformance games (step 4 of :mod:`arena.conformance`): for each rule set,
a random short match and the fixed positions of its descriptor (``ArenaRuleSet.probes``: ACT;
LR-5 give, LR-6 discard, MD-7 penalty), which ask every decision kind whatever the bot plays,
under :data:`CONFORMANCE_TIME_RULES_S`, over any :class:`~arena.runner.players.Player` (an HTTP
bot, a bot that dials out). A rule set passes with no fault (FAULT-1) and every kind of
:data:`REQUIRED_KINDS` (all of :data:`DECISION_KINDS`) asked; a kind of :data:`CHOICE_KINDS`
(none today) never asked is warned about. Step by step: docs/operations.md, "Conformance game
(bot check)".
"""

from __future__ import annotations

import secrets as _secrets
import time
from collections.abc import Callable
from typing import Any

from arena.health import truncate_text
from arena.matchlog import Exchange
from arena.rulesets import ARENA_RULESETS, Probe, arena_ruleset
from arena.runner.match import Match, MatchConfig, Observers
from arena.runner.players import ArenaFailure, HttpPlayer, LocalPlayer, Outcome, Player, SlotUse
from bots_sdk.bot import Bot, Request
from bots_sdk.samples import SAMPLE_BOTS
from engine import RULESETS
from engine.timebank import TimeRules

#: Time rules of the conformance games, seconds (TIME-1): a 10 s bank, +1 s, 10 s cap.
CONFORMANCE_TIME_RULES_S = {"initial": 10.0, "increment": 1.0, "cap": 10.0}
#: The sample bot seated against the checked bot.
CONFORMANCE_OPPONENT = "greedy"
#: Faults listed in the outcome at most.
MAX_LISTED_FAULTS = 5
#: Every decision kind of each rule set (ACT, ``engine.RuleSet.decision_kinds``). The fixed
#: positions of :data:`PROBES` ask every one of them of the checked bot whatever it plays:
#: never asked fails the check.
DECISION_KINDS: dict[str, tuple[str, ...]] = {name: rs.decision_kinds for name, rs in RULESETS.items()}
#: Kinds the fixed positions always ask the checked bot (today every kind of
#: :data:`DECISION_KINDS`): never asked fails the check.
REQUIRED_KINDS: dict[str, tuple[str, ...]] = dict(DECISION_KINDS)
#: Kinds of :data:`DECISION_KINDS` not in :data:`REQUIRED_KINDS`: asked only when the bot's
#: own choice calls for them; never asked gives the warning ``kind_not_asked`` (see
#: :func:`kind_not_asked`). Empty: an opening (:class:`~arena.rulesets.Probe`) reaches any
#: decision the engine can reach, so every kind is forced. A kind added to the engine with no
#: position forcing it yet is left out of REQUIRED_KINDS, and lands here.
CHOICE_KINDS: dict[str, tuple[str, ...]] = {
    rs: tuple(k for k in DECISION_KINDS[rs] if k not in REQUIRED_KINDS[rs]) for rs in DECISION_KINDS
}
#: The fixed positions per rule set (``ArenaRuleSet.probes``; docs/operations.md, "Conformance
#: game", step 4). Check-only deals: no seed, nothing taken from a tournament's deals.
PROBES: dict[str, list[Probe]] = {name: list(rs.probes) for name, rs in ARENA_RULESETS.items()}

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
    ``arena.delivery.protocol_match_id``), its number drawn at random: nothing in a check's
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


def kinds_table(ruleset: str) -> dict[str, dict[str, int]]:
    """The empty ``kinds`` table of ``ruleset``: ``{kind: {"asked": 0, "faults": 0}}``."""
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
    return [Probe("random", arena_ruleset(ruleset).check_options, {}), *PROBES.get(ruleset, [])]


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

    Setup: the random short match of the rule set's descriptor (``ArenaRuleSet.check_options``
    and ``check_games``; its seed ``seed``, else a fresh random one: never a tournament's), then
    every position of :data:`PROBES` (each
    asks the kinds of its ``forces``, whatever the bot plays); :data:`CONFORMANCE_TIME_RULES_S`;
    the bot signed with ``secret`` (and ``previous_secret``); ``max_faults`` 1 (the first fault
    ends the check: FAULT-3). ``on_progress(kinds)`` is called after every decision asked of
    the bot with the ``kinds`` table. ``player``: the bot's player, closed when the games end (the
    check pipeline's, ``arena.conformance.pipeline``; None: an HTTP player of the bot at ``url``);
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
    if ruleset not in ARENA_RULESETS:
        out["error"] = f"unknown rule set {ruleset!r}"
        if player is not None:
            player.close()  # it is this game's, as below
        return out
    kinds = out["kinds"] = kinds_table(ruleset)
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
    n = RULESETS[ruleset].seats
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

    games = arena_ruleset(ruleset).check_games
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
