"""The seats of ``arena play`` played by bots that dial out (``connect`` and ``connect:ID``).

``arena play`` then runs a gateway of its own (:class:`arena.runner.local_gateway.LocalGateway`,
the arena's protocol and authentication) on 127.0.0.1, and each such seat is the bot that
connects to it with that id (``connect`` is ``connect:1``). The bot is any program: started
by ``arena play`` itself (``--run CMD``, once per dial-out bot, in order), or by you in another
terminal with the variables it prints. :class:`DialedSeats` starts the gateway and the
programs, waits for every bot's connection, asks each its health (the name it gives), and at
the end stops the programs and the gateway and says which bot sent none of the protocol's
keep-alive pings.
"""

from __future__ import annotations

import os
import secrets as _secrets
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import click

from arena.runner.local_gateway import DialedPlayer, LocalGateway
from bots_sdk import wire

#: The spec of a seat played by a bot that dials out (``connect`` or ``connect:ID``).
CONNECT = "connect"
#: The port ``arena play`` listens on for bots that dial out when no program is given to run
#: (a fixed one, so that a program started in another terminal keeps its ARENA_GATEWAY_URL).
DEFAULT_PORT = 8765
#: Seconds a program started with ``--run`` has to stop after SIGTERM before SIGKILL.
STOP_S = 5.0
#: Seconds the health question (the bot's name) may take.
HEALTH_S = 10.0
#: Lines of a program's output shown when it stops before it connected.
TAIL_LINES = 20


def dial_id(spec: str) -> int | None:
    """The bot id of a dial-out seat's spec (``connect`` -> 1, ``connect:7`` -> 7), or None for
    any other spec.

    Raises:
        click.BadParameter: ``connect:`` followed by something other than a positive integer.
    """
    if spec == CONNECT:
        return 1
    if not spec.startswith(CONNECT + ":"):
        return None
    tail = spec[len(CONNECT) + 1 :]
    if not (tail.isascii() and tail.isdigit()) or not 1 <= int(tail) <= 2**31 - 1:
        raise click.BadParameter(f"{spec!r}: write connect or connect:ID with ID a positive integer")
    return int(tail)


