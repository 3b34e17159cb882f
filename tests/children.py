"""Child processes of a test or a bench, stopped on every exit path (standard library only, so
the benches import it too: ``from tests.children import spawn``).

- :func:`spawn` starts a process in a process group (session) of its own and registers it; on
  Linux, a process started from the main thread also gets SIGTERM if its parent dies, even by
  SIGKILL (``PR_SET_PDEATHSIG``).
- :func:`stop` stops one: SIGTERM to its whole group, a wait, then SIGKILL to the group.
- :func:`run` is ``subprocess.run`` through :func:`spawn`: interrupted or timed out, the
  process and its group get SIGTERM first (a bench stops its services), not SIGKILL alone.
- :func:`on_exit` registers a clean-up function of another kind (``infra/redis.sh stop``...).
- :func:`stop_all` stops every registered process still alive and runs the clean-ups, newest
  first; it runs at interpreter exit (``atexit``).
- :func:`install_signal_handlers` turns SIGTERM and SIGHUP into ``KeyboardInterrupt`` in the
  main thread, so ``finally`` blocks and pytest's fixture finalizers run as on Ctrl-C (a
  second signal stops everything at once and exits, status 128 + N).

``tests/plugins/children.py`` installs the handlers in every pytest process (xdist workers
too) and gives tests the ``spawn`` fixture (processes stopped at the test's teardown).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

#: Seconds a process gets to exit after SIGTERM before its group is SIGKILLed.
STOP_TIMEOUT_S = 20.0
#: Signals :func:`install_signal_handlers` turns into ``KeyboardInterrupt``.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1

_lock = threading.Lock()
_children: dict[int, subprocess.Popen[Any]] = {}
_cleanups: list[Callable[[], object]] = []
_installed = False
_signalled = 0
#: The main thread is in :func:`subprocess.Popen` (a signal then waits: :func:`_on_signal`).
_spawning = False
#: A signal that came while the main thread was spawning: raised once the child is known.
_deferred: int | None = None


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def spawn(cmd: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(cmd, **popen)`` in a session of its own (``start_new_session``:
    a terminal's Ctrl-C does not reach it, :func:`stop` ends its whole group), registered for
    :func:`stop_all`. Started from the main thread on Linux, it gets SIGTERM when this process
    dies (the parent-death signal belongs to the thread that forks: a thread's children would
    get it when the thread ends, so they go without)."""
    global _spawning, _deferred
    popen.setdefault("start_new_session", True)
    main = threading.current_thread() is threading.main_thread()
    if sys.platform == "linux" and main:
        popen.setdefault("preexec_fn", _die_with_parent)
    # an interruption inside Popen (after the fork, before it returns) would leave a child
    # nobody knows of: the signal waits until the child is registered, then stops it
    _spawning, signum = main, None
    try:
        proc = subprocess.Popen(list(cmd), **popen)
        with _lock:
            for pid in [pid for pid, p in _children.items() if p.returncode is not None]:
                del _children[pid]  # stopped by other means and reaped
            _children[proc.pid] = proc
    finally:
        if main:
            _spawning, signum, _deferred = False, _deferred, None
    if signum is not None:
        stop(proc)
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")
    return proc


def _signal_group(proc: subprocess.Popen[Any], signum: int) -> None:
    try:
        os.killpg(proc.pid, signum)
    except (ProcessLookupError, PermissionError):
        # not a group leader (started without a session of its own) or gone
        if proc.poll() is None:
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass


def stop(proc: subprocess.Popen[Any], timeout_s: float = STOP_TIMEOUT_S, signum: int = signal.SIGTERM) -> int:
    """Stop ``proc`` and its process group: ``signum`` (SIGTERM: a warm shutdown), up to
    ``timeout_s`` seconds for it to exit, then SIGKILL; whatever else is left in its group is
    SIGKILLed too. Idempotent; returns its exit status."""
    reaped = proc.returncode is not None
    if not reaped and proc.poll() is None:
        _signal_group(proc, signum)
    return _finish(proc, timeout_s, reaped)


