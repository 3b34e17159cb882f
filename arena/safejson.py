"""Parsing untrusted JSON (request bodies, bot health answers) within fixed limits.

The standard ``json`` module accepts what the rest of the stack cannot take: nesting deep
enough to raise ``RecursionError``, integers of thousands of digits (``ValueError`` past 4300
digits, ``OverflowError`` in the database driver far earlier), ``NaN``/``Infinity``, NUL
characters (PostgreSQL refuses them in text) and lone UTF-16 surrogates (``"\\ud800"``, which
no UTF-8 encoder takes). :func:`loads_limited` parses and then walks the value once
(iteratively, no recursion) and raises :class:`JsonLimitError` naming the first offending
place as a dotted path (``tournament.options.rounds``, list items by index: ``rulesets.0``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

#: Deepest nesting of arrays/objects accepted (the top-level value is depth 1).
MAX_DEPTH = 32
#: Most digits of a JSON integer (19 digits cover every 64-bit integer).
MAX_INT_DIGITS = 19
#: Longest string (value or object key), characters.
MAX_STRING_CHARS = 8192


class JsonLimitError(ValueError):
    """The JSON is malformed or outside the limits.

    Attributes:
        path: dotted path of the offending value (``""`` for the document itself).
        reason: what is wrong, e.g. ``"contains a NUL character"``.
    """

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path or '(document)'}: {reason}")


class _BigInt(str):
    """An integer literal with too many digits, kept as text until the walk names its path."""


def _int_parser(max_digits: int) -> Callable[[str], Any]:
    def parse_int(text: str) -> Any:
        if len(text) - (text[0] == "-") > max_digits:
            return _BigInt(text)
        return int(text)

    return parse_int


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _string_problem(s: str, max_string: int) -> str | None:
    if len(s) > max_string:
        return f"string longer than {max_string} characters"
    if "\x00" in s:
        return "contains a NUL character"
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone UTF-16 surrogate (not valid Unicode)"
    return None


#: Where a value sits: None for the document, else (where its container sits, key or index).
_Where = tuple[Any, Any] | None


def _path(where: _Where) -> str:
    """The dotted path of a place (``tournament.options.rounds``; ``""`` for the document)."""
    parts: list[str] = []
    while where is not None:
        where, key = where
        parts.append(str(key))
    return ".".join(reversed(parts))


def loads_limited(
    raw: bytes | str,
    *,
    max_depth: int = MAX_DEPTH,
    max_int_digits: int = MAX_INT_DIGITS,
    max_string: int = MAX_STRING_CHARS,
) -> Any:
    """Parse ``raw`` (UTF-8 bytes or text) as JSON within the limits; return the value.

    Raises:
        JsonLimitError: not JSON, not UTF-8, ``NaN``/``Infinity``, nesting deeper than
            ``max_depth``, an integer of more than ``max_int_digits`` digits, a float that
            overflows to infinity, or a string/key longer than ``max_string`` characters or
            holding NUL or a lone surrogate. ``path`` names the place (module docstring).
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
    except UnicodeDecodeError as exc:
        raise JsonLimitError("", f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = json.loads(text, parse_int=_int_parser(max_int_digits), parse_constant=_refuse_constant)
    except RecursionError:
        raise JsonLimitError("", f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:
        raise JsonLimitError("", f"not valid JSON ({exc})") from None
    _check_value(value, max_depth=max_depth, max_int_digits=max_int_digits, max_string=max_string)
    return value


def _check_value(value: Any, *, max_depth: int, max_int_digits: int, max_string: int) -> None:
    """Walk a parsed value once, iteratively; raise :class:`JsonLimitError` at the first
    place outside the limits (:func:`loads_limited`)."""
    # each item carries where it sits as a chain (parent's chain, key): the dotted path is built
    # only for the one error reported, never per item (a path per item is quadratic in the body)
    stack: list[tuple[Any, _Where, int]] = [(value, None, 1)]
    while stack:
        item, where, depth = stack.pop()
        problem = _scalar_problem(item, max_int_digits, max_string)
        if problem:
            raise JsonLimitError(_path(where), problem)
        if isinstance(item, (dict, list)):
            if depth > max_depth:
                raise JsonLimitError(_path(where), f"nested deeper than {max_depth} levels")
            if isinstance(item, dict):
                for key, child in item.items():
                    problem = _string_problem(key, max_string)
                    if problem:
                        raise JsonLimitError(_path(where) or "(keys)", f"an object key {problem}")
                    stack.append((child, (where, key), depth + 1))
            else:
                for i, child in enumerate(item):
                    stack.append((child, (where, i), depth + 1))


def _scalar_problem(item: Any, max_int_digits: int, max_string: int) -> str | None:
    """What is wrong with a scalar (an oversized integer, a bad string, a non-finite float)."""
    if isinstance(item, _BigInt):
        return f"integer of more than {max_int_digits} digits"
    if isinstance(item, str):
        return _string_problem(item, max_string)
    if isinstance(item, float) and (item != item or item in (float("inf"), float("-inf"))):
        return "number out of range"
    return None
