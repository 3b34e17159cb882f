"""Replay and verification of match logs: the log proves what was played.

:func:`replay` re-runs every game of a log through the engine (actions, forfeits, and the
SHA-256 of every request rebuilt from the engine state) and recomputes the pars it records
(:func:`arena.par.check_pars`); :func:`check_fairness` checks that
every deal follows from a tournament's revealed seed (:mod:`arena.fairness`);
:func:`verify_logs` does both for log files. Pure: the engine, :mod:`arena.matchlog`, :mod:`arena.par`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import engine
from arena import fairness as fair
from arena import par as luck
from arena.matchlog import (
    LOG_FORMAT,
    READ_VERSIONS,
    GameRecord,
    MatchLog,
    MatchResult,
    is_lines_file,
    log_files,
    read_log,
    read_log_lines,
)
from arena.runner.gameplay import json_normal
from arena.runner.match import BARRED_REASONS, default_game_specs, normal_action, summarize
from arena.sources import duplicate_specs
from bots_sdk import protocol
from engine.timebank import TimeRules


class ReplayError(ValueError):
    """A match log that does not replay to its recorded results; the message says where."""


def replay(match_log: MatchLog, check_requests: bool = True, check_pars: bool = True) -> MatchResult:
    """Re-run every game of ``match_log`` through the engine and check it.

    Checks: the log format; each game's engine actions replay (engine.replay) to the recorded
    engine result and game result; each exchange matches the engine action or forfeit it led
    to; with ``check_requests``, every request rebuilt from the engine state has the recorded
    SHA-256; the match result equals the one recomputed from the games; with ``check_pars``,
    the pars the log records (its ``par`` record, docs/ranking.md) equal the ones recomputed
    from the seeds.

    Returns the recomputed match result. Raises :class:`ReplayError` on the first mismatch.
    """
    if match_log.get("format") != LOG_FORMAT or match_log.get("version") not in READ_VERSIONS:
        raise ReplayError(f"not a {LOG_FORMAT} log of version {' or '.join(map(str, sorted(READ_VERSIONS)))}")
    ruleset = match_log["ruleset"]
    rules = _Rules(match_log)
    requests = _Requests(match_log["match_id"], rules) if check_requests else None
    for gm in match_log["games"]:
        gi = gm["index"]
        elog = gm["engine_log"]
        if elog.get("ruleset") != ruleset or elog.get("seed") != gm["seed"]:
            raise ReplayError(f"game {gi}: engine log rule set/seed differ from the game record")
        try:
            final = _replay_game(gi, gm, elog, rules, requests)
        except engine.InvalidAction as e:
            raise ReplayError(f"game {gi}: {e}") from None
        got = json_normal(final.result())
        if got != gm["result"] or got != elog.get("result"):
            raise ReplayError(f"game {gi}: replayed result {got} differs from the recorded {gm['result']}")
        if elog.get("setup") is None and json_normal(final.history(None, 0)) != elog.get("events"):
            raise ReplayError(
                f"game {gi}: the recorded events (deals, plays) differ from the ones replayed from the seed"
            )
    faults = [0] * len(match_log["players"])
    for f in match_log.get("faults", []):
        faults[f["player"]] += 1
    again = summarize(ruleset, len(match_log["players"]), match_log["games"], faults)
    if json_normal(again) != match_log.get("result"):
        raise ReplayError(f"match result {match_log.get('result')} differs from the games' {again}")
    if check_pars:
        try:
            luck.check_pars(match_log)
        except luck.ParError as e:
            raise ReplayError(f"pars: {e}") from None
    return again


class _Rules:
    """The time rules of a log's players: the match's ``time_rules``, and a person's own
    (``player_time_rules``, by player index: docs/tables.md)."""

    def __init__(self, match_log: MatchLog):
        self.match = self._read(match_log["time_rules"])
        own = match_log.get("player_time_rules") or {}
        self.own = {int(i): self._read(r) for i, r in own.items()}

    @staticmethod
    def _read(tr: Mapping[str, Any]) -> TimeRules:
        return TimeRules(tr["initial_ms"], tr["increment_ms"], tr["cap_ms"])

    def of(self, player: int) -> TimeRules:
        return self.own.get(player, self.match)

    def banks(self, seats: list[int]) -> list[int]:
        """Every seat's initial bank, ``seats[s]`` the player at seat ``s``."""
        return [self.of(p).initial_ms for p in seats]