def _finish(proc: subprocess.Popen[Any], timeout_s: float, reaped: bool) -> int:
    """Wait for ``proc`` (SIGKILL after ``timeout_s``), then SIGKILL what is left of its group.
    A process ``reaped`` earlier is left alone: its pid may belong to another one by now."""
    with _lock:
        _children.pop(proc.pid, None)
    if reaped:
        return proc.returncode
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()
    try:  # a pool child or a grandchild still in its group (the group keeps its id meanwhile)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return proc.returncode


def run(
    cmd: Sequence[str],
    *,
    timeout: float | None = None,
    input: str | bytes | None = None,
    capture_output: bool = False,
    **popen: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` through :func:`spawn`: on a timeout (``TimeoutExpired``, raised after
    it), an interruption (Ctrl-C, or SIGTERM turned into ``KeyboardInterrupt``) or any other
    error, the process and its group get SIGTERM first, so a bench's ``finally`` stops its
    services, and SIGKILL only after :data:`STOP_TIMEOUT_S` (``subprocess.run`` SIGKILLs the
    process alone, and whatever it started is left running)."""
    if capture_output:
        popen["stdout"] = popen["stderr"] = subprocess.PIPE
    if input is not None:
        popen["stdin"] = subprocess.PIPE
    proc = spawn(cmd, **popen)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except BaseException:
        stop(proc)
        raise
    with _lock:
        _children.pop(proc.pid, None)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def on_exit(cleanup: Callable[[], object]) -> Callable[[], object]:
    """Run ``cleanup()`` in :func:`stop_all` (after the processes, newest first); returns it."""
    with _lock:
        _cleanups.append(cleanup)
    return cleanup


def forget(cleanup: Callable[[], object]) -> None:
    """Unregister a clean-up of :func:`on_exit` (it ran on the normal path)."""
    with _lock:
        if cleanup in _cleanups:
            _cleanups.remove(cleanup)


def alive() -> list[subprocess.Popen[Any]]:
    """The registered processes still running."""
    with _lock:
        return [p for p in _children.values() if p.poll() is None]


def stop_together(procs: Sequence[subprocess.Popen[Any]], timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Stop ``procs`` as :func:`stop` does, all at once: SIGTERM to every group, then one
    shared wait of at most ``timeout_s`` seconds each, then SIGKILL. Idempotent."""
    reaped = [proc.returncode is not None for proc in procs]
    for proc, done in zip(procs, reaped):
        if not done and proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
    for proc, done in zip(procs, reaped):
        _finish(proc, timeout_s, done)


def stop_all(timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Stop every registered process (:func:`stop_together`), then run the clean-ups newest
    first; errors of a clean-up are printed, not raised."""
    with _lock:
        procs = [p for p in _children.values() if p.returncode is None]
        cleanups = list(reversed(_cleanups))
        _cleanups.clear()
    stop_together(procs, timeout_s)
    for cleanup in cleanups:
        try:
            cleanup()
        except Exception as exc:  # noqa: BLE001 - every clean-up gets its turn
            print(f"children: clean-up {cleanup!r} failed: {exc}", file=sys.stderr)


def _on_signal(signum: int, _frame: object) -> None:
    global _signalled, _deferred
    _signalled += 1
    if _signalled == 1:
        if _spawning:  # raised by spawn once its child is registered
            _deferred = signum
            return
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")
    stop_all(timeout_s=2.0)
    os._exit(128 + signum)


def install_signal_handlers() -> None:
    """SIGTERM and SIGHUP raise ``KeyboardInterrupt`` in the main thread (the first time;
    the next one stops everything and exits at once); :func:`stop_all` runs at exit. Call from
    the main thread; idempotent. A signal ignored at start (``nohup``) stays ignored."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    _installed = True
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _on_signal)
    atexit.register(stop_all)
