"""Replay data of a match for the match page, built from its stored match log.

:func:`build_replay` re-runs each game's engine log through :func:`engine.frames.frames`
(the full table view after every action, MD-8: the post-game record shows every hand) and
merges in the worker's request/response records (``exchanges``: :class:`arena.matchlog.Exchange`):
who acted, the time the answer took (milliseconds) and each seat's time bank (TIME-1..3,
milliseconds) after every step, and the faults (FAULT-1..3).

Shape (JSON-ready, embedded in the page)::

    {"ruleset", "time_rules": {"initial_ms", "increment_ms", "cap_ms"},
     "players": [{"index", "name", "label"}],          # label: the bot shown on the page
     "result": {...} (the log's match result),
     "games": [{"index", "seed", "seats": [player index per seat], "result",
                "faults": [...],
                "frames": [frame (engine.frames shape, minus "hand" events) + {
                    "exchange": {"n", "elapsed_ms", "bank_before_ms", "bank_after_ms",
                                 "status", "fault", "detail", "code", "params", "rule"} | None,
                    "banks_ms": [bank of each seat after this step, milliseconds],
                    "fault": {"kind", "detail", "code", "params", "rule"} | None   # a fault/forfeit
                }],
                "units": [{"unit", "first_step", "end_step", "set", "game_in_set", "void",
                           "scores": [per seat] | None, "totals": [per seat] | None}]}],
     "game_totals": [{"game", "scores": [per player], "totals": [per player]}]}

``units`` are the deals of a Trump Millionaire game (TM-1, TM-7: ``scores`` of the deal,
``totals`` after it) or the games of a JDF match (JDF-1, JDF-13: ``set`` and ``game_in_set``
from 0, ``game_in_set`` from 1; ``end_step``: the step whose events carry the result, or
None); a Million Doubt game is one unit without scores. ``game_totals`` are the running
totals over the match's games, by player index (a Million Doubt match has several games,
MD-17; TM and JDF have one).

Engine forfeits with reason ``max_faults`` (FAULT-3) have no exchange; every other engine
action consumes the next exchange of its game in order.

Raises:
    ReplayDataError: the log is not a match log, or its exchanges do not line up with the
        engine actions (the message names the game and step).
    engine.InvalidAction: an engine log does not replay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from api.ui.rulesets import replay_facts
from arena.faults import FaultCode, fault
from arena.matchlog import LOG_FORMAT, Exchange, GameRecord, MatchLog
from engine.frames import frames as engine_frames


class ReplayDataError(ValueError):
    """A match log that cannot be turned into replay data; the message says where."""


#: What a replay frame keeps of a fault record: its English detail, its code and parameters
#: (absent in a log from before codes), for the page to translate (api.ui.faults).
_FAULT_KEYS = ("detail", "code", "params", "rule")
#: The frame of a FAULT-3 forfeit (no exchange).
_MAX_FAULTS = {
    "kind": "max_faults",
    "detail": fault(FaultCode.MAX_FAULTS).text(),
    **fault(FaultCode.MAX_FAULTS).fields(),
}


def _fault_view(record: Mapping[str, Any] | None) -> dict:
    record = record or {}
    return {"detail": record.get("detail"), **{k: record[k] for k in _FAULT_KEYS[1:] if k in record}}


def _exchange_view(ex: Exchange, record: Mapping[str, Any] | None) -> dict:
    return {
        "n": ex.get("n"),
        "elapsed_ms": ex.get("elapsed_ms"),
        "bank_before_ms": ex.get("bank_before_ms"),
        "bank_after_ms": ex.get("bank_after_ms"),
        "status": ex.get("status"),
        "fault": ex.get("fault"),
        **_fault_view(record),
    }


def game_replay(game: GameRecord, initial_ms: int) -> dict:
    """Replay data of one game record of a match log (module docstring)."""
    gi = game.get("index")
    elog = game["engine_log"]
    fr = engine_frames(elog)
    actions = elog.get("actions", [])
    exchanges = list(game.get("exchanges", []))
    records = {f.get("n"): f for f in game.get("faults", [])}
    n_seats = len(fr[0]["hands"])
    banks = [int(initial_ms)] * n_seats
    unit = fr[0]["unit"]
    k = 0
    out = []
    for i, frame in enumerate(fr):
        frame = dict(frame)
        frame["events"] = [e for e in frame["events"] if e.get("type") != "hand"]
        frame["exchange"] = None
        frame["fault"] = None
        if i > 0:
            entry = actions[i - 1]
            reason = entry.get("forfeit")
            if reason == "max_faults":
                frame["fault"] = dict(_MAX_FAULTS)
            else:
                if k >= len(exchanges):
                    raise ReplayDataError(f"game {gi}: step {i} has no request record")
                ex = exchanges[k]
                k += 1
                if ex.get("seat") != entry.get("seat"):
                    raise ReplayDataError(
                        f"game {gi}: step {i} is seat {entry.get('seat')}, its request record seat {ex.get('seat')}"
                    )
                frame["exchange"] = _exchange_view(ex, records.get(ex.get("n")))
                if ex.get("fault"):
                    frame["fault"] = {"kind": ex["fault"], **_fault_view(records.get(ex.get("n")))}
                if ex.get("unit", unit) == unit and ex.get("bank_after_ms") is not None:
                    banks[ex["seat"]] = int(ex["bank_after_ms"])
        if frame["unit"] != unit:  # a new deal (TM) / game (JDF): banks reset (TIME-1)
            unit = frame["unit"]
            banks = [int(initial_ms)] * n_seats
        frame["banks_ms"] = list(banks)
        out.append(frame)
    if k != len(exchanges):
        raise ReplayDataError(f"game {gi}: {len(exchanges) - k} request record(s) without an engine action")
    return {
        "index": gi,
        "seed": game.get("seed"),
        "seats": list(game.get("seats", [])),
        "result": game.get("result"),
        "faults": list(game.get("faults", [])),
        "frames": out,
        "units": units_of(out),
    }


def _by_seat(scores: Any, n: int) -> list | None:
    """Seat-keyed scores (``{"0": 5, ...}`` or a list) as a list by seat, or None."""
    if isinstance(scores, list):
        return list(scores)
    if isinstance(scores, Mapping):
        return [scores.get(str(i), scores.get(i, 0)) for i in range(n)]
    return None


def units_of(frames: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The deals (TM) or games (JDF) of a game's frames: first step, scores, totals (module docstring).

    One action may end a deal and start the next (the frame's ``unit`` is already the new
    one): events are read in order, a ``deal`` / ``game`` event opens its unit
    (``unit_index`` = ``deal`` / ``game``), an end event closes the open one. The engine's
    ``unit_index`` moves past the last unit when the game ends: that is no unit.
    """
    units: dict[int, dict] = {}
    n = len(frames[0]["hands"]) if frames else 0

    def unit(u: int, step: int) -> dict:
        if u not in units:
            units[u] = {
                "unit": u,
                "first_step": step,
                "end_step": None,
                "set": None,
                "game_in_set": None,
                "void": False,
                "scores": None,
                "totals": None,
            }
        return units[u]

    if not frames:
        return []
    open_unit = unit(int(frames[0].get("unit") or 0), 0)
    for i, f in enumerate(frames):
        for e in f.get("events", []):
            t = e.get("type")
            if t == "deal" and isinstance(e.get("deal"), int):
                open_unit = unit(e["deal"], i)
            elif t == "game" and isinstance(e.get("game"), int):  # JDF: a new game of a set
                open_unit = unit(e["game"], i)
                open_unit["set"], open_unit["game_in_set"] = e.get("set"), e.get("game_in_set")
            elif t in ("deal_end", "game_end") and "totals" in e and e.get("scores") is not None:
                open_unit["scores"] = _by_seat(e.get("scores"), n)
                open_unit["totals"] = _by_seat(e.get("totals"), n)
                open_unit["end_step"] = i
            elif t == "void_deal":
                open_unit["void"], open_unit["end_step"] = True, i
    return [units[u] for u in sorted(units)]


