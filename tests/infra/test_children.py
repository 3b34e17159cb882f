"""``tests/children.py``: the processes a test or a bench starts are stopped on every exit path.

A driver process (a stand-in for a bench or a pytest worker) installs the handlers, starts a
child that starts a grandchild in its group, and then fails, is sent SIGTERM, or is killed;
each time no process of the child's group is left."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import children
from tests.helpers import wait_until

REPO = Path(__file__).resolve().parents[2]

#: Starts a child (a shell that starts a sleeping grandchild in its group, then waits), prints
#: the child's pid once the grandchild's pid file is there, reads a line, then does what
#: argv[1] says: fail, run a ``finally`` block, or wait for a signal.
DRIVER = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path
    from tests import children
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
    children.install_signal_handlers()
    marker = Path(sys.argv[2])
    child = children.spawn(["bash", "-c", f"sleep 600 & echo $! > {marker}; wait"])
    while not marker.exists() or not marker.read_text().strip():
        time.sleep(0.01)
    print(child.pid, flush=True)
    sys.stdin.readline()  # the test has seen both processes
    if sys.argv[1] == "fail":
        raise SystemExit("a failing bench")
    if sys.argv[1] == "finally":
        try:
            print("inside", flush=True)
            time.sleep(600)
        finally:
            Path(sys.argv[3]).write_text("ran")
    time.sleep(600)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) is not running
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def _driver(tmp_path: Path, how: str) -> tuple[subprocess.Popen[str], int, int]:
    marker, flag = tmp_path / "grandchild.pid", tmp_path / "finally"
    proc = children.spawn(
        [sys.executable, "-c", DRIVER, how, str(marker), str(flag)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    child = int(proc.stdout.readline())
    grandchild = int(marker.read_text())
    assert _alive(child) and _alive(grandchild)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return proc, child, grandchild


@pytest.mark.parametrize("how", ["fail", "sigterm", "sighup", "sigint", "sigkill"])
def test_a_drivers_processes_end_with_it(tmp_path: Path, how: str) -> None:
    proc, child, grandchild = _driver(tmp_path, how)
    try:
        signum = {
            "sigterm": signal.SIGTERM,
            "sighup": signal.SIGHUP,
            "sigint": signal.SIGINT,
            "sigkill": signal.SIGKILL,
        }
        if how in signum:
            proc.send_signal(signum[how])
        proc.wait(60)
        # SIGKILL leaves no chance to clean up: the child gets its parent-death signal (SIGTERM),
        # the grandchild in its group is not reached then
        wait_until(lambda: not _alive(child), "the child stopped")
        if how != "sigkill":
            wait_until(lambda: not _alive(grandchild), "the grandchild stopped")
    finally:
        children.stop(proc)
        if _alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def test_sigterm_runs_finally_blocks(tmp_path: Path) -> None:
    proc, child, grandchild = _driver(tmp_path, "finally")
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "inside\n"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) != 0
        assert (tmp_path / "finally").read_text() == "ran"
        wait_until(lambda: not _alive(child) and not _alive(grandchild), "the child and grandchild stopped")
    finally:
        children.stop(proc)


def test_stop_ends_the_whole_group_and_forgets_it() -> None:
    proc = children.spawn(["bash", "-c", "sleep 600 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    grandchild = int(proc.stdout.readline())
    assert proc in children.alive()
    assert children.stop(proc) == -signal.SIGTERM
    assert proc not in children.alive()
    wait_until(lambda: not _alive(grandchild), "the grandchild stopped")
    assert children.stop(proc) == -signal.SIGTERM  # idempotent


#: Runs (``children.run``) a shell that, once its SIGTERM trap is set, says so in a file and
#: waits; the trap writes ``cleaned`` before it exits.
RUN_DRIVER = textwrap.dedent(
    """
    import sys
    from tests import children
    children.install_signal_handlers()
    ready, cleaned = sys.argv[1], sys.argv[2]
    children.run(["bash", "-c", f"trap 'echo cleaned > {cleaned}; exit 0' TERM; touch {ready}; sleep 600 & wait"])
    """
)


def test_run_interrupted_gives_its_command_sigterm_first(tmp_path: Path) -> None:
    """A bench run through ``children.run`` by a test that is interrupted gets SIGTERM, so its
    ``finally`` blocks stop what it started (``subprocess.run`` would SIGKILL it)."""
    ready, cleaned = tmp_path / "ready", tmp_path / "cleaned"
    proc = children.spawn(
        [sys.executable, "-c", RUN_DRIVER, str(ready), str(cleaned)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        wait_until(ready.exists, "the command's trap set")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) != 0
        assert cleaned.read_text() == "cleaned\n"
    finally:
        children.stop(proc)


SPAWN_DRIVER = textwrap.dedent(
    """
    import os, signal, sys
    from tests import children
    children.install_signal_handlers()
    try:  # the child signals its parent between fork and exec: the parent is inside Popen
        children.spawn(["sleep", sys.argv[1]], preexec_fn=lambda: os.kill(os.getppid(), signal.SIGTERM))
    except KeyboardInterrupt:
        print("interrupted", [p.pid for p in children._children.values() if p.poll() is None])
    """
)


def test_a_signal_inside_popen_leaves_no_child_behind() -> None:
    """SIGTERM while the main thread is inside ``subprocess.Popen`` (forked, not yet returned)
    used to raise there: the child ran on, known to nobody. It now waits until the child is
    registered, which is then stopped, and raises ``KeyboardInterrupt`` from ``spawn``."""
    marker = f"{600 + random.random():.6f}"  # this test's own sleep
    out = children.run(
        [sys.executable, "-c", SPAWN_DRIVER, marker],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.stdout.strip() == "interrupted []", out.stderr[-2000:]
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
    assert left.stdout == "", f"an orphan child: {left.stdout}"
