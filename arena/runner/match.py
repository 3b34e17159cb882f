"""Play ONE match between players under the time rules, and replay its log.

Pure: the rules engine, the players of :mod:`arena.runner.players` (in-process bots or HTTP
endpoints), a monotonic clock. No database, no Celery: the Celery task and ``arena play``
both call :func:`run_match`.

What a match is (one engine unit per game spec):

* ``million_doubt``: ``games`` games between 2 players. By default game ``i`` is dealt afresh
  from seed ``derive_seed(seed, i)``, the seats swapped on odd ``i`` (no deal is played
  twice: a bot that remembers a hand learns nothing about a later game); pass
  ``game_specs`` to choose.
* ``trump_millionaire``: one game of deals to the target (4 players);
* ``jdf``: one match of ``sets`` x ``games_per_set`` games (4 players).

A game spec is ``{"seed": int, "seats": [player index of seat 0, seat 1, ...]}``, or
``{"setup": {...}, "seats": [...]}`` for a game from fixed hands (:func:`engine.from_setup`,
the scenario ``setup`` format; the bot check plays such positions to ask every decision kind).

Per decision (TIME-1..3, FAULT-1..3): the request is built from the seat's observation
(:func:`bots_sdk.protocol.build_request`), sent with the seat's remaining bank as the
deadline, the elapsed time taken from the bank (+ increment, up to the cap), the answer
checked and applied. Banks reset when the engine's ``unit_index`` changes (a new deal in
TM, a new game in JDF) and at each Million Doubt game. A fault (``timeout``,
``connection_error``, ``http_status``, ``body_too_large``, ``invalid_json``,
``invalid_action``, ``bot_error``) is recorded and the engine applies FAULT-2
(``g.forfeit``); a player with ``max_faults`` faults in the match forfeits the rest of it
(FAULT-3: reason ``max_faults``, no more requests). A withdrawn player
(:class:`~arena.runner.players.WithdrawnPlayer`: a deleted bot) forfeits every game from
the start without any request or notice (reason ``withdrawn``).

The match log (:func:`run_match`'s return value, JSON-ready)::

    {"format": "daifugo-arena-match", "version": 1, "protocol": 1, "match_id", "ruleset",
     "options", "time_rules": {"initial_ms", "increment_ms", "cap_ms"}, "seed", "max_faults",
     "fairness"?: {"tournament_id", "match_index", "attempt", "commitment"},
     "players": [{"index", "name", "kind": "local"|"http", "url" (None unless record_urls)}],
     "games": [{"index", "seed", "seats", "engine_log" (engine.Game.log()),
                "exchanges": [{"n", "seat", "player", "kind", "unit", "sent_at" (Unix s),
                               "elapsed_ms", "bank_before_ms", "bank_after_ms",
                               "request_sha256", "request_bytes", "request"?,
                               "status", "response", "fault"}],
                "faults": [...], "result" (engine result), "started_at", "finished_at"}],
     "faults": [{"game", "n", "seat", "player", "kind", "detail", "received", "elapsed_ms"}],
     "result": {"scores": [per player], "wins": [...], "faults": [...], "games": n,
                "ranks": [...] | None},
     "started_at", "finished_at"}

Requests are stored as their SHA-256 (and size) unless ``log_requests=True``; :func:`replay`
rebuilds every request from the engine and checks the digests, so the log still proves what
was sent.

``fairness`` (tournament matches, :mod:`arena.fairness`): where ``seed`` comes from, so
that :func:`check_fairness` can recompute every deal from the tournament's revealed seed.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import engine
from arena import fairness as fair
from arena import limits
from arena.matchlog import LOG_FORMAT, LOG_VERSION, log_files, read_log, write_log
from arena.runner.answers import check_action, safe_text
from arena.runner.players import RECEIVED_LOG_CHARS, HttpPlayer, LocalPlayer, WithdrawnPlayer, make_player
from bots_sdk import protocol
from engine.timebank import TimeBank, TimeRules

#: FAULT-3 default.
DEFAULT_MAX_FAULTS = 3
#: Safety stop: more decisions than this in one engine game is an engine bug, not a match
#: (the API bounds options so that no accepted match comes near it: arena.limits).
MAX_DECISIONS_PER_GAME = limits.MAX_DECISIONS_PER_GAME
#: Forfeit reason of a withdrawn player's seats (a deleted bot), asked nothing.
WITHDRAWN = "withdrawn"
#: Forfeits the runner applies without an exchange (FAULT-3, withdrawn): replay expects none.
BARRED_REASONS = frozenset({"max_faults", WITHDRAWN})
_ACTION_KEYS = ("type", "cards", "face_down", "jokers", "accept", "rate")


class MatchError(ValueError):
    """Bad match parameters (players, game specs); the message names the problem."""


def derive_seed(seed: int, index: int) -> int:
    """A 63-bit seed for game ``index`` of a match seeded ``seed`` (SHA-256, reproducible)."""
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def default_game_specs(ruleset: str, seed: int, games: int = 1) -> list[dict]:
    """Game specs of a match (module docstring): in Million Doubt a fresh deal per game, the
    seats swapped on odd games."""
    rs = engine.get_ruleset(ruleset)
    if rs.games_per_match_option:
        return [{"seed": derive_seed(seed, i), "seats": [0, 1] if i % 2 == 0 else [1, 0]} for i in range(games)]
    return [{"seed": derive_seed(seed, 0), "seats": list(range(rs.seats))}]


def _json(value: Any) -> Any:
    """JSON-normal form (int keys become strings, tuples lists)."""
    return json.loads(protocol.dumps(value))


def _normal_action(action: Mapping[str, Any]) -> dict:
    return {k: action[k] for k in _ACTION_KEYS if k in action}


def _game_wins(ruleset: str, result: Mapping[str, Any], seats: Sequence[int]) -> dict[int, int]:
    """Player index -> 1 if it won (MD) / took first place (TM, JDF; ties share) in this game."""
    ranks = result.get("ranks") or {}
    out = {}
    for seat, player in enumerate(seats):
        out[player] = 1 if ranks.get(str(seat)) == 1 else 0
    return out


def _game_scores(result: Mapping[str, Any], seats: Sequence[int]) -> dict[int, int]:
    scores = result.get("scores") or {}
    return {p: int(scores.get(str(s), 0)) for s, p in enumerate(seats)}


def summarize(
    ruleset: str, n_players: int, games: Sequence[Mapping[str, Any]], faults_by_player: Sequence[int]
) -> dict:
    """The match result from its games' results (also used by :func:`replay`)."""
    scores = [0] * n_players
    wins = [0] * n_players
    for gm in games:
        for p, v in _game_scores(gm["result"], gm["seats"]).items():
            scores[p] += v
        for p, v in _game_wins(ruleset, gm["result"], gm["seats"]).items():
            wins[p] += v
    ranks: list[int] | None = None
    if not engine.get_ruleset(ruleset).games_per_match_option and len(games) == 1:
        # one engine game is the whole match (TM, JDF): its final ranks are the match's places
        r = games[0]["result"]["ranks"]
        ranks = [0] * n_players
        for s, p in enumerate(games[0]["seats"]):
            ranks[p] = int(r[str(s)])
    return {"scores": scores, "wins": wins, "faults": list(faults_by_player), "games": len(games), "ranks": ranks}


