"""Per-client request rate limits (Flask-Limiter), answered 429 with ``Retry-After``.

================================= ======================== =================================
what                              limit per client address  why
================================= ======================== =================================
``POST /api/v1/accounts``         :data:`SIGNUP_LIMIT`      sign-up is public
``POST /api/v1/bots/{id}/check``  :data:`CHECK_LIMIT`       a check plays games on a worker
every other write (POST, PATCH,   :data:`WRITE_LIMIT`       per endpoint
PUT, DELETE) under ``/api/``
the forms doing these (``POST``   the same                  they run the same use cases
``/ui/signup``, ``/ui/bots``,                               (:data:`UI_FORM_LIMITS`)
``/ui/bots/{id}/check``, ...)
================================= ======================== =================================

Reads are not limited (they are cheap; the reverse proxy and gunicorn's threads keep them
flowing). Counters live in Redis at ``ARENA_BROKER_URL`` (fixed windows, shared by every API
process), in memory in eager mode; when Redis cannot be reached the counters fall back to
memory (per process) instead of failing requests. The client address is the peer address,
or, behind ``ARENA_PROXY_HOPS`` trusted proxies (nginx in docker-compose), the address they
put in ``X-Forwarded-For`` (werkzeug ``ProxyFix``). ``ARENA_RATE_LIMITS=0`` turns the limits
off (tests that are not about them).
"""

from __future__ import annotations

from typing import Any, cast

from flask import Flask, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from werkzeug.middleware.proxy_fix import ProxyFix

from arena.config import Settings

#: Sign-ups per client address.
SIGNUP_LIMIT = "5 per minute;30 per hour"
#: Bot checks started per client address.
CHECK_LIMIT = "6 per minute"
#: Writes per client address and endpoint.
WRITE_LIMIT = "120 per minute"

_WRITES = ("POST", "PUT", "PATCH", "DELETE")
#: The ``/ui`` form endpoints (``POST``) and their limits: those of the API endpoint each runs.
UI_FORM_LIMITS = (
    ("ui.signup", SIGNUP_LIMIT),
    ("ui.bot_check", CHECK_LIMIT),
    ("ui.bots", WRITE_LIMIT),
    ("ui.bot_secret", WRITE_LIMIT),
    ("ui.tournament_new", WRITE_LIMIT),
    ("ui.tournament_action", WRITE_LIMIT),
)


def _not_a_write() -> bool:
    return request.method not in _WRITES or not request.path.startswith("/api/")


def init_rate_limits(app: Flask, settings: Settings) -> Limiter:
    """Install the limits of the module docstring on ``app`` (after its blueprints)."""
    if settings.proxy_hops:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=settings.proxy_hops)  # type: ignore[method-assign]
    storage = "memory://" if settings.celery_eager else settings.broker_url
    limiter = Limiter(
        get_remote_address,
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
    for endpoint, limit in (("accounts.Accounts", SIGNUP_LIMIT), ("bots.BotCheckLatest", CHECK_LIMIT), *UI_FORM_LIMITS):
        app.view_functions[endpoint] = cast(Any, limiter.limit(limit, methods=["POST"])(app.view_functions[endpoint]))
    app.extensions["arena-limiter"] = limiter  # the limit wrappers hold it weakly only
    return limiter
