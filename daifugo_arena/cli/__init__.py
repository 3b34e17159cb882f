"""The ``arena`` command line.

Subcommands live in their owners' modules and are imported only when used, so a module
that is missing or broken disables its own command and nothing else. To add one, write a
click command or group in your module and add a line to :data:`COMMANDS`::

    COMMANDS = {
        "db": "arena.db_cli:db",          # name -> "module:attribute"
    }

Light install: without the ``server`` extra (``pip install daifugo-arena``), the modules of
the service's commands fail to import one of :data:`SERVER_MODULES`; their stand-ins still
appear in ``arena --help`` and say which extra to install (exit status 1)::

    Error: 'arena worker' needs the server extra: pip install 'daifugo-arena[server]'

Errors: a command raises :class:`click.ClickException` (or any other exception); the user
sees one line ``Error: <message>`` and exit status 1, never a traceback. Set
``ARENA_DEBUG=1`` to get the traceback instead.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from arena import __version__
from arena.config import Settings

#: Lazily loaded subcommands: command name -> "module:attribute" (a click.Command or Group).
COMMANDS: dict[str, str] = {
    "play": "daifugo_arena.cli.play:play",
    "bots": "daifugo_arena.cli.bots:bots",  # serve (daifugo_arena.cli.play) + register, list, show
    "logs": "daifugo_arena.cli.bots:logs",  # verify (daifugo_arena.cli.play) + download
    "api": "daifugo_arena.cli.service:api",
    "db": "daifugo_arena.cli.service:db",
    "accounts": "daifugo_arena.cli.service:accounts",
    "secrets": "daifugo_arena.cli.service:secrets_group",
    "worker": "daifugo_arena.cli.worker:worker",
    "beat": "daifugo_arena.cli.worker:beat",
    "tournament": "daifugo_arena.cli.tournament:tournament",
    "ladder": "daifugo_arena.cli.ladder:ladder",
    "leaderboard": "daifugo_arena.cli.tournament:leaderboard",
    "demo": "daifugo_arena.cli.demo:demo",
    "gateway": "daifugo_arena.cli.gateway:gateway",
}

#: Top-level modules of the ``server`` extra's distributions (pyproject.toml) -> that extra:
#: a command whose module fails to import one of them names the extra to install.
SERVER_MODULES: dict[str, str] = dict.fromkeys(
    (
        "alembic",
        "apispec",
        "celery",
        "choix",
        "cryptography",
        "flask",
        "flask_babel",
        "flask_limiter",
        "flask_smorest",
        "gunicorn",
        "kombu",
        "marshmallow",
        "openskill",
        "psycopg",
        "redis",
        "scipy",
        "sqlalchemy",
        "swagger_ui_bundle",
    ),
    "server",
)
#: The distribution name of ``pip install``.
DISTRIBUTION = "daifugo-arena"


def missing_extra(exc: BaseException) -> str | None:
    """The extra whose library ``exc`` (a failed import) lacks, or None when it is another error."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    return SERVER_MODULES.get(exc.name.partition(".")[0])


def _debug() -> bool:
    return os.environ.get("ARENA_DEBUG", "").strip().lower() in {"1", "true", "yes", "on"}


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


class LazyGroup(click.Group):
    """A click group that also serves the commands named in a ``{name: "module:attr"}`` table."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy if lazy is not None else {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands:
            return self.commands[name]
        if name in self.lazy:
            return self._load(name)
        return None

    def _load(self, name: str) -> click.Command:
        target = self.lazy[name]
        module_name, _, attr = target.partition(":")
        try:
            cmd = getattr(importlib.import_module(module_name), attr)
        except Exception as exc:  # ImportError, AttributeError, or an error in the module
            if _debug():
                raise
            return _unavailable(name, target, exc)
        if not isinstance(cmd, click.Command):
            return _unavailable(name, target, TypeError(f"{target} is not a click command"))
        return cmd

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit):
            raise
        except KeyboardInterrupt:
            raise click.exceptions.Abort() from None
        except Exception as exc:
            if _debug():
                raise
            extra = missing_extra(exc)  # a light command that reached a library of an extra
            if extra is not None:
                name = f"arena {ctx.invoked_subcommand}" if ctx.invoked_subcommand else "arena"
                raise click.ClickException(f"'{name}' needs the {extra} extra: {_install(extra)}") from exc
            raise click.ClickException(_one_line(exc)) from exc


def _unavailable(name: str, target: str, exc: BaseException) -> click.Command:
    """A stand-in command that explains why ``name`` cannot be loaded: the extra to install when
    a library of an extra is missing (:func:`missing_extra`), else the error itself."""
    extra = missing_extra(exc)
    if extra is not None:
        return _needs_extra(name, extra)
    reason = _one_line(exc)
    return _stand_in(name, f"(unavailable: {reason})", f"command '{name}' is unavailable ({target}): {reason}")


def _install(extra: str) -> str:
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def _needs_extra(name: str, extra: str) -> click.Command:
    install = _install(extra)
    return _stand_in(
        name, f"(needs the {extra} extra: {install})", f"'arena {name}' needs the {extra} extra: {install}"
    )


def _stand_in(name: str, help_text: str, error: str) -> click.Command:
    """A command ``name`` listed with ``help_text`` that takes any arguments and fails with ``error``."""

    @click.command(
        name,
        help=help_text,
        short_help=help_text,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=False,
    )
    def cmd() -> None:
        raise click.ClickException(error)

    return cmd


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Daifugo Arena: play, serve and verify Daifugo-family card-game bots locally (play, bots,
    logs); run the tournament service (api, worker, db..., with the server extra)."""


@main.command()
def version() -> None:
    """Print the installed daifugo-arena version."""
    click.echo(__version__)


@main.command("config")
def show_config() -> None:
    """Print the effective settings (from ARENA_* environment variables)."""

    settings = Settings.from_env()
    for field, value in vars(settings).items():
        click.echo(f"{field} = {value}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


def parse_options_json(text: str | None) -> dict:
    """The ``--options`` JSON object of a command (rule-set options); ``{}`` when absent.

    Raises:
        click.BadParameter: not JSON, or not an object (names ``--options``).
    """
    import json

    if not text:
        return {}
    try:
        options = json.loads(text)
    except ValueError as e:
        raise click.BadParameter(f"not JSON: {e}", param_hint="--options") from None
    if not isinstance(options, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--options")
    return options