def run_match(
    players: Sequence[Any],
    ruleset: str,
    options: Mapping[str, Any] | None = None,
    *,
    seed: int = 0,
    games: int = 1,
    game_specs: Sequence[Mapping[str, Any]] | None = None,
    time_rules: TimeRules | None = None,
    max_faults: int = DEFAULT_MAX_FAULTS,
    match_id: str | None = None,
    log_requests: bool = False,
    notices: bool = True,
    on_decision: Callable[[dict], None] | None = None,
    on_game_end: Callable[[dict], None] | None = None,
    on_step: Callable[[int, Any, dict], None] | None = None,
    fairness: Mapping[str, Any] | None = None,
    record_urls: bool = True,
) -> dict:
    """Play one match and return its log (module docstring).

    Args:
        players: :class:`~bots_sdk.bot.Bot` instances, ``http(s)://`` URLs, or players of
            :mod:`arena.runner.players`; index = player index in game specs.
        ruleset, options: the rule set and its options (engine options, validated).
        seed: match seed (games are seeded from it by :func:`derive_seed`).
        games: Million Doubt game count when ``game_specs`` is not given.
        game_specs: explicit ``[{"seed", "seats"}]`` (one engine game each).
        time_rules: TIME-1 values (default 60 s / +10 s / 60 s cap).
        max_faults: FAULT-3 limit per player in this match.
        log_requests: also store every request body (large) in the log.
        notices: send match_start / match_end notices.
        on_decision, on_game_end: progress callbacks, given the exchange / game record.
        on_step: called after every decision with ``(game index, the engine game, the
            exchange record)`` (the live view, :mod:`arena.live`); must not raise.
        fairness: ``{"tournament_id", "match_index", "attempt", "commitment"}`` of a
            tournament match, stored as the log's ``fairness`` (``seed`` must then be the
            attempt seed, :func:`arena.fairness.attempt_seed`).
        record_urls: store the players' URLs in the log; when False, ``players[].url`` is
            None and the URLs are blanked out of fault details (tournament logs: a
            competitor must not learn an opponent's endpoint).

    Raises:
        MatchError: wrong number of players, bad seats in a spec.
        engine.OptionsError: bad rule set or options.
    Bots never make this raise: their failures are faults in the log.
    """
    opts = engine.make_options(ruleset, options)
    rules = time_rules or TimeRules()
    match_id = match_id or uuid.uuid4().hex
    pls = [make_player(p) for p in players]
    n_seats = engine.SEATS[ruleset]
    specs = [dict(s) for s in (game_specs if game_specs is not None else default_game_specs(ruleset, seed, games))]
    if not specs:
        raise MatchError("a match needs at least one game")
    for i, spec in enumerate(specs):
        seats = spec.get("seats")
        if (
            not isinstance(seats, list)
            or len(seats) != n_seats
            or any(not isinstance(p, int) or not 0 <= p < len(pls) for p in seats)
        ):
            raise MatchError(f"game spec {i}: 'seats' must list {n_seats} player indices 0..{len(pls) - 1}")
        if spec.get("setup") is None and not isinstance(spec.get("seed"), int):
            raise MatchError(f"game spec {i}: 'seed' must be an integer")
    used = sorted({p for s in specs for p in s["seats"]})
    if used != list(range(len(pls))):
        raise MatchError(f"every player must sit in some game (players {len(pls)}, seated {used})")

    faults_by_player = [0] * len(pls)
    # player index -> forfeit reason of every game it sits in from now on
    barred: dict[int, str] = {i: WITHDRAWN for i, p in enumerate(pls) if p.kind == WithdrawnPlayer.kind}
    # a player named by its URL (no name given) is not named by it in a log kept without URLs
    names = [URL_BLANK if not record_urls and p.url and p.name == p.url else p.name for p in pls]
    log: dict[str, Any] = {
        "format": LOG_FORMAT,
        "version": LOG_VERSION,
        "protocol": protocol.PROTOCOL_VERSION,
        "match_id": match_id,
        "ruleset": ruleset,
        "options": opts.to_dict(),
        "time_rules": {"initial_ms": rules.initial_ms, "increment_ms": rules.increment_ms, "cap_ms": rules.cap_ms},
        "seed": seed,
        "max_faults": max_faults,
        **({"fairness": dict(fairness)} if fairness is not None else {}),
        "players": [
            {"index": i, "name": names[i], "kind": p.kind, "url": p.url if record_urls else None}
            for i, p in enumerate(pls)
        ],
        "games": [],
        "faults": [],
        "result": None,
        "started_at": time.time(),
        "finished_at": None,
    }
    if notices:
        for i, p in enumerate(pls):
            if i in barred:
                continue
            p.notify(
                protocol.dumps(
                    protocol.match_start_notice(
                        match_id=match_id,
                        ruleset=ruleset,
                        options=opts.to_dict(),
                        time_rules=rules,
                        players=names,
                        you=i,
                        games=len(specs),
                    )
                )
            )

    for gi, spec in enumerate(specs):
        record = _play_game(
            gi,
            spec,
            pls,
            ruleset,
            opts,
            rules,
            match_id,
            max_faults,
            faults_by_player,
            barred,
            log_requests,
            on_decision,
            on_step,
        )
        if not record_urls:
            _blank_urls(record["faults"], pls)
        log["games"].append(record)
        log["faults"].extend(record["faults"])
        if on_game_end:
            on_game_end(record)

    log["result"] = summarize(ruleset, len(pls), log["games"], faults_by_player)
    log["finished_at"] = time.time()
    if notices:
        res = log["result"]
        for i, p in enumerate(pls):
            if barred.get(i) == WITHDRAWN:
                continue
            p.notify(
                protocol.dumps(
                    protocol.match_end_notice(
                        match_id=match_id,
                        ruleset=ruleset,
                        players=names,
                        you=i,
                        scores=res["scores"],
                        wins=res["wins"],
                        faults=res["faults"],
                    )
                )
            )
    return log


