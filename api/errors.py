"""One JSON error body for every 4xx/5xx: ``{"code", "status", "message", "errors"?, "details"?}``.

- ``message`` is always present; for 422 it names the fields (``json.url: ...``).
- ``errors`` holds marshmallow-style field errors by location (``{"json": {"name": [...]}}``).
- 405 responses carry the ``Allow`` header; 401 responses carry ``WWW-Authenticate: Bearer``.

Input guard (:func:`install_guards`, before any view, :func:`arena.safejson.loads_limited`):
malformed JSON or nesting deeper than :data:`~arena.safejson.MAX_DEPTH` is a 400; an integer
over 19 digits, a string over :data:`~arena.safejson.MAX_STRING_CHARS` characters or holding
NUL or a lone surrogate is a 422 naming the field (``errors.json.<path>``, and likewise
``errors.query.<name>``, ``errors.form.<name>``, at most :data:`MAX_QUERY_CHARS` characters).
Database down (``OperationalError``/``InterfaceError``): 503 with ``Retry-After``
(:data:`DB_RETRY_AFTER_S`), the HTML error page under ``/ui``; a ``DataError`` is a 422.

:func:`refusal` maps the core's typed errors (:mod:`arena.usecases`) to their HTTP answer, for
the REST views (:func:`install_core_errors`) and the forms (:mod:`api.ui.forms`):

=========================================== ====== ==========================================
error                                       status extra
=========================================== ====== ==========================================
:class:`arena.lifecycle.NotFound`           404
:class:`arena.usecases.BotCheckRunning`     409    ``Location``: the running check
:class:`arena.usecases.EntrantsOffline`     409    ``details``: ``offline``, ``waiting_until``
:class:`arena.lifecycle.Conflict`           409
:class:`arena.accounts.NameTaken`           409    ``errors.json.name: ["taken"]``
:class:`arena.lifecycle.TooManyChecks`      429    ``Retry-After``
:class:`arena.lifecycle.tables.TooManyTables` 429  ``Retry-After``
:class:`arena.usecases.Forbidden`           403
:class:`arena.usecases.InvalidField`        422    ``errors.json.<field>``
:class:`arena.usecases.Unavailable`         503    ``Retry-After`` when it says one
=========================================== ====== ==========================================

Encryption key: a request that needs a bot's signing secret while this server's
``ARENA_ENCRYPTION_KEYS`` cannot decrypt (or encrypt) it (wrong, missing, malformed:
:class:`arena.crypto.EncryptionKeyError`) is a 503 with the JSON body above, its
``message`` naming the key problem, and ``Retry-After``; nothing is changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NoReturn

import marshmallow as ma
from flask import Flask, jsonify, render_template, request, url_for
from flask_smorest import Api
from flask_smorest import abort as smorest_abort
from flask_smorest.error_handler import ErrorSchema
from sqlalchemy.exc import DataError, InterfaceError, OperationalError, StatementError
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from arena import lifecycle
from arena.accounts import NameTaken
from arena.crypto import EncryptionKeyError
from arena.lifecycle.tables import TooManyTables
from arena.safejson import JsonLimitError, loads_limited
from arena.usecases import BotCheckRunning, EntrantsOffline, Forbidden, InvalidField, Unavailable

#: Longest query-string or form value, characters.
MAX_QUERY_CHARS = 2048
#: ``Retry-After`` of the 503 answered while the database is unreachable, seconds.
DB_RETRY_AFTER_S = 5


def _flatten(errors: Any, prefix: str = "") -> list[str]:
    out: list[str] = []
    if isinstance(errors, dict):
        for key, value in errors.items():
            out += _flatten(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(errors, (list, tuple)):
        if all(isinstance(e, str) for e in errors):
            out.append(f"{prefix}: {' '.join(errors)}" if prefix else " ".join(errors))
        else:
            for e in errors:
                out += _flatten(e, prefix)
    else:
        out.append(f"{prefix}: {errors}" if prefix else str(errors))
    return out


class ArenaErrorSchema(ErrorSchema):
    """The error body (module docstring): flask-smorest's, and ``details``."""

    details = ma.fields.Dict(
        metadata={"description": "what the refusal is about (409 of a start: offline, waiting_until)"}
    )


