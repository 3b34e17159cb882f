"""Child processes of the tests (``tests.children``): in every pytest process (the xdist
workers too) SIGTERM and SIGHUP end the run as Ctrl-C does, so every fixture's finalizer
stops what it started, and whatever is still registered is stopped at exit.

Fixture ``spawn`` -> ``Callable[..., subprocess.Popen]``: ``spawn(cmd, **popen)`` is
:func:`tests.children.spawn` (a process group of its own, parent-death signal); every process
it started is stopped (:func:`tests.children.stop`) at the test's teardown, failed or not."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests import children


def pytest_configure(config: pytest.Config) -> None:
    children.install_signal_handlers()


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen[Any]]]:
    started: list[subprocess.Popen[Any]] = []

    def start(cmd: list[str], **popen: Any) -> subprocess.Popen[Any]:
        started.append(children.spawn(cmd, **popen))
        return started[-1]

    yield start
    for proc in reversed(started):
        children.stop(proc)