#: What replaces a bot's URL in the fault details of a log kept without URLs.
URL_BLANK = "<bot url>"


#: IP address literals in an error text (IPv4 dotted quads, IPv6 with at least two colons).
_ADDRESS = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b|\[?\b[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}\b\]?")


def _url_needles(url: str) -> list[str]:
    """Every spelling of a bot URL's endpoint an error text may carry: the URL as typed, its
    host and port as typed and normalised (lower case, no trailing dot, IDNA), the host alone."""
    out = [url, url.rstrip("/")]
    netloc = url.split("://", 1)[-1].split("/", 1)[0]
    out.append(netloc)
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        port = parts.port
    except ValueError:
        return [n for n in out if n]
    spellings = {host}
    try:
        spellings.add(host.encode("idna").decode("ascii"))
    except UnicodeError:
        pass
    for h in spellings:
        if h:
            out.append(h)
            if port is not None:
                out.append(f"{h}:{port}")
    return [n for n in out if n]


def _blank_urls(faults: list[dict], pls: Sequence[Any]) -> None:
    """Replace every player's URL and host (every spelling, any case) in fault details by
    :data:`URL_BLANK`, and IP addresses in the arena's own error texts (``detail``) too: the
    address a host resolved to identifies the bot's server as well as its name (C-11)."""
    needles: list[str] = []
    for p in pls:
        url = getattr(p, "url", None)
        if url:
            needles.extend(_url_needles(url))
    needles = sorted(set(needles), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(n) for n in needles), re.IGNORECASE) if needles else None
    for f in faults:
        for key in ("detail", "received"):
            text_value = f.get(key)
            if isinstance(text_value, str):
                if pattern is not None:
                    text_value = pattern.sub(URL_BLANK, text_value)
                if key == "detail":
                    text_value = _ADDRESS.sub("<address>", text_value)
                f[key] = text_value