class ArenaApi(Api):
    """flask-smorest ``Api`` with the error body described in the module docstring."""

    ERROR_SCHEMA = ArenaErrorSchema

    def handle_http_exception(self, error: HTTPException):
        payload, code, headers = super().handle_http_exception(error)
        headers = dict(headers or {})
        details = (getattr(error, "data", None) or {}).get("details")
        if isinstance(details, dict):
            payload["details"] = details
        if "message" not in payload:
            if "errors" in payload:
                payload["message"] = "invalid request: " + "; ".join(_flatten(payload["errors"]))
            else:
                payload["message"] = error.description or error.name
        if isinstance(error, MethodNotAllowed) and error.valid_methods:
            headers["Allow"] = ", ".join(sorted(error.valid_methods))
        if code == 401:
            headers.setdefault("WWW-Authenticate", 'Bearer realm="arena"')
        return payload, code, headers


def abort(code: int, message: str, *, headers: dict[str, str] | None = None, **fields: str) -> NoReturn:
    """Stop the request with ``code`` (and response ``headers``); ``fields`` become
    ``errors.json.<field>`` (422 use)."""
    extra: dict[str, Any] = {"headers": headers} if headers else {}
    if fields:
        smorest_abort(code, message=message, errors={"json": {k: [v] for k, v in fields.items()}}, **extra)
    smorest_abort(code, message=message, **extra)
    raise AssertionError("unreachable: flask_smorest.abort raises")


@dataclass(frozen=True)
class Refusal:
    """An HTTP refusal: ``status``, the body's ``message`` and ``errors``
    (``{"json": {field: [message]}}`` or None), the response ``headers`` and ``details``
    (the body's ``details``: what the refusal is about, e.g. the offline entrants)."""

    status: int
    message: str
    errors: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] | None = None

    def field_errors(self) -> dict[str, Any]:
        """The body's ``errors.json`` (``{}`` if none)."""
        return dict((self.errors or {}).get("json") or {})

    def abort(self) -> NoReturn:
        """Stop the request with this refusal (the JSON body of the module docstring)."""
        extra: dict[str, Any] = {"headers": self.headers} if self.headers else {}
        if self.errors is not None:
            extra["errors"] = self.errors
        if self.details is not None:
            extra["details"] = self.details
        smorest_abort(self.status, message=self.message, **extra)
        raise AssertionError("unreachable: flask_smorest.abort raises")


def _fields(**fields: str) -> dict[str, Any]:
    return {"json": {k: [v] for k, v in fields.items()}}