def game_totals(match_log: MatchLog | Mapping[str, Any]) -> list[dict]:
    """Scores of each game of a match and running totals, by player index (module docstring)."""
    n = len(match_log.get("players", []))
    totals = [0.0] * n
    out = []
    for g in match_log.get("games", []):
        res = g.get("result") or {}
        by_seat = _by_seat(res.get("scores"), len(g.get("seats", [])))
        scores = [0.0] * n
        if by_seat is not None:
            for seat, player in enumerate(g.get("seats", [])):
                if player is not None and player < n and seat < len(by_seat):
                    scores[player] = by_seat[seat]
        totals = [a + b for a, b in zip(totals, scores)]
        out.append({"game": g.get("index"), "scores": scores, "totals": list(totals)})
    return out


def build_replay(match_log: MatchLog | Mapping[str, Any], labels: Sequence[str] | None = None) -> dict:
    """Replay data of a whole match log (module docstring).

    ``labels`` names the players by index (e.g. the bots of the match's seats); default the
    player names recorded in the log.
    """
    if match_log.get("format") != LOG_FORMAT:
        raise ReplayDataError(f"not a {LOG_FORMAT} log")
    tr = match_log.get("time_rules") or {}
    initial_ms = int(tr.get("initial_ms", 60000))
    players = []
    for p in match_log.get("players", []):
        i = p.get("index")
        label = labels[i] if labels is not None and i is not None and i < len(labels) else p.get("name")
        players.append({"index": i, "name": p.get("name"), "label": label})
    return {
        "ruleset": match_log.get("ruleset"),
        **replay_facts(match_log.get("ruleset")),
        "time_rules": tr,
        "players": players,
        "result": match_log.get("result"),
        "games": [game_replay(g, initial_ms) for g in match_log.get("games", [])],
        "game_totals": game_totals(match_log),
    }