def _play_game(
    gi: int,
    spec: Mapping[str, Any],
    pls: list,
    ruleset: str,
    opts,
    rules: TimeRules,
    match_id: str,
    max_faults: int,
    faults_by_player: list[int],
    barred: dict[int, str],
    log_requests: bool,
    on_decision,
    on_step=None,
) -> dict:
    seats = list(spec["seats"])
    if spec.get("setup") is not None:
        g = engine.from_setup(ruleset, opts, spec["setup"])
    else:
        g = engine.new_game(ruleset, opts, spec["seed"])
    banks = [TimeBank(rules) for _ in seats]
    unit = g.unit_index
    exchanges: list[dict] = []
    faults: list[dict] = []
    started = time.time()

    def bar_seats() -> None:
        for seat, p in enumerate(seats):
            if p in barred and not g.over and g.still_in[seat]:
                g.forfeit(seat, barred[p])

    bar_seats()
    steps = 0
    while not g.over:
        steps += 1
        if steps > MAX_DECISIONS_PER_GAME:
            raise RuntimeError(f"game {gi} did not end after {MAX_DECISIONS_PER_GAME} decisions (engine bug)")
        if g.unit_index != unit:  # a new deal (TM) / game (JDF): banks reset (TIME-1)
            unit = g.unit_index
            for b in banks:
                b.reset()
            bar_seats()
            continue
        d = g.decision()
        assert d is not None  # the game is not over
        player_index = seats[d.seat]
        if player_index in barred:
            before = (d.seat, d.kind, len(g.actions))
            g.forfeit(d.seat, barred[player_index])
            after = g.decision()
            if after is not None and (after.seat, after.kind) == before[:2] and len(g.actions) == before[2]:
                raise RuntimeError("engine did not move after a forfeit (engine bug)")
            continue
        player = pls[player_index]
        bank = banks[d.seat]
        before_ms = bank.remaining_ms
        req = protocol.build_request(g, d.seat, match_id=match_id, game=gi, time_rules=rules, remaining_ms=before_ms)
        body = protocol.dumps(req)
        sent_at = time.time()
        out = player.decide(body, before_ms / 1000)
        fault, detail = out.fault, out.detail
        if fault is None and out.elapsed_ms > before_ms:
            fault, detail = "timeout", f"answer took {out.elapsed_ms} ms, the bank had {before_ms} ms"
        action = out.action
        if fault is None:
            why = check_action(action)
            if why:
                fault, detail = "invalid_action", f"{why} [ACT]"
            else:
                try:
                    g.apply(d.seat, action)
                except engine.InvalidAction as e:
                    fault, detail = "invalid_action", safe_text(f"{e.reason} [{e.rule}]", RECEIVED_LOG_CHARS)
        if fault is None:
            bank.spend(out.elapsed_ms)
            after_ms = bank.remaining_ms
        else:
            after_ms = max(0, before_ms - out.elapsed_ms)
            bank.remaining_ms = after_ms
        ex = {
            "n": len(exchanges),
            "seat": d.seat,
            "player": player_index,
            "kind": d.kind,
            "unit": req["unit"],
            "sent_at": round(sent_at, 6),
            "elapsed_ms": out.elapsed_ms,
            "bank_before_ms": before_ms,
            "bank_after_ms": after_ms,
            "request_sha256": hashlib.sha256(body).hexdigest(),
            "request_bytes": len(body),
            "status": out.status,
            "response": action,  # parsed from JSON by the player: already JSON-normal
            "fault": fault,
        }
        if log_requests:
            ex["request"] = req
        exchanges.append(ex)
        if fault is not None:
            received = (
                out.received
                if out.received
                else (safe_text(json.dumps(action), RECEIVED_LOG_CHARS) if action is not None else "")
            )
            f = {
                "game": gi,
                "n": ex["n"],
                "seat": d.seat,
                "player": player_index,
                "kind": fault,
                "detail": detail,
                "received": received,
                "elapsed_ms": out.elapsed_ms,
            }
            faults.append(f)
            faults_by_player[player_index] += 1
            g.forfeit(d.seat, fault)  # FAULT-2
            if faults_by_player[player_index] >= max_faults:  # FAULT-3
                barred.setdefault(player_index, "max_faults")
                bar_seats()
        if on_decision:
            on_decision(ex)
        if on_step:
            on_step(gi, g, ex)
    return {
        "index": gi,
        "seed": spec.get("seed"),
        "seats": seats,
        "engine_log": _json(g.log()),
        "exchanges": exchanges,
        "faults": faults,
        "result": _json(g.result()),
        "started_at": started,
        "finished_at": time.time(),
    }


