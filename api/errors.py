"""One JSON error body for every 4xx/5xx: ``{"code", "status", "message", "errors"?}``.

- ``message`` is always present; for 422 it names the fields (``json.url: ...``).
- ``errors`` holds marshmallow-style field errors by location (``{"json": {"name": [...]}}``).
- 405 responses carry the ``Allow`` header (flask-smorest's default handler drops it);
  401 responses carry ``WWW-Authenticate: Bearer``.
"""

from __future__ import annotations

from typing import Any, NoReturn

from flask_smorest import Api
from flask_smorest import abort as smorest_abort
from werkzeug.exceptions import HTTPException, MethodNotAllowed


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


class ArenaApi(Api):
    """flask-smorest ``Api`` with the error body described in the module docstring."""

    def handle_http_exception(self, error: HTTPException):
        payload, code, headers = super().handle_http_exception(error)
        headers = dict(headers or {})
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


def abort(code: int, message: str, **fields: str) -> NoReturn:
    """Stop the request with ``code``; ``fields`` become ``errors.json.<field>`` (422 use)."""
    if fields:
        smorest_abort(code, message=message, errors={"json": {k: [v] for k, v in fields.items()}})
    smorest_abort(code, message=message)
    raise AssertionError("unreachable: flask_smorest.abort raises")


def field_error(field: str, message: str) -> NoReturn:
    """422 naming ``field`` of the JSON body."""
    abort(422, f"invalid request: json.{field}: {message}", **{field: message})
