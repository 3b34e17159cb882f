"""The match-log format and its one codec.

A match log is a JSON object (``"format": "daifugo-arena-match"``, ``"version": 2``; its
fields are listed in docs/protocol.md and built by :class:`arena.runner.match.Match`).
Everywhere a log is stored or sent (the database, ``arena play --out``, the API's downloads)
it is the bytes of :func:`encode`: strict JSON (RFC 8259: no ``NaN`` or ``Infinity``) in
UTF-8, compact separators, keys in the order they were built. Compressed copies (the
``match_logs`` table, ``*.json.gz`` files) are gzip of those bytes with ``mtime=0``, so the
same log always compresses to the same bytes.

The records below (:class:`MatchLog`, :class:`GameRecord`, :class:`Exchange`,
:class:`FaultRecord`...) are the log's schema, shared by the runner that builds it
(:mod:`arena.runner.match`), replay and verification (:mod:`arena.runner.replay`) and the
pages that show it. They are ``TypedDict``: a log is the plain JSON object, its keys in the
order listed (the order the runner builds them in, so the bytes of :func:`encode` stay those
of every stored log).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, cast

#: ``format`` field of every match log.
LOG_FORMAT = "daifugo-arena-match"
#: ``version`` field of the logs this code writes: 2, faults as codes with parameters
#: (``code``, ``params``, ``rule`` in each :class:`FaultRecord`); version 1 logs have the
#: English ``detail`` alone and are still read, verified and shown (:data:`READ_VERSIONS`).
LOG_VERSION = 2
#: Versions of the logs this code reads and verifies.
READ_VERSIONS = frozenset({1, 2})
#: gzip level of stored logs.
COMPRESS_LEVEL = 6


class TimeRulesRecord(TypedDict):
    """TIME-1 values of a match, milliseconds."""

    initial_ms: int
    increment_ms: int
    cap_ms: int


class FairnessRecord(TypedDict):
    """Where a tournament match's seed comes from (:mod:`arena.fairness`); a ladder set's
    (``scheme`` ``set``, its ``ladder_id``) commits to the set's own seed."""

    tournament_id: int
    match_index: int
    attempt: int
    commitment: str
    scheme: NotRequired[str]
    ladder_id: NotRequired[int]


class PlayerRecord(TypedDict):
    """One player of a match; ``url`` is None in a log kept without URLs."""

    index: int
    name: str
    kind: str
    url: str | None


class Exchange(TypedDict):
    """One decision request and its answer (``sent_at``: Unix seconds; ``*_ms``: milliseconds).

    ``request``: the request itself, only when the match logged requests; ``slot_wait_ms``
    (when 1 ms or more) and ``slot_bypassed`` (only ``True``): the request's wait for a slot
    of its endpoint's cap (:mod:`arena.runner.semaphore`); ``arena_ms`` (when 1 ms or more):
    the part of ``elapsed_ms`` the arena was unavailable on the bot's path, not taken from the
    bank (``bank_after_ms`` is ``bank_before_ms`` less ``elapsed_ms - arena_ms``, plus the
    increment)."""

    n: int
    seat: int
    player: int
    kind: str
    unit: int
    sent_at: float
    elapsed_ms: int
    bank_before_ms: int
    bank_after_ms: int
    request_sha256: str
    request_bytes: int
    status: int | None
    response: dict[str, Any] | None
    fault: str | None
    request: NotRequired[dict[str, Any]]
    slot_wait_ms: NotRequired[float]
    slot_bypassed: NotRequired[Literal[True]]
    arena_ms: NotRequired[int]


class FaultRecord(TypedDict):
    """A fault (FAULT-1): ``n`` is its exchange's number in game ``game``; ``kind`` its FAULT-1
    kind; ``code`` and ``params`` what it was (:mod:`arena.faults`: an arena code or an
    engine refusal, and the template's fields), ``rule`` the rule id an invalid action breaks
    (else None); ``detail`` the English text rendered from them; ``received`` the bot's text
    kept (strict UTF-8, truncated). A version 1 log has no ``code``, ``params`` or ``rule``."""

    game: int
    n: int
    seat: int
    player: int
    kind: str
    code: NotRequired[str]
    params: NotRequired[dict[str, str | int]]
    rule: NotRequired[str | None]
    detail: str
    received: str
    elapsed_ms: int


class ArenaFaultRecord(TypedDict):
    """A request the arena itself failed (its relay, a gateway, the worker's network): never
    the bot's fault and never its time (docs/protocol.md, "Whose fault is a wait"). The
    decision was asked again with the bank it had: ``n`` is the number of the exchange that
    asked it again in game ``game``; ``detail`` what failed; ``sent_at`` (Unix seconds) and
    ``elapsed_ms`` the failed request's."""

    game: int
    n: int
    seat: int
    player: int
    detail: str
    sent_at: float
    elapsed_ms: int


class GameRecord(TypedDict):
    """One engine game: ``seed`` (None for a game from fixed hands), ``seats`` (player index
    per seat), the engine's log and result, Unix seconds; ``arena_faults`` (only when there
    were some) the requests the arena failed and asked again; ``par`` (per seat of the game,
    as its result) once the pars are computed (:mod:`arena.par`, docs/ranking.md)."""

    index: int
    seed: int | None
    seats: list[int]
    engine_log: dict[str, Any]
    exchanges: list[Exchange]
    faults: list[FaultRecord]
    arena_faults: NotRequired[list[ArenaFaultRecord]]
    result: dict[str, Any]
    started_at: float
    finished_at: float
    par: NotRequired[list[float]]


class ParRecord(TypedDict):
    """How a log's pars were computed (:func:`arena.par.check_pars` recomputes them);
    ``weight`` absent in the logs written before weights (then 1)."""

    baseline: str
    rollouts: int
    weight: NotRequired[float]


