"""Parsing untrusted JSON within fixed limits: the one strict-JSON reader of the arena.

Two entry points over the same rules (strict UTF-8, RFC 8259 without ``NaN``/``Infinity``,
bounded nesting and integers, text that encodes to UTF-8):

* :func:`loads_limited` (request bodies, bot health answers): raises :class:`JsonLimitError`
  naming the first offending place;
* :func:`parse_answer` (a bot's decision answer, fault ``invalid_json``): also no duplicate
  key and a JSON object at the top; returns ``(object, "")`` or ``(None, reason)``, never
  raises (the body must be UTF-8: strict, no invalid sequences, no byte-order mark, no
  UTF-16/32 autodetection; no number that overflows a double; at most
  :data:`MAX_DEPTH` arrays/objects deep; integers of at most :data:`ANSWER_MAX_INT_DIGITS`
  digits; no lone surrogate in a string or key).

:func:`loads_limited` parses, then walks the value once (iteratively) and names the first
offending place as a dotted path (``tournament.options.rounds``, list items by index:
``rulesets.0``). Why the standard ``json`` module is not enough: docs/operations.md,
"Hostile input and outages".
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from arena.faults import Fault, FaultCode, fault

#: Deepest nesting of arrays/objects accepted (the top-level value is depth 1).
MAX_DEPTH = 32
#: Most digits of a JSON integer (19 digits cover every 64-bit integer).
MAX_INT_DIGITS = 19
#: Longest string (value or object key), characters.
MAX_STRING_CHARS = 8192
#: Most digits of an integer in a bot's answer (an action needs 1; 2**53 has 16).
ANSWER_MAX_INT_DIGITS = 16


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


def encodes_utf8(text: str) -> bool:
    """True unless ``text`` holds a lone UTF-16 surrogate (which no UTF-8 encoder takes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _string_problem(s: str, max_string: int) -> str | None:
    if len(s) > max_string:
        return f"string longer than {max_string} characters"
    if "\x00" in s:
        return "contains a NUL character"
    if not encodes_utf8(s):
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


# -- a bot's decision answer ------------------------------------------------------------------
_TOO_DEEP = fault(FaultCode.TOO_DEEP, n=MAX_DEPTH)


class _Reject(ValueError):
    """Raised inside the JSON decoder's hooks; becomes the ``invalid_json`` reason."""


def _no_constant(name: str) -> Any:
    raise _Reject(f"{name} is not JSON (RFC 8259)")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > ANSWER_MAX_INT_DIGITS:
        raise _Reject(f"an integer has more than {ANSWER_MAX_INT_DIGITS} digits")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Reject("a number is too large for a double")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Reject("an object has a duplicate key")
        out[key] = value
    return out


_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_int=_bounded_int, parse_float=_finite_float
)


def _inspect(value: Any, top: int = 1) -> Fault | None:
    """The reason ``value`` (a decoded answer) is refused by its shape, or None.

    One iterative walk, linear in the size of ``value``: nesting deeper than
    :data:`MAX_DEPTH` arrays/objects (the top-level value is depth ``top``, 1 for a body; 0 for
    a frame wrapping a body) is refused first, then a string or key holding a lone surrogate.
    No recursion, no regular expression: the decoder already bounded the work by the size."""
    surrogate = False
    stack: list[tuple[Any, int]] = [(value, top)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            items: Any = v.values()
            for key in v:
                surrogate = surrogate or not encodes_utf8(key)
        elif isinstance(v, list):
            items = v
        else:
            surrogate = surrogate or (isinstance(v, str) and not encodes_utf8(v))
            continue
        if depth > MAX_DEPTH:
            return _TOO_DEEP
        stack.extend((child, depth + 1) for child in items)
    return fault(FaultCode.LONE_SURROGATE) if surrogate else None


def parse_answer(raw: bytes, *, wrapped: bool = False) -> tuple[dict[str, Any] | None, Fault | None]:
    """Parse a bot's answer body (module docstring; :mod:`arena.runner.answers`, step 1), or
    with ``wrapped`` a WebSocket answer frame around it (``{"id", "body"}``: the frame's own
    level does not count towards :data:`MAX_DEPTH`, so a body is held to the same bound as
    over HTTP).

    Returns:
        ``(object, None)``, or ``(None, reason)``: the reason is a fault code with
        parameters (:mod:`arena.faults`) that never quotes the body.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, fault(FaultCode.NOT_UTF8, n=e.start)
    try:
        value = _DECODER.decode(text)
    except _Reject as e:
        return None, fault(FaultCode.NOT_STRICT_JSON, why=str(e))
    except json.JSONDecodeError as e:
        return None, fault(FaultCode.NOT_JSON, why=e.msg, line=e.lineno, col=e.colno)
    except RecursionError:  # the C decoder's own bound on nesting (the recursion limit)
        return None, _TOO_DEEP
    except (ValueError, MemoryError) as e:  # belt and braces: never escapes
        return None, fault(FaultCode.NOT_JSON_ERROR, exc=type(e).__name__)
    why = _inspect(value, 0 if wrapped else 1)
    if why is not None:
        return None, why
    if not isinstance(value, dict):
        return None, fault(FaultCode.ANSWER_NOT_OBJECT)
    return value, None


def lenient_id(msg: str) -> str | None:
    """The ``id`` of a frame the strict reader (:func:`parse_answer`) refused,
    read leniently (``NaN``, a duplicate key, a long integer, deep nesting, a lone surrogate
    pass), or None: not a JSON object with a string id even so."""
    try:
        obj = json.loads(msg)
    except (ValueError, RecursionError):
        return None
    rid = obj.get("id") if isinstance(obj, dict) else None
    return rid if isinstance(rid, str) else None
