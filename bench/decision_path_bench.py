"""Where the arena's time per decision goes, part by part (issue 41, point 6).

    .venv/bin/python bench/decision_path_bench.py [--blocks N]

Starts a throwaway Redis (``infra/redis.sh`` on a free port) and the greedy sample bot in a
process of its own (the SDK's waitress server on 127.0.0.1, signatures checked), then times,
from this process, one decision request sent each way below, the ways taking turns by blocks
of 100 requests (``--blocks`` rounds; the machine's drift weighs on all alike). The requests
are real ones of seeded Million Doubt games (``orchestration_bench.sample_requests``).

Prints one line per way, ``<way>: M ms``, the mean wall time of one request:

* ``bare client``: ``httpx.Client.post`` of a signed request, the denominator of
  ``orchestration_bench.py``'s ratio;
* ``bare transport``: the same through httpx's transport alone, as the arena sends;
* ``arena player``: :class:`arena.runner.players.HttpPlayer` ``decide`` (signing, the
  watchdog, the wire meter, the answer parsed), no cap;
* ``arena player with its cap``: :class:`arena.runner.capped.CappedHttpPlayer`, what a worker
  runs: the same plus the per-endpoint cap's one Redis script call a request (the previous
  slot given back in it, the bot's withdrawal flag read in it);
* ``cap script alone``: that script call in a loop, with nothing between two calls.

(a figure of one or two blocks is noise on a shared machine: the default is 30) and a last
line, ``cap script in the path: D ms``: the capped player's time minus the
uncapped one's, what the one Redis call costs when it alternates with HTTP exchanges (more
than alone: on a 2-core machine each call wakes a sleeping Redis server and then the client).
Every request is checked answered (HTTP 200, no fault). The details line (stderr, JSON) gives
the requests timed each way and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import httpx  # noqa: E402
import redis  # noqa: E402
from orchestration_bench import free_port, sample_requests  # noqa: E402

from arena.runner.capped import CappedHttpPlayer  # noqa: E402
from arena.runner.players import HttpPlayer  # noqa: E402
from arena.runner.semaphore import BotSemaphore, MatchSlots  # noqa: E402
from arena.withdrawals import WithdrawalCheck  # noqa: E402
from bots_sdk import protocol  # noqa: E402
from tests import children  # noqa: E402

SECRET = "decision-path-bench-secret"
#: The bot's process: the greedy sample bot, signatures checked, until this bench stops it.
_BOT = (
    "import sys; from bots_sdk import server; from bots_sdk.samples import SAMPLE_BOTS; "
    "server.serve(SAMPLE_BOTS['greedy'](), port=int(sys.argv[1]), secret=sys.argv[2])"
)
#: The bot's id for its withdrawal flag, read with each slot (never set here).
BOT_ID = 1


def wait_up(url: str) -> None:
    """Until the bot answers a request (its process has started)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the bot at {url} did not start") from None
            time.sleep(0.05)


def measure(url: str, redis_url: str, blocks: int) -> dict[str, list[float]]:
    bodies = sample_requests()
    signed = [(b, protocol.sign(SECRET, b)) for b in bodies]
    target = httpx.URL(url)
    client = redis.Redis.from_url(redis_url)
    sem = BotSemaphore.for_endpoint(client, url, 4)
    slots = MatchSlots()
    http_client = httpx.Client(trust_env=False)
    transport = httpx.HTTPTransport()
    player = HttpPlayer(url, SECRET, allow_private=True)
    capped = CappedHttpPlayer(url, SECRET, None, sem, slots, allow_private=True)

    gate = WithdrawalCheck(client, {0: BOT_ID}).gate(0)  # the worker's: the flag read with the slot
    capped.gate = gate

    def via_client(i: int) -> None:
        body, headers = signed[i % len(signed)]
        r = http_client.post(url, content=body, headers=headers)
        r.read()
        assert r.status_code == 200, r.status_code

    def via_transport(i: int) -> None:
        body, headers = signed[i % len(signed)]
        r = transport.handle_request(httpx.Request("POST", target, content=body, headers=headers))
        r.read()
        r.close()
        assert r.status_code == 200, r.status_code

    def via_player(i: int) -> None:
        out = player.decide(bodies[i % len(bodies)], 10.0)
        assert out.fault is None, out

    def via_capped(i: int) -> None:
        out = capped.decide(bodies[i % len(bodies)], 10.0)
        assert out.fault is None, out

    def script_alone(i: int) -> None:
        token, _ = sem.acquire(10.0, slots.take_release(), watch=gate.key if gate else None)
        assert token is not None
        slots.defer(sem, token)

    ways = {
        "bare client": via_client,
        "bare transport": via_transport,
        "arena player": via_player,
        "arena player with its cap": via_capped,
        "cap script alone": script_alone,
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for send in ways.values():  # warm up: connections open, code paths hot
        for i in range(100):
            send(i)
    for _ in range(blocks):
        for name, send in ways.items():
            for i in range(100):
                t = time.perf_counter()
                send(i)
                times[name].append(time.perf_counter() - t)
    slots.flush()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=30, help="rounds of 100 requests each way")
    args = ap.parse_args()
    children.install_signal_handlers()
    env = {**os.environ, "ARENA_REDIS_PORT": str(free_port())}
    redis_sh = ["bash", str(REPO / "infra" / "redis.sh")]
    redis_url = subprocess.run(
        [*redis_sh, "start"], env=env, capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    stop_redis = children.on_exit(lambda: subprocess.run([*redis_sh, "stop"], env=env, capture_output=True))
    port = free_port()
    bot = children.spawn([sys.executable, "-c", _BOT, str(port), SECRET], cwd=REPO, stdout=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_up(url)
        load = os.getloadavg()[0]
        times = measure(url, redis_url, args.blocks)
    finally:
        children.stop(bot)
        stop_redis()
        children.forget(stop_redis)
    means = {name: statistics.fmean(v) * 1000 for name, v in times.items()}
    for name, ms in means.items():
        print(f"{name}: {ms:.3f} ms")
    print(f"cap script in the path: {means['arena player with its cap'] - means['arena player']:.3f} ms")
    details = {
        "requests_each_way": {name: len(v) for name, v in times.items()},
        "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(details), file=sys.stderr)


if __name__ == "__main__":
    main()
