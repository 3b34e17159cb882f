"""The organizer's and the contestant's commands' link to a running API: the ``--api`` and
``--token`` options (env ``ARENA_API_URL``, ``ARENA_TOKEN``), the client acting with the token,
and an API error as one ``Error:`` line (exit status 1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from daifugo_arena.cli.client import ApiClient, ApiError

DEFAULT_API_URL = "http://127.0.0.1:8000"


def api_options(fn: Callable) -> Callable:
    fn = click.option(
        "--token", envvar="ARENA_TOKEN", default=None, show_envvar=True, help="Bearer token of your account."
    )(fn)
    fn = click.option(
        "--api",
        "api_url",
        envvar="ARENA_API_URL",
        default=DEFAULT_API_URL,
        show_default=True,
        show_envvar=True,
        help="Base URL of the Arena API.",
    )(fn)
    return fn


def api_client(api_url: str, token: str | None, *, public_read: bool = False) -> ApiClient:
    """The API client acting with ``token``. ``public_read``: a read the pages allow without
    signing in (a public tournament's status, standings and logs), so no token is needed;
    the API's 401 for a tournament that is not public says to give one (:func:`call`)."""
    if not token and not public_read:
        raise click.UsageError("no token: pass --token or set ARENA_TOKEN")
    try:
        return ApiClient(api_url, token or None)
    except ApiError as exc:
        raise click.BadParameter(str(exc), param_hint="--api") from None


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run an API call; an :class:`ApiError` becomes one ``Error:`` line (exit status 1);
    a 401 to a call made without a token says how to give one."""
    try:
        return fn(*args, **kwargs)
    except ApiError as exc:
        client = getattr(fn, "__self__", None) if not args or not isinstance(args[0], ApiClient) else args[0]
        if exc.status == 401 and isinstance(client, ApiClient) and not client.token:
            raise click.ClickException(f"{exc} (pass --token or set ARENA_TOKEN)") from None
        raise click.ClickException(str(exc)) from None