class _Requests:
    """Rebuilds the requests of one match log and checks their SHA-256. Logs written before
    requests carried ``banks_ms`` (every seat's bank) are rebuilt without it: the log's first
    request decides which shape the whole log has."""

    def __init__(self, match_id: str, rules: _Rules):
        self.match_id, self.rules = match_id, rules
        self.with_banks: bool | None = None  # unknown until the first request

    def check(self, g: engine.Game, gi: int, ex: Mapping[str, Any], banks_ms: list[int]) -> None:
        req = protocol.build_request(
            g,
            ex["seat"],
            match_id=self.match_id,
            game=gi,
            time_rules=self.rules.of(ex["player"]),
            remaining_ms=ex["bank_before_ms"],
            banks_ms=banks_ms,
        )
        for with_banks in (True, False) if self.with_banks is None else (self.with_banks,):
            if not with_banks:
                req.pop("banks_ms", None)
            if hashlib.sha256(protocol.dumps(req)).hexdigest() == ex["request_sha256"]:
                self.with_banks = with_banks
                return
        raise ReplayError(f"game {gi}: request {ex['n']} rebuilt from the engine differs from the one sent")


def _replay_game(
    gi: int, gm: GameRecord, elog: Mapping[str, Any], rules: _Rules, requests: _Requests | None
) -> engine.Game:
    if elog.get("setup") is not None:
        g = engine.from_setup(elog["ruleset"], elog.get("options"), elog["setup"])
    else:
        g = engine.new_game(elog["ruleset"], elog.get("options"), elog["seed"])
    exchanges = list(gm.get("exchanges", []))
    k = 0
    # every seat's bank as the runner held it (arena.runner.match): reset when the unit
    # changes (TIME-1), then each seat's bank after its last exchange
    unit, banks = g.unit_index, rules.banks(gm["seats"])
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
        if g.unit_index != unit:
            unit, banks = g.unit_index, rules.banks(gm["seats"])
        if requests is not None:
            requests.check(g, gi, ex, banks)
        banks[seat] = ex["bank_after_ms"]
        if reason is not None:
            if ex.get("fault") != reason:
                raise ReplayError(
                    f"game {gi}: forfeit {reason!r} at action {i} but exchange {ex['n']} records {ex.get('fault')!r}"
                )
            g.forfeit(seat, reason)
        else:
            response = ex.get("response")
            if ex.get("fault") or response is None or normal_action(response) != entry["action"]:
                raise ReplayError(f"game {gi}: exchange {ex['n']} response differs from engine action {i}")
            g.apply(seat, entry["action"])
    if k != len(exchanges):
        raise ReplayError(f"game {gi}: {len(exchanges) - k} exchange(s) without an engine action")
    return g


