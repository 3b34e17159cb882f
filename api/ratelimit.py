"""Per-client request rate limits (Flask-Limiter), answered 429 with ``Retry-After``.

================================= ======================== =================================
what                              limit per client address  why
================================= ======================== =================================
``POST /api/v1/accounts``         :data:`SIGNUP_LIMIT`      sign-up is public
``POST /api/v1/bots/{id}/check``  :data:`CHECK_LIMIT`       a check plays games on a worker
``POST /api/v1/tables``           :data:`TABLE_LIMIT`       a table holds a worker thread
every other write (POST, PATCH,   :data:`WRITE_LIMIT`       per endpoint
PUT, DELETE) under ``/api/``
the forms doing these (``POST``   the same, one count with  they run the same use cases
``/ui/signup``, ``/ui/bots``,     the API endpoint          (:data:`UI_FORM_LIMITS`)
``/ui/bots/{id}/check``, ...)
================================= ======================== =================================

A person's answers at a table (``POST /api/v1/tables/{id}/answer``, ``POST
/ui/tables/{id}/answer``) are not limited per address (a class behind one address answers
together): only the request the person is asked now takes them, a few tries each
(:data:`arena.tables.MAX_TRIES`). Reads are not limited (they are cheap; the reverse proxy
and gunicorn's threads keep them flowing). Counters live in Redis at ``ARENA_BROKER_URL``
(fixed windows, shared by every API process), in memory in eager mode; when Redis cannot be
reached the counters fall back to memory (per process) instead of failing requests. The client
is :func:`client` of the request: the peer address, or, behind ``ARENA_PROXY_HOPS`` trusted
proxies (nginx in docker-compose), the address they put in ``X-Forwarded-For`` (werkzeug
``ProxyFix``), counted as the arena counts one client everywhere
(:func:`arena.clients.client_key`: an IPv6 /64 is one client). ``ARENA_RATE_LIMITS=0`` turns
the limits off (tests that are not about them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from flask import Flask, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from werkzeug.middleware.proxy_fix import ProxyFix

from arena.clients import client_key
from arena.config import Settings

#: Sign-ups per client address.
SIGNUP_LIMIT = "5 per minute;30 per hour"
#: Bot checks started per client address.
CHECK_LIMIT = "6 per minute"
#: Tables opened per client address.
TABLE_LIMIT = "6 per minute"
#: Endpoints left out of every limit: a person's answers at a table (module docstring).
UNLIMITED = ("tables.TableAnswer", "ui.table_answer")
#: Writes per client address and endpoint.
WRITE_LIMIT = "120 per minute"

_WRITES = ("POST", "PUT", "PATCH", "DELETE")
#: The ``/ui`` form endpoints (``POST``), the API endpoint each runs and its limit: a form and
#: its API endpoint count against one limit (``{action}``: the form's action, capitalized).
UI_FORM_LIMITS = (
    ("ui.signup", "accounts.Accounts", SIGNUP_LIMIT),
    ("ui.bot_check", "bots.BotCheckLatest", CHECK_LIMIT),
    ("ui.bots", "bots.Bots", WRITE_LIMIT),
    ("ui.bot_secret", "bots.BotSecret", WRITE_LIMIT),
    ("ui.tournament_new", "tournaments.Tournaments", WRITE_LIMIT),
    ("ui.play", "tables.Tables", TABLE_LIMIT),
    ("ui.tournament_action", "tournaments.Tournament{action}", WRITE_LIMIT),
)
#: The actions of ``ui.tournament_action``.
_ACTIONS = ("start", "cancel", "resume", "retry")


def client() -> str:
    """The client of the request being served (:func:`arena.clients.client_key` of its
    address, after ``ProxyFix``): the key of every limit here and of the check queue's order."""
    return client_key(get_remote_address())


def _not_a_write() -> bool:
    return request.method not in _WRITES or not request.path.startswith("/api/")


def _form_scope(api_endpoint: str) -> Callable[[str], str]:
    """The count of a form: that of ``api_endpoint`` (its ``{action}`` from the form's URL; an
    unknown action, a 404, counts as one action of its own)."""

    def scope(_endpoint: str) -> str:
        action = (request.view_args or {}).get("action")
        return api_endpoint.format(action=action.capitalize() if action in _ACTIONS else "")

    return scope


def init_rate_limits(app: Flask, settings: Settings) -> Limiter:
    """Install the limits of the module docstring on ``app`` (after its blueprints)."""
    if settings.proxy_hops:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=settings.proxy_hops)  # type: ignore[method-assign]
    storage = "memory://" if settings.celery_eager else settings.broker_url
    limiter = Limiter(
        client,
        app=app,
        storage_uri=storage,
        key_prefix=settings.rate_limit_prefix,
        strategy="fixed-window",
        headers_enabled=True,
        enabled=settings.rate_limits,
        default_limits=[WRITE_LIMIT],
        default_limits_exempt_when=_not_a_write,
        in_memory_fallback_enabled=True,
        swallow_errors=True,
        storage_options={"socket_connect_timeout": 1, "socket_timeout": 1},
    )
    for endpoint, limit in (
        ("accounts.Accounts", SIGNUP_LIMIT),
        ("bots.BotCheckLatest", CHECK_LIMIT),
        ("tables.Tables", TABLE_LIMIT),
    ):
        _wrap(app, endpoint, limiter.limit(limit, methods=["POST"]))
    for endpoint in UNLIMITED:
        if endpoint in app.view_functions:
            _wrap(app, endpoint, limiter.exempt)
    # An endpoint's own limit (default or decorated) counts under its endpoint name; a form's
    # limit shared under that name is the same count.
    for form, api_endpoint, limit in UI_FORM_LIMITS:
        _wrap(app, form, limiter.shared_limit(limit, scope=_form_scope(api_endpoint), methods=["POST"]))
    app.extensions["arena-limiter"] = limiter  # the limit wrappers hold it weakly only
    return limiter


def _wrap(app: Flask, endpoint: str, limit: Any) -> None:
    app.view_functions[endpoint] = cast(Any, limit(app.view_functions[endpoint]))