# -- replay and verification ---------------------------------------------------------------------
class ReplayError(ValueError):
    """A match log that does not replay to its recorded results; the message says where."""


def replay(match_log: Mapping[str, Any], check_requests: bool = True) -> dict:
    """Re-run every game of ``match_log`` through the engine and check it.

    Checks: the log format; each game's engine actions replay (engine.replay) to the recorded
    engine result and game result; each exchange matches the engine action or forfeit it led
    to; with ``check_requests``, every request rebuilt from the engine state has the recorded
    SHA-256; the match result equals the one recomputed from the games.

    Returns the recomputed match result. Raises :class:`ReplayError` on the first mismatch.
    """
    if match_log.get("format") != LOG_FORMAT or match_log.get("version") != LOG_VERSION:
        raise ReplayError(f"not a {LOG_FORMAT} v{LOG_VERSION} log")
    ruleset = match_log["ruleset"]
    tr = match_log["time_rules"]
    rules = TimeRules(tr["initial_ms"], tr["increment_ms"], tr["cap_ms"])
    for gm in match_log["games"]:
        gi = gm["index"]
        elog = gm["engine_log"]
        if elog.get("ruleset") != ruleset or elog.get("seed") != gm["seed"]:
            raise ReplayError(f"game {gi}: engine log rule set/seed differ from the game record")
        try:
            final = _replay_game(gi, gm, elog, rules, match_log["match_id"], check_requests)
        except engine.InvalidAction as e:
            raise ReplayError(f"game {gi}: {e}") from None
        got = _json(final.result())
        if got != gm["result"] or got != elog.get("result"):
            raise ReplayError(f"game {gi}: replayed result {got} differs from the recorded {gm['result']}")
        if elog.get("setup") is None and _json(final.history(None, 0)) != elog.get("events"):
            raise ReplayError(
                f"game {gi}: the recorded events (deals, plays) differ from the ones replayed from the seed"
            )
    faults = [0] * len(match_log["players"])
    for f in match_log.get("faults", []):
        faults[f["player"]] += 1
    again = summarize(ruleset, len(match_log["players"]), match_log["games"], faults)
    if _json(again) != match_log.get("result"):
        raise ReplayError(f"match result {match_log.get('result')} differs from the games' {again}")
    return again


