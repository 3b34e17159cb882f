"""The match-log format and its one codec.

A match log is a JSON object (``"format": "daifugo-arena-match"``, ``"version": 1``; its
fields are listed in docs/protocol.md and built by :func:`arena.runner.match.run_match`).
Everywhere a log is stored or sent (the database, ``arena play --out``, the API's downloads)
it is the bytes of :func:`encode`: strict JSON (RFC 8259: no ``NaN`` or ``Infinity``) in
UTF-8, compact separators, keys in the order they were built. Compressed copies (the
``match_logs`` table, ``*.json.gz`` files) are gzip of those bytes with ``mtime=0``, so the
same log always compresses to the same bytes.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: ``format`` field of every match log.
LOG_FORMAT = "daifugo-arena-match"
#: ``version`` field of the logs this code writes.
LOG_VERSION = 1
#: gzip level of stored logs.
COMPRESS_LEVEL = 6


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


def read_log(path: str | Path) -> dict[str, Any]:
    """Read a match log written by :func:`write_log` (``.json`` or ``.json.gz``).

    Raises:
        OSError: unreadable file; ValueError: not a JSON log.
    """
    log = decode(Path(path).read_bytes())
    if not isinstance(log, dict):
        raise ValueError("a match log is a JSON object")
    return log


#: A file in a log folder that is not a log: the tournament object ``arena logs download`` writes.
NOT_A_LOG = "tournament.json"


def log_files(paths: Any) -> list[Path]:
    """Every ``*.json`` / ``*.json.gz`` file under ``paths`` (files or folders), sorted per
    folder, except :data:`NOT_A_LOG` files found in folders."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(
                sorted(
                    f
                    for f in p.rglob("*")
                    if f.is_file() and f.name != NOT_A_LOG and f.name.endswith((".json", ".json.gz"))
                )
            )
        else:
            out.append(p)
    return out
