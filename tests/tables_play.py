"""What the table tests share (docs/tables.md): a simple person's policy over a decision
request, and the check that what a person's page received is exactly its seat's own view.

:func:`choose` answers a protocol decision request as a plain player would: the first listed
play that sheds the most cards (a Trump Millionaire hand keeps a card it may go out with:
TM-5), a pass when it may not play, ``through``, the smallest penalty, keep the hand, the
smallest rate, the fewest cards given or discarded. :func:`check_frames` checks that every
frame a seat received is built from what a bot in that seat gets: each request is one the
runner sent that player (rebuilt from the log, its SHA-256 checked), and each view's
observation is the engine's observation of that seat at some point of its game.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import engine
from arena.runner.match import BARRED_REASONS
from bots_sdk import protocol
from engine.timebank import TimeRules

#: Ranks a Trump Millionaire last play may not hold (TM-5, normal order).
_FORBIDDEN_LAST = {"8", "2"}


def _forbidden(card: str, revolution: bool) -> bool:
    if card == "JK":
        return True
    return card[0] in ({"8", "3"} if revolution else _FORBIDDEN_LAST)


def choose(req: Mapping[str, Any]) -> dict[str, Any]:
    """An answer to decision request ``req`` (module docstring)."""
    kind = req["decision"]["kind"]
    obs = req["observation"]
    legal = list(req.get("legal_actions") or [])
    if kind == "play":
        plays = [a for a in legal if a["type"] == "play"]
        hand = list(obs["hand"])
        if req["ruleset"] == "trump_millionaire" and plays:
            rev = bool(obs.get("revolution"))

            def rank(a: Mapping[str, Any]) -> tuple[bool, bool, int]:
                rest = list(hand)
                for c in a["cards"]:
                    rest.remove(c)
                strands = bool(rest) and all(_forbidden(c, rev) for c in rest)
                return (not strands, any(_forbidden(c, rev) for c in a["cards"]), len(a["cards"]))

            return dict(max(plays, key=rank))
        if plays:
            return dict(max(plays, key=lambda a: len(a["cards"])))
        if any(a["type"] == "pass" for a in legal):
            return {"type": "pass"}
        card = hand[0]  # Million Doubt: nothing listed beats the table; one card face down
        return {"type": "play", "cards": [card], "face_down": [card]}
    if kind == "doubt":
        return {"type": "through"}
    if kind in ("penalty", "give", "discard"):
        choice = req["choice"]
        return {"type": kind, "cards": list(choice["from"][: choice["min"]])}
    if kind == "exchange":
        return {"type": "exchange", "accept": False}
    if kind == "rate":
        return dict(min((a for a in legal if a["type"] == "rate"), key=lambda a: a["rate"]))
    raise ValueError(f"unknown decision kind {kind!r}")


def _rules(match_log: Mapping[str, Any], player: int) -> TimeRules:
    tr = (match_log.get("player_time_rules") or {}).get(str(player)) or match_log["time_rules"]
    return TimeRules(tr["initial_ms"], tr["increment_ms"], tr["cap_ms"])


def seat_views(match_log: Mapping[str, Any], player: int) -> tuple[dict[int, list[str]], set[str]]:
    """``(per game: the observation of player's seat after every action, every request the
    runner sent it)``, each as canonical JSON, replayed from the log through the engine (each
    rebuilt request checked against the SHA-256 the log records)."""
    views: dict[int, list[str]] = {}
    requests: set[str] = set()
    for gm in match_log["games"]:
        seats = gm["seats"]
        if player not in seats:
            continue
        seat = seats.index(player)
        elog = gm["engine_log"]
        g = engine.new_game(elog["ruleset"], elog.get("options"), elog["seed"])
        exchanges = iter(gm["exchanges"])
        unit = g.unit_index
        banks = [_rules(match_log, p).initial_ms for p in seats]
        seen = [_canon(g.observation(seat))]
        for entry in elog.get("actions", []):
            if entry.get("forfeit") not in (None, *BARRED_REASONS) or "forfeit" not in entry:
                ex = next(exchanges)
                if g.unit_index != unit:
                    unit, banks = g.unit_index, [_rules(match_log, p).initial_ms for p in seats]
                if ex["player"] == player:
                    req = protocol.build_request(
                        g,
                        ex["seat"],
                        match_id=match_log["match_id"],
                        game=gm["index"],
                        time_rules=_rules(match_log, player),
                        remaining_ms=ex["bank_before_ms"],
                        banks_ms=banks,
                    )
                    assert hashlib.sha256(protocol.dumps(req)).hexdigest() == ex["request_sha256"]
                    requests.add(_canon(req))
                banks[ex["seat"]] = ex["bank_after_ms"]
            if "forfeit" in entry:
                g.forfeit(entry["seat"], entry["forfeit"])
            else:
                g.apply(entry["seat"], entry["action"])
            seen.append(_canon(g.observation(seat)))
        views[gm["index"]] = seen
    return views, requests


def _canon(value: Any) -> str:
    return json.dumps(json.loads(protocol.dumps(value)), sort_keys=True)


def _unlike(frame: Mapping[str, Any], seen: list[str]) -> str:
    """Why a view frame is none of ``seen``: its keys that differ from the closest one."""
    got = json.loads(_canon(frame["observation"]))

    def diff(text: str) -> dict[str, Any]:
        want = json.loads(text)
        return {k: (got.get(k), want.get(k)) for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)}

    closest = min((diff(t) for t in seen), key=len, default={})
    return f"a view that is not the seat's observation (acted {frame.get('acted')}; closest differs in {closest})"


def check_frames(frames: Iterable[Mapping[str, Any]], match_log: Mapping[str, Any], player: int) -> dict[str, int]:
    """Check every frame a person's seat received (module docstring); returns how many of
    each type were checked.

    Raises:
        AssertionError: a frame that is not built from the seat's own view.
    """
    views, sent = seat_views(match_log, player)
    counts: dict[str, int] = {}
    for f in frames:
        kind = f["type"]
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "request":
            assert _canon(f["request"]) in sent, f"a request frame is no request the runner sent player {player}"
        elif kind == "view":
            assert f["seats"][f["seat"]] == player, "a view of another seat"
            assert _canon(f["observation"]) in views[f["game"]], _unlike(f, views[f["game"]])
            assert set(f["acted"]) == {"seat", "kind", "bank_after_ms"}
        elif kind == "notice":
            assert f["notice"]["you"] == player
        elif kind in ("refused", "accepted", "timeout"):
            assert set(f) <= {"type", "rid", "reason", "rule", "elapsed_ms"}
        else:
            assert kind == "over" and set(f) == {"type"}, f"an unknown frame {kind!r}"
        text = json.dumps(f)
        assert '"hands"' not in text, "a frame holding every hand"
    return counts


#: What :func:`play_through_api` calls: ``(path) -> (status, JSON body)`` and
#: ``(path, JSON body) -> (status, JSON body)``, as the person (a token or a session).
Get = Callable[[str], tuple[int, Any]]
Post = Callable[[str, Any], tuple[int, Any]]


def play_through_api(
    get: Get, post: Post, table_id: int, *, timeout_s: float = 120.0, try_first: Callable | None = None
) -> list[dict[str, Any]]:
    """Answer every decision of the caller's seat at table ``table_id`` with :func:`choose`,
    through ``GET /api/v1/tables/<id>/seat`` and ``POST .../answer``, until the table is over;
    returns every frame read. ``try_first(request)``: an action tried once before the answer
    (the engine refuses it: the refusal comes on the frames, the request stays pending).

    Raises:
        AssertionError: an unexpected answer, or the table still running after ``timeout_s``.
    """
    frames: list[dict[str, Any]] = []
    answered: set[str] = set()
    tried = try_first is None
    deadline = time.monotonic() + timeout_s
    while True:
        status, t = get(f"/api/v1/tables/{table_id}")
        assert status == 200, t
        if t["status"] in ("finished", "cancelled"):
            return frames
        assert time.monotonic() < deadline, f"table {table_id} still {t['status']} after {timeout_s} s"
        status, seat = get(f"/api/v1/tables/{table_id}/seat")
        pending = [f for f in seat.get("frames", []) if f["type"] == "request" and f["rid"] not in answered]
        if status == 200:
            frames += seat["frames"]
        if status != 200 or not pending:  # 409: not running yet, or just over
            time.sleep(0.03)
            continue
        f = pending[-1]
        if not tried and try_first is not None:
            wrong = try_first(f["request"])
            if wrong is not None:
                tried = True
                status, body = post(f"/api/v1/tables/{table_id}/answer", {"rid": f["rid"], "action": wrong})
                assert status == 202, body
                continue
        status, body = post(f"/api/v1/tables/{table_id}/answer", {"rid": f["rid"], "action": choose(f["request"])})
        if status == 422:  # answered meanwhile (a refusal raced): read again
            continue
        assert status == 202, body
        answered.add(f["rid"])


def http_calls(client: Any) -> tuple[Get, Post]:
    """:func:`play_through_api`'s calls over an ``httpx.Client`` (its base URL and token set)."""

    def get(path: str) -> tuple[int, Any]:
        r = client.get(path)
        return r.status_code, r.json()

    def post(path: str, body: Any) -> tuple[int, Any]:
        r = client.post(path, json=body)
        return r.status_code, r.json()

    return get, post