def _replay_game(
    gi: int, gm: Mapping[str, Any], elog: Mapping[str, Any], rules: TimeRules, match_id: str, check_requests: bool
) -> engine.Game:
    if elog.get("setup") is not None:
        g = engine.from_setup(elog["ruleset"], elog.get("options"), elog["setup"])
    else:
        g = engine.new_game(elog["ruleset"], elog.get("options"), elog["seed"])
    exchanges = list(gm.get("exchanges", []))
    k = 0
    for i, entry in enumerate(elog.get("actions", [])):
        seat = entry["seat"]
        reason = entry.get("forfeit")
        if reason in BARRED_REASONS:
            g.forfeit(seat, reason)
            continue
        if k >= len(exchanges):
            raise ReplayError(f"game {gi}: engine action {i} has no exchange in the log")
        ex = exchanges[k]
        k += 1
        if ex["seat"] != seat:
            raise ReplayError(
                f"game {gi}: exchange {ex['n']} is for seat {ex['seat']}, the engine action for seat {seat}"
            )
        if check_requests:
            req = protocol.build_request(
                g, seat, match_id=match_id, game=gi, time_rules=rules, remaining_ms=ex["bank_before_ms"]
            )
            digest = hashlib.sha256(protocol.dumps(req)).hexdigest()
            if digest != ex["request_sha256"]:
                raise ReplayError(f"game {gi}: request {ex['n']} rebuilt from the engine differs from the one sent")
        if reason is not None:
            if ex.get("fault") != reason:
                raise ReplayError(
                    f"game {gi}: forfeit {reason!r} at action {i} but exchange {ex['n']} records {ex.get('fault')!r}"
                )
            g.forfeit(seat, reason)
        else:
            if ex.get("fault") or ex.get("response") is None or _normal_action(ex["response"]) != entry["action"]:
                raise ReplayError(f"game {gi}: exchange {ex['n']} response differs from engine action {i}")
            g.apply(seat, entry["action"])
    if k != len(exchanges):
        raise ReplayError(f"game {gi}: {len(exchanges) - k} exchange(s) without an engine action")
    return g