def refusal(exc: Exception) -> Refusal | None:
    """The HTTP answer to a core error (module docstring), or None for any other exception.

    A :class:`~arena.usecases.BotCheckRunning` needs a request context (its ``Location``)."""
    if isinstance(exc, lifecycle.NotFound):
        return Refusal(404, str(exc))
    if isinstance(exc, BotCheckRunning):
        location = url_for("bots.BotCheckById", bot_id=exc.bot_id, check_id=exc.check_id)
        return Refusal(409, str(exc), headers={"Location": location})
    if isinstance(exc, EntrantsOffline):
        until = exc.waiting_until.isoformat() if exc.waiting_until is not None else None
        details = {"offline": [a.to_dict() for a in exc.offline], "waiting_until": until}
        return Refusal(409, str(exc), details=details)
    if isinstance(exc, lifecycle.Conflict):
        return Refusal(409, str(exc))
    if isinstance(exc, NameTaken):
        return Refusal(409, f"account name {exc.args[0]!r} is taken", _fields(name="taken"))
    if isinstance(exc, (lifecycle.TooManyChecks, TooManyTables)):
        return Refusal(429, str(exc), headers={"Retry-After": str(exc.retry_after_s)})
    if isinstance(exc, Forbidden):
        return Refusal(403, str(exc))
    if isinstance(exc, InvalidField):
        return Refusal(422, f"invalid request: json.{exc.field}: {exc}", {"json": {exc.field: [str(exc)]}})
    if isinstance(exc, Unavailable):
        headers = {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s is not None else {}
        return Refusal(503, str(exc), headers=headers)
    return None


#: The core errors :func:`refusal` maps (what :func:`install_core_errors` answers).
CORE_ERRORS: tuple[type[Exception], ...] = (
    lifecycle.LifecycleError,
    NameTaken,
    Forbidden,
    InvalidField,
    Unavailable,
)


def install_core_errors(app: Flask, api: ArenaApi) -> None:
    """Answer a core error escaping a view with its :func:`refusal` as the JSON error body."""

    def handle(exc: Exception):
        answer = refusal(exc)
        if answer is None:
            raise exc
        try:
            answer.abort()
        except HTTPException as http:
            return api.handle_http_exception(http)

    for cls in CORE_ERRORS:
        app.register_error_handler(cls, handle)


def load_json(schema: ma.Schema, body: Any) -> Any:
    """What a REST view gets from ``body`` sent as its JSON (the form's use): the input
    guard (:func:`check_request_input`), then ``schema``'s validation.

    Raises:
        RefusalError: the 400/422 the REST API answers to that body.
    """
    try:
        value = loads_limited(json.dumps(body))
    except JsonLimitError as exc:
        raise RefusalError(_json_limit_refusal(exc)) from None
    try:
        return schema.load(value)
    except ma.ValidationError as exc:
        errors = {"json": exc.messages}
        raise RefusalError(Refusal(422, "invalid request: " + "; ".join(_flatten(errors)), errors)) from None


class RefusalError(Exception):
    """Carries a :class:`Refusal` (``refusal``) out of :func:`load_json`."""

    def __init__(self, answer: Refusal) -> None:
        super().__init__(answer.message)
        self.refusal = answer


def _json_limit_refusal(exc: JsonLimitError) -> Refusal:
    code = 400 if not exc.path or exc.reason.startswith("nested") else 422
    field_name = exc.path or "(document)"
    return Refusal(code, f"invalid request: json.{field_name}: {exc.reason}", {"json": {field_name: [exc.reason]}})


def _value_problem(value: str, limit: int) -> str | None:
    if len(value) > limit:
        return f"longer than {limit} characters"
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone UTF-16 surrogate (not valid Unicode)"
    return None


def _refuse(code: int, location: str, path: str, reason: str) -> None:
    field = path or "(document)"
    smorest_abort(code, message=f"invalid request: {location}.{field}: {reason}", errors={location: {field: [reason]}})


def _is_json(mimetype: str) -> bool:
    return mimetype == "application/json" or (mimetype.startswith("application/") and mimetype.endswith("+json"))


def check_request_input() -> None:
    """The input guard of the module docstring for the current request (aborts 400/422)."""
    for location, values in (
        ("query", request.args),
        (
            "form",
            request.form if request.mimetype in ("application/x-www-form-urlencoded", "multipart/form-data") else None,
        ),
    ):
        if not values:
            continue
        for key, value in values.items(multi=True):
            problem = _value_problem(key, MAX_QUERY_CHARS) or _value_problem(value, MAX_QUERY_CHARS)
            if problem:
                _refuse(422, location, key if _value_problem(key, MAX_QUERY_CHARS) is None else "(name)", problem)
    if _is_json(request.mimetype):
        raw = request.get_data(cache=True)
        if not raw:
            return
        try:
            loads_limited(raw)
        except JsonLimitError as exc:
            _json_limit_refusal(exc).abort()


def _unavailable(message: str, retry_after_s: int):
    """A 503 with ``message`` and ``Retry-After``: the error page under /ui, else JSON."""
    headers = {"Retry-After": str(retry_after_s)}
    if request.path.startswith("/ui/") or request.path == "/ui":
        return render_template("error.html", code=503, name="Service Unavailable", message=message), 503, headers
    return jsonify(code=503, status="Service Unavailable", message=message), 503, headers


def _service_unavailable(exc: Exception):
    return _unavailable(f"database unavailable ({type(exc).__name__}); try again later", DB_RETRY_AFTER_S)


#: ``Retry-After`` of the 503 answered while the encryption key is wrong, seconds.
KEY_RETRY_AFTER_S = 60


def _key_unavailable(exc: EncryptionKeyError):
    return _unavailable(
        f"{exc}, on this API server: an operator must fix its configuration; try again later", KEY_RETRY_AFTER_S
    )


def _statement_error(exc: StatementError):
    # a value SQLAlchemy could not bind: the encryption of a secret with a malformed key
    if isinstance(exc.orig, EncryptionKeyError):
        return _key_unavailable(exc.orig)
    raise exc


def _data_error(exc: DataError):
    return jsonify(
        code=422,
        status="Unprocessable Entity",
        message="invalid request: a value is out of the range the database accepts",
    ), 422


def install_guards(app: Flask) -> None:
    """Register the input guard and the database error handlers (module docstring) on ``app``."""
    app.before_request(check_request_input)
    app.register_error_handler(OperationalError, _service_unavailable)
    app.register_error_handler(InterfaceError, _service_unavailable)
    app.register_error_handler(DataError, _data_error)
    app.register_error_handler(EncryptionKeyError, _key_unavailable)
    app.register_error_handler(StatementError, _statement_error)
