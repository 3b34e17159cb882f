"""API responsiveness under slow clients and load (issue 16): ``/healthz`` latency while two
slowloris connections and 100 concurrent clients run against a real ``arena api``.

Starts ``arena api`` (gunicorn, gthread workers, the real settings) on SQLite in a temp folder
and a free port on 127.0.0.1, then for ``--seconds`` (default 20):

* two slowloris clients: each opens a connection and sends one header line every 5 s, never
  finishing its request (and opens a new connection when the server closes it);
* ``--clients`` (default 100) threads, each with its own keep-alive ``httpx.Client``, sending
  ``GET /api/v1/leaderboard?ruleset=million_doubt`` (a database read) ``--rate`` times a
  second each (default 2: 200 requests/s offered in all; ``--rate 0`` sends back to back,
  a flood that measures the queue, not the server's responsiveness);
* one probe sending ``GET /healthz`` every 20 ms on fresh connections, timing each answer.

Prints ``healthz under load: N probes, p50 X ms, p99 Y ms, max Z ms, errors E (goal p99 <
200 ms)`` and the load's throughput. Rate limits are switched off (``ARENA_RATE_LIMITS=0``):
the bench measures the server, not the limiter. Loopback only; bounded in time; stops by
itself.

    python bench/api_bench.py [--seconds 20] [--clients 100] [--rate 2] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests import children  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(base: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("arena api did not become ready")


def slowloris(port: int, stop: threading.Event, interval_s: float = 5.0) -> None:
    """Hold a connection with an unfinished request, one header line every ``interval_s``."""
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                n = 0
                while not stop.wait(interval_s):
                    s.sendall(b"X-Slow-%d: %d\r\n" % (n, n))
                    n += 1
        except OSError:
            stop.wait(0.5)  # closed by the server: come back


def load_client(base: str, stop: threading.Event, counts: list[int], errors: list[int], rate: float) -> None:
    period = 1.0 / rate if rate > 0 else 0.0
    with httpx.Client(base_url=base, timeout=10.0) as c:
        next_at = time.monotonic() + period * (hash(threading.get_ident()) % 1000) / 1000
        while not stop.is_set():
            if period:
                stop.wait(max(0.0, next_at - time.monotonic()))
                next_at += period
            try:
                r = c.get("/api/v1/leaderboard", params={"ruleset": "million_doubt"})
                if r.status_code >= 500:
                    errors[0] += 1
                counts[0] += 1
            except httpx.HTTPError:
                errors[0] += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--rate", type=float, default=2.0, help="requests/s per client (0: back to back)")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="arena-api-bench-") as tmp:
        env = {
            **os.environ,
            "ARENA_DATA_DIR": tmp,
            "ARENA_DATABASE_URL": f"sqlite:///{tmp}/arena.db",
            "ARENA_RATE_LIMITS": "0",
            "ARENA_CELERY_EAGER": "1",
            "ARENA_COOKIE_SECURE": "0",
        }
        children.install_signal_handlers()
        server = children.spawn(
            [sys.executable, "-m", "daifugo_arena.cli", "api", "--port", str(port), "--workers", str(args.workers)],
            env=env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_ready(base)
            stop = threading.Event()
            threads = [threading.Thread(target=slowloris, args=(port, stop), daemon=True) for _ in range(2)]
            counts, errors = [0], [0]
            threads += [
                threading.Thread(target=load_client, args=(base, stop, counts, errors, args.rate), daemon=True)
                for _ in range(args.clients)
            ]
            for t in threads:
                t.start()
            time.sleep(1.0)  # let the load settle
            latencies: list[float] = []
            probe_errors = 0
            # a new connection for every probe (no keep-alive), from one client: building an
            # httpx.Client (its TLS context) costs ~50 ms here and is not the server's time
            probe = httpx.Client(timeout=5.0, limits=httpx.Limits(max_keepalive_connections=0))
            start = time.monotonic()
            end = start + args.seconds
            while time.monotonic() < end:
                t0 = time.perf_counter()
                try:
                    ok = probe.get(base + "/healthz").status_code == 200
                except httpx.HTTPError:
                    ok = False
                latencies.append((time.perf_counter() - t0) * 1000)
                probe_errors += 0 if ok else 1
                time.sleep(0.02)
            elapsed = time.monotonic() - start
            stop.set()
            probe.close()
            latencies.sort()
            p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
            print(
                f"healthz under load: {len(latencies)} probes, p50 {statistics.median(latencies):.1f} ms, "
                f"p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms, errors {probe_errors} (goal p99 < 200 ms)"
            )
            print(
                f"load: {args.clients} clients at {args.rate:g}/s each, {counts[0] / elapsed:.0f} requests/s served, "
                f"{errors[0]} errors; "
                f"2 slowloris connections; {args.workers} gunicorn gthread workers"
            )
        finally:
            children.stop(server, 15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