def check_fairness(match_log: MatchLog, seed: int, salt: str, tournament: Mapping[str, Any] | None = None) -> None:
    """Check that every deal of ``match_log`` follows from the revealed tournament ``seed``.

    Checks (chain in :mod:`arena.fairness`): the log's ``fairness.commitment`` is
    ``SHA-256(salt || seed)``; the log's ``seed`` is the attempt seed of its tournament id,
    match index and attempt; every game's seed and seats are the default game specs of that
    seed and the engine dealt it from that seed (no ``setup``). A ladder set's log
    (``fairness.scheme`` ``set``) commits to the set's own seed: its ``seed`` is the attempt
    seed of that seed, its games the set's rotations of one deal
    (:func:`arena.sources.duplicate_specs`). With ``tournament`` (the API's
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
        fair.check_commitment(seed, salt, fb.get("commitment"))
    except fair.FairnessError as e:
        raise ReplayError(str(e)) from None
    tid, index, attempt = fb.get("tournament_id"), fb.get("match_index"), fb.get("attempt")
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (tid, index, attempt))
    if not ints or index < 0 or attempt < 1:
        raise ReplayError("the log's 'fairness' record needs integer tournament_id, match_index >= 0, attempt >= 1")
    ruleset = match_log.get("ruleset")
    games = list(match_log.get("games") or [])
    if tournament is not None:
        if tournament.get("id") != tid or tournament.get("commitment") != fb.get("commitment"):
            raise ReplayError(f"the log is of tournament {tid}, not of tournament {tournament.get('id')}")
        if tournament.get("ruleset") != ruleset or json_normal(tournament.get("options") or {}) != match_log.get(
            "options"
        ):
            raise ReplayError("the log's rule set or options differ from the tournament's")
        if engine.get_ruleset(str(ruleset)).games_per_match_option and len(games) != tournament.get(
            "games_per_pairing"
        ):
            raise ReplayError(
                f"the log has {len(games)} games, the tournament plays {tournament.get('games_per_pairing')} per match"
            )
    if fb.get("scheme") == "set":
        # a ladder set (docs/ladder.md): the revealed seed is the set's own, its games one deal
        # in every seat rotation
        expected = fair.attempt_seed(seed, attempt)
        where = f"ladder {fb.get('ladder_id')} set, match index {index}, attempt {attempt}"
        specs = duplicate_specs(str(ruleset), expected)
        if len(games) != len(specs):
            raise ReplayError(f"a {ruleset} set log has {len(games)} games, a set plays {len(specs)}")
    else:
        expected = fair.attempt_seed(fair.match_seed(seed, tid, index), attempt)
        where = f"tournament {tid}, match index {index}, attempt {attempt}"
        if not games or (not engine.get_ruleset(str(ruleset)).games_per_match_option and len(games) != 1):
            raise ReplayError(f"a {ruleset} match log has {len(games)} games")
        specs = default_game_specs(str(ruleset), expected, len(games))
    if match_log.get("seed") != expected:
        raise ReplayError(f"the match seed does not follow from the revealed seed ({where})")
    for i, (gm, spec) in enumerate(zip(games, specs, strict=True)):
        elog = gm.get("engine_log") or {}
        if gm.get("index") != i or gm.get("seed") != spec["seed"] or gm.get("seats") != spec["seats"]:
            raise ReplayError(f"game {i}: its seed or seats do not follow from the revealed seed ({where})")
        if elog.get("seed") != spec["seed"] or elog.get("setup") is not None:
            raise ReplayError(f"game {i}: not dealt from its seed ({where})")


def _logs_in(f: Path) -> Iterator[tuple[str, MatchLog | None, Exception | None]]:
    """``(label, log, None)`` for each log of file ``f`` (a single log, or each line of a
    JSON Lines file: :func:`arena.matchlog.read_log_lines`, its tournament line skipped), or
    ``(label, None, error)`` for what cannot be read."""
    if not is_lines_file(f):
        try:
            yield str(f), read_log(f), None
        except Exception as e:  # unreadable or not JSON: a failure of this file
            yield str(f), None, e
        return
    try:
        for number, obj in read_log_lines(f):
            if "tournament" in obj and "log" not in obj:
                continue  # the download's first line: the tournament object
            inner = obj.get("log", obj)
            label = f"{f}:{number}" + (f" (match {obj['match_id']})" if "match_id" in obj else "")
            if isinstance(inner, dict):
                yield label, cast(MatchLog, inner), None
            else:
                yield label, None, ReplayError("the line's log is not a JSON object")
    except Exception as e:  # unreadable, or a line that is not JSON: the rest of the file is lost
        yield str(f), None, e


def verify_logs(
    paths: Iterable[str | Path],
    check_requests: bool = True,
    *,
    check_pars: bool = True,
    seed: int | None = None,
    salt: str | None = None,
    tournament: Mapping[str, Any] | None = None,
) -> tuple[int, list[tuple[str, str]]]:
    """Replay every log under ``paths``: files or folders of ``*.json`` / ``*.json.gz`` logs
    and JSON Lines files of logs (``*.jsonl``: the tournament downloads of the API and the
    pages, one log per line; :func:`arena.matchlog.log_files`).

    With the revealed ``seed`` and ``salt`` (both, or neither) every log must also pass
    :func:`check_fairness` (with ``tournament`` if given), and no two logs may be of the same
    match (tournament id and match index).

    Returns ``(number verified, [(where, reason), ...])``, ``where`` a path, or
    ``path:line (match id)`` in a JSON Lines file; never raises for a bad file.
    """
    ok = 0
    failures: list[tuple[str, str]] = []
    seen: dict[tuple[Any, Any], str] = {}
    for f in log_files(paths):
        for where, match_log, error in _logs_in(f):
            if match_log is None:
                failures.append((where, f"{type(error).__name__}: {error}"))
                continue
            try:
                replay(match_log, check_requests=check_requests, check_pars=check_pars)
                if seed is not None or salt is not None:
                    if seed is None or salt is None:
                        raise ReplayError("give both the revealed seed and the salt")
                    check_fairness(match_log, seed, salt, tournament)
                    fb = match_log["fairness"]
                    key = (fb["tournament_id"], fb["match_index"])
                    if key in seen:
                        raise ReplayError(f"a second log of match index {key[1]} (the first: {seen[key]})")
                    seen[key] = where
                ok += 1
            except Exception as e:  # not replaying, or a log of another shape: all are failures
                failures.append((where, f"{type(e).__name__}: {e}"))
    return ok, failures