class _Program:
    """A program started with ``--run``, in a process group of its own, its output in a file."""

    def __init__(self, command: str, env: dict[str, str], log_path: Path):
        self.command = command
        self.log_path = log_path
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise click.BadParameter(f"{command!r}: {exc}", param_hint="--run") from None
        if not argv:
            raise click.BadParameter("an empty command", param_hint="--run")
        with open(log_path, "wb") as out:
            try:
                self.proc = subprocess.Popen(
                    argv,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                raise click.BadParameter(f"{command!r} cannot start: {exc}", param_hint="--run") from None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self) -> str:
        try:
            lines = self.log_path.read_text("utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-TAIL_LINES:])

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after :data:`STOP_S` seconds."""
        for sig, wait_s in ((signal.SIGTERM, STOP_S), (signal.SIGKILL, STOP_S)):
            if self.proc.poll() is not None:
                break
            try:
                os.killpg(self.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                self.proc.wait(wait_s)
            except subprocess.TimeoutExpired:
                continue
        try:  # what it left in its group (a shell's children)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class DialedSeats:
    """The gateway and the programs of the dial-out seats of ``arena play`` (module docstring).

    Args:
        specs: the dial-out specs, each once (``connect``, ``connect:2``...).
        secret: the bots' signing secret (None: a random one, given to the programs and printed).
        host, port: where the gateway listens (port None: :data:`DEFAULT_PORT`, or any free port
            when every bot is a program to run).
        commands: ``--run`` commands, one per spec in order (fewer: the others you start).
        wait_s: seconds to wait for every bot's first connection.
        echo: prints a line for the user.
    """

    def __init__(
        self,
        specs: list[str],
        *,
        secret: str | None,
        host: str,
        port: int | None,
        commands: list[str],
        wait_s: float,
        echo: Callable[[str], None],
    ):
        if len(commands) > len(specs):
            raise click.UsageError(
                f"{len(commands)} --run commands for {len(specs)} dial-out seat(s) ({', '.join(specs)})"
            )
        self.ids = {spec: dial_id(spec) or 0 for spec in specs}
        if len(set(self.ids.values())) < len(self.ids):
            raise click.UsageError(f"two dial-out seats with the same bot id: {', '.join(specs)}")
        self.specs, self.commands, self.wait_s, self.echo = specs, commands, wait_s, echo
        self.secret_given = bool(secret and secret.strip())
        self.secret = secret.strip() if secret and secret.strip() else _secrets.token_hex(32)
        if port is None:
            port = 0 if len(commands) == len(specs) else DEFAULT_PORT
        self.gateway = LocalGateway({i: self.secret for i in self.ids.values()}, host=host, port=port)
        self.programs: dict[str, _Program] = {}
        self.names: dict[str, str] = {}
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._sigterm: Any = None

    def __enter__(self) -> DialedSeats:
        self._catch_sigterm()
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _catch_sigterm(self) -> None:
        """SIGTERM ends ``arena play`` as Ctrl-C does: its programs and gateway are stopped."""
        if threading.current_thread() is not threading.main_thread():
            return

        def stop(signum: int, frame: FrameType | None) -> None:
            raise SystemExit(128 + signum)

        self._sigterm = signal.signal(signal.SIGTERM, stop)

    def _start(self) -> None:
        try:
            self.gateway.start()
        except OSError as exc:
            raise click.UsageError(
                f"the gateway for bots that dial out cannot listen on {self.gateway.host}:{self.gateway.port}: {exc}"
                " (choose another --gateway-port, 0 for any free port)"
            ) from None
        self._folder = tempfile.TemporaryDirectory(prefix="arena-play-")
        for spec, command in zip(self.specs, self.commands):
            env = {
                **os.environ,
                "ARENA_GATEWAY_URL": self.gateway.url,
                "ARENA_BOT_ID": str(self.ids[spec]),
                "ARENA_BOT_SECRET": self.secret,
            }
            self.programs[spec] = _Program(command, env, Path(self._folder.name) / f"bot-{self.ids[spec]}.log")
            self.echo(
                f"{spec}: started {command!r} (ARENA_GATEWAY_URL={self.gateway.url}, ARENA_BOT_ID={self.ids[spec]})"
            )
        for spec in self.specs[len(self.commands) :]:
            secret = "$ARENA_BOT_SECRET" if self.secret_given else self.secret
            self.echo(
                f"{spec}: waiting for your bot to connect; start it with ARENA_GATEWAY_URL={self.gateway.url}"
                f" ARENA_BOT_ID={self.ids[spec]} ARENA_BOT_SECRET={secret}"
            )
        for spec in self.specs:
            self._wait(spec)

    def _wait(self, spec: str) -> None:
        """Wait for the bot of ``spec`` to connect; ask its health (the name it gives).

        Raises:
            click.ClickException: it did not connect in time, or its program stopped first.
        """
        bot_id, program = self.ids[spec], self.programs.get(spec)
        deadline = time.monotonic() + self.wait_s
        while not self.gateway.wait_connected(bot_id, min(0.5, max(0.0, deadline - time.monotonic()))):
            if program is not None and not program.alive():
                raise click.ClickException(
                    f"{spec}: {program.command!r} stopped (exit status {program.proc.returncode}) before it connected"
                    f"{self._refusals(bot_id)}; its last output:\n{program.tail()}"
                )
            if time.monotonic() >= deadline:
                raise click.ClickException(
                    f"{spec}: no connection of bot {bot_id} within {self.wait_s:g} s{self._refusals(bot_id)}"
                    + (f"; the last output of {program.command!r}:\n{program.tail()}" if program is not None else "")
                )
        health = DialedPlayer(self.gateway, bot_id, spec).health(HEALTH_S)
        name = health.action.get("name") if health.action is not None else None
        self.names[spec] = str(name) if isinstance(name, str) else "?"
        self.echo(
            f"{spec}: connected (bot {bot_id}, {name!r})"
            if health.action is not None
            else f"{spec}: connected (bot {bot_id}), but its health answer failed: {health.fault} {health.detail}"
        )

    def _refusals(self, bot_id: int) -> str:
        refused = self.gateway.status(bot_id)["refused"]
        if not refused:
            return ""
        codes = ", ".join(f"{c} {wire.CLOSE_CODES.get(c, '')}".strip() for c in refused)
        return f" (its connections were refused: {codes})"

    def player(self, spec: str) -> DialedPlayer:
        return DialedPlayer(self.gateway, self.ids[spec], spec)

    def warnings(self) -> list[str]:
        """What the bots did that the arena's check warns about: no keep-alive pings."""
        out = []
        for spec in self.specs:
            status = self.gateway.status(self.ids[spec])
            silent = status["silent_s"]
            if silent is not None and silent > (wire.PING_SILENCE_S if status["pings"] else wire.PING_FIRST_S):
                out.append(
                    f"{spec} sent no keep-alive ping in {silent:.0f} s ({status['pings']} in all): the protocol asks"
                    f" for a ping every {wire.PING_INTERVAL_S:g} s on each connection, and the arena's check warns"
                    ' about a bot that sends none (docs/protocol.md, "Pools and reconnection")'
                )
        return out

    def stopped(self) -> list[str]:
        """The programs that stopped by themselves (a crash), with their last output."""
        return [
            f"{spec}: {p.command!r} stopped (exit status {p.proc.returncode}); its last output:\n{p.tail()}"
            for spec, p in self.programs.items()
            if not p.alive()
        ]

    def close(self) -> None:
        for program in self.programs.values():
            program.stop()
        self.gateway.close()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
        if self._sigterm is not None:
            signal.signal(signal.SIGTERM, self._sigterm)
            self._sigterm = None


__all__ = ["CONNECT", "DialedSeats", "dial_id"]