class MatchResult(TypedDict):
    """Per-player lists (by player index); ``ranks`` only when one engine game is the match."""

    scores: list[int]
    wins: list[int]
    faults: list[int]
    games: int
    ranks: list[int] | None


class MatchLog(TypedDict):
    """A whole match log (the format of this module). ``result`` and ``finished_at`` are
    None only while the match is played; ``par`` is added with the games' pars, after the
    match was stored (arena.usecases.pars)."""

    format: str
    version: int
    protocol: int
    match_id: str
    ruleset: str
    options: dict[str, Any]
    time_rules: TimeRulesRecord
    #: A person's own time rules by player index (docs/tables.md); absent when none.
    player_time_rules: NotRequired[dict[str, TimeRulesRecord]]
    seed: int
    max_faults: int
    fairness: NotRequired[FairnessRecord]
    players: list[PlayerRecord]
    games: list[GameRecord]
    faults: list[FaultRecord]
    result: MatchResult | None
    started_at: float
    finished_at: float | None
    par: NotRequired[ParRecord]


class LogEncodingError(ValueError):
    """A log holds a value strict JSON in UTF-8 cannot carry (NaN, Infinity, a lone surrogate)."""


def encode(log: Any) -> bytes:
    """The log as strict JSON in UTF-8 (bytes).

    Raises:
        LogEncodingError: the log holds ``NaN``/``Infinity``, a lone surrogate, or a value
            JSON has no form for.
    """
    try:
        return json.dumps(log, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, TypeError, UnicodeEncodeError) as exc:
        raise LogEncodingError(f"the match log is not strict JSON in UTF-8: {type(exc).__name__}") from None


def decode(data: bytes) -> Any:
    """The log from :func:`encode`'s bytes, or from their gzip (detected by its magic bytes).

    Raises:
        ValueError: not (gzip of) UTF-8 JSON.
    """
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def compress(log: Any) -> tuple[bytes, int]:
    """gzip of :func:`encode`; returns ``(compressed bytes, uncompressed size in bytes)``.

    Raises:
        LogEncodingError: as :func:`encode`.
    """
    raw = encode(log)
    return gzip.compress(raw, compresslevel=COMPRESS_LEVEL, mtime=0), len(raw)


def decompress(data: bytes) -> bytes:
    """The UTF-8 JSON bytes of a log compressed by :func:`compress`."""
    return gzip.decompress(data)


def write_log(match_log: Mapping[str, Any], path: str | Path) -> Path:
    """Write a match log to ``path``: :func:`encode`'s bytes, gzip-compressed when ``path``
    ends in ``.gz``. Returns the path."""
    path = Path(path)
    path.write_bytes(compress(match_log)[0] if path.suffix == ".gz" else encode(match_log))
    return path


def read_log(path: str | Path) -> MatchLog:
    """Read a match log written by :func:`write_log` (``.json`` or ``.json.gz``).

    Raises:
        OSError: unreadable file; ValueError: not a JSON log.
    """
    log = decode(Path(path).read_bytes())
    if not isinstance(log, dict):
        raise ValueError("a match log is a JSON object")
    return cast(MatchLog, log)


#: A file in a log folder that is not a log: the tournament object ``arena logs download`` writes.
NOT_A_LOG = "tournament.json"
#: Names of JSON Lines files of logs (the tournament downloads: :func:`read_log_lines`).
LINES_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson")
#: Names of log files found in folders: single logs, then JSON Lines files.
LOG_SUFFIXES = (".json", ".json.gz", *LINES_SUFFIXES)


def log_files(paths: Any) -> list[Path]:
    """Every log file under ``paths`` (files or folders): ``*.json`` / ``*.json.gz`` logs and
    ``*.jsonl`` (``.jsonl.gz``, ``.ndjson``) JSON Lines files of logs, sorted per folder,
    except :data:`NOT_A_LOG` files found in folders."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(
                sorted(f for f in p.rglob("*") if f.is_file() and f.name != NOT_A_LOG and f.name.endswith(LOG_SUFFIXES))
            )
        else:
            out.append(p)
    return out


def is_lines_file(path: str | Path) -> bool:
    """True for a JSON Lines file of logs (by its name: :data:`LINES_SUFFIXES`)."""
    return str(path).endswith(LINES_SUFFIXES)


def lines_header_line(tournament: Mapping[str, Any]) -> bytes:
    """The first line of a tournament's JSON Lines download: ``{"tournament": {...}}``
    (the tournament object of the API: its ``commitment``, and ``seed`` and ``salt`` once
    revealed), newline included."""
    return encode({"tournament": tournament}) + b"\n"


def read_log_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The objects of a JSON Lines file of logs (gzip detected by its magic bytes), with
    their line numbers (from 1): the tournament downloads write ``{"tournament": {...}}``
    first (:func:`lines_header_line`), then one ``{"match_id": n, "log": {...}}`` per match;
    a bare log per line is read too. Blank lines are skipped.

    Raises:
        OSError: unreadable file; ValueError: a line that is no JSON object (its number in
        the message).
    """
    path = Path(path)
    with path.open("rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    with opener(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"line {number}: not JSON ({exc})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"line {number}: not a JSON object")
            yield number, obj


def lines_tournament(path: str | Path) -> dict[str, Any] | None:
    """The tournament object of a JSON Lines file's first line (:func:`lines_header_line`),
    or None when it has none (an older download) or cannot be read."""
    try:
        for _number, obj in read_log_lines(path):
            tournament = obj.get("tournament")
            return tournament if isinstance(tournament, dict) else None
    except (OSError, ValueError):
        return None
    return None