# -- fairness -----------------------------------------------------------------------------------
def check_fairness(
    match_log: Mapping[str, Any], seed: int, salt: str, tournament: Mapping[str, Any] | None = None
) -> None:
    """Check that every deal of ``match_log`` follows from the revealed tournament ``seed``.

    Checks (chain in :mod:`arena.fairness`): the log's ``fairness.commitment`` is
    ``SHA-256(salt || seed)``; the log's ``seed`` is the attempt seed of its tournament id,
    match index and attempt; every game's seed and seats are the default game specs of that
    seed and the engine dealt it from that seed (no ``setup``). With ``tournament`` (the API's
    tournament object: ``id``, ``commitment``, ``ruleset``, ``options``,
    ``games_per_pairing``), also that the log belongs to it and plays its rules and game count.
    Pair it with :func:`replay`, which checks that the recorded deals and play are the
    engine's from those seeds.

    Raises:
        ReplayError: the first check that fails (the message says which).
    """
    fb = match_log.get("fairness")
    if not isinstance(fb, Mapping):
        raise ReplayError("the log has no 'fairness' record (not a tournament match log)")
    try:
        fair.check_commitment(seed, salt, fb.get("commitment"))  # type: ignore[arg-type]
    except fair.FairnessError as e:
        raise ReplayError(str(e)) from None
    tid, index, attempt = fb.get("tournament_id"), fb.get("match_index"), fb.get("attempt")
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (tid, index, attempt))
    if not ints or index < 0 or attempt < 1:  # type: ignore[operator]
        raise ReplayError("the log's 'fairness' record needs integer tournament_id, match_index >= 0, attempt >= 1")
    ruleset = match_log.get("ruleset")
    games = list(match_log.get("games") or [])
    if tournament is not None:
        if tournament.get("id") != tid or tournament.get("commitment") != fb.get("commitment"):
            raise ReplayError(f"the log is of tournament {tid}, not of tournament {tournament.get('id')}")
        if tournament.get("ruleset") != ruleset or _json(tournament.get("options") or {}) != match_log.get("options"):
            raise ReplayError("the log's rule set or options differ from the tournament's")
        if engine.get_ruleset(str(ruleset)).games_per_match_option and len(games) != tournament.get(
            "games_per_pairing"
        ):
            raise ReplayError(
                f"the log has {len(games)} games, the tournament plays {tournament.get('games_per_pairing')} per match"
            )
    expected = fair.attempt_seed(fair.match_seed(seed, tid, index), attempt)  # type: ignore[arg-type]
    where = f"tournament {tid}, match index {index}, attempt {attempt}"
    if match_log.get("seed") != expected:
        raise ReplayError(f"the match seed does not follow from the revealed seed ({where})")
    if not games or (not engine.get_ruleset(str(ruleset)).games_per_match_option and len(games) != 1):
        raise ReplayError(f"a {ruleset} match log has {len(games)} games")
    for i, (gm, spec) in enumerate(zip(games, default_game_specs(str(ruleset), expected, len(games)), strict=True)):
        elog = gm.get("engine_log") or {}
        if gm.get("index") != i or gm.get("seed") != spec["seed"] or gm.get("seats") != spec["seats"]:
            raise ReplayError(f"game {i}: its seed or seats do not follow from the revealed seed ({where})")
        if elog.get("seed") != spec["seed"] or elog.get("setup") is not None:
            raise ReplayError(f"game {i}: not dealt from its seed ({where})")


# -- log files ---------------------------------------------------------------------------------
def verify_logs(
    paths: Iterable[str | Path],
    check_requests: bool = True,
    *,
    seed: int | None = None,
    salt: str | None = None,
    tournament: Mapping[str, Any] | None = None,
) -> tuple[int, list[tuple[str, str]]]:
    """Replay every log file under ``paths`` (files or folders, ``*.json`` / ``*.json.gz``).

    With the revealed ``seed`` and ``salt`` (both, or neither) every log must also pass
    :func:`check_fairness` (with ``tournament`` if given), and no two logs may be of the same
    match (tournament id and match index).

    Returns ``(number verified, [(path, reason), ...])``; never raises for a bad file.
    """
    ok = 0
    failures: list[tuple[str, str]] = []
    seen: dict[tuple[Any, Any], str] = {}
    for f in log_files(paths):
        try:
            match_log = read_log(f)
            replay(match_log, check_requests=check_requests)
            if seed is not None or salt is not None:
                if seed is None or salt is None:
                    raise ReplayError("give both the revealed seed and the salt")
                check_fairness(match_log, seed, salt, tournament)
                fb = match_log["fairness"]
                key = (fb["tournament_id"], fb["match_index"])
                if key in seen:
                    raise ReplayError(f"a second log of match index {key[1]} (the first: {seen[key]})")
                seen[key] = str(f)
            ok += 1
        except Exception as e:  # unreadable, not JSON, or not replaying: all are failures
            failures.append((str(f), f"{type(e).__name__}: {e}"))
    return ok, failures


__all__ = [
    "run_match",
    "replay",
    "verify_logs",
    "check_fairness",
    "write_log",
    "read_log",
    "derive_seed",
    "default_game_specs",
    "summarize",
    "MatchError",
    "ReplayError",
    "LocalPlayer",
    "HttpPlayer",
    "DEFAULT_MAX_FAULTS",
]
