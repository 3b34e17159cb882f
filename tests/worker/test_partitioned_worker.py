"""A worker cut off from the network mid-match (issue 38), for real: worker A runs in a network
namespace of its own (``ip netns``, a veth pair; created and removed by the test), reaching
PostgreSQL, Redis and the two HTTP bots through the veth only. Its link goes down while it
plays; worker B (on the host) takes the match over once A's lease expired; A's link comes back
while B still plays.

Before: A went on playing without a network and charged its bots faults (``connection_error``,
"No route to host": its own missing route) until one forfeited; back online, it stored its
result although its lease was lost, and B's clean replay was dropped as a duplicate: stored
once, but the wrong one. Now A judges its own connectivity before it blames a bot (no fault,
the decision waits for the worker to be well), stops when it learns its lease was taken over,
and the store is fenced: only B's attempt is stored.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import select
from sqlalchemy.engine import make_url

from arena.db.models import Match
from tests.helpers import FreezableProxy, wait_until
from tests.worker.conftest import Arena, SwitchBot

pytestmark = [
    pytest.mark.services,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2 (ip netns)"),
]

#: The leases of this test, seconds (a cut-off worker's match is taken over within about 2 of them).
LEASE_S = "4"


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class Namespace:
    """A network namespace joined to the host by a veth pair: the host's end ``host_ip``, the
    namespace's ``ns_ip`` (on ``ns_dev``)."""

    name: str
    host_dev: str
    ns_dev: str
    host_ip: str
    ns_ip: str

    def link(self, up: bool) -> None:
        """The namespace's end of the link up or down (down: its routes are gone)."""
        ip("-n", self.name, "link", "set", self.ns_dev, "up" if up else "down")
        if up:
            ip("-n", self.name, "route", "replace", "default", "via", self.host_ip)


@pytest.fixture
def namespace() -> Iterator[Namespace]:
    tag = secrets.token_hex(3)
    net = 100 + secrets.randbelow(150)
    ns = Namespace(f"a38-{tag}", f"v38h{tag}", f"v38n{tag}", f"10.38.{net}.1", f"10.38.{net}.2")
    ip("netns", "add", ns.name)
    try:
        ip("link", "add", ns.host_dev, "type", "veth", "peer", "name", ns.ns_dev)
        ip("link", "set", ns.ns_dev, "netns", ns.name)
        ip("addr", "add", f"{ns.host_ip}/24", "dev", ns.host_dev)
        ip("link", "set", ns.host_dev, "up")
        ip("-n", ns.name, "addr", "add", f"{ns.ns_ip}/24", "dev", ns.ns_dev)
        ip("-n", ns.name, "link", "set", "lo", "up")
        ns.link(True)
        yield ns
    finally:
        subprocess.run(["ip", "link", "del", ns.host_dev], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns.name], capture_output=True)


def _forwarded(url: str, host: str, forwarders: list[FreezableProxy]) -> str:
    """``url`` through a forwarder listening on ``host`` (the namespace's way to the server)."""
    u = make_url(url)
    fwd = FreezableProxy((u.host or "127.0.0.1", int(u.port or 0)), host=host)
    forwarders.append(fwd)
    return u.set(host=host, port=fwd.port).render_as_string(hide_password=False)


def test_a_worker_cut_off_mid_match_charges_no_bot_and_its_stale_result_never_wins(
    pg_database, redis_url, celery_worker_factory, beat_factory, namespace: Namespace, tmp_path
) -> None:
    forwarders: list[FreezableProxy] = []
    bots: list[SwitchBot] = []
    arena = Arena(pg_database, redis_url, tmp_path=tmp_path)
    try:
        db_ns = _forwarded(pg_database, namespace.host_ip, forwarders)
        broker_ns = _forwarded(redis_url, namespace.host_ip, forwarders)
        bots += [SwitchBot(host=namespace.host_ip), SwitchBot(host=namespace.host_ip)]
        ids = [arena.register(b, ["million_doubt"], f"reach-{i}-{uuid.uuid4().hex[:4]}") for i, b in enumerate(bots)]
        for b in bots:  # they think a little: the match lasts long enough to be cut in the middle
            b.mode, b.sleep_s = "slow", 0.05
        env = {"ARENA_LEASE_S": LEASE_S, "ARENA_REAPER_INTERVAL_S": "1"}
        worker_a = celery_worker_factory(
            broker_url=broker_ns,
            database_url=db_ns,
            concurrency=2,
            pool="threads",
            env=env,
            prefix=("ip", "netns", "exec", namespace.name),
        )
        tid = arena.create(
            "million_doubt", ids, games_per_pairing=12, time_rules={"initial": 5.0, "increment": 1.0, "cap": 5.0}
        )
        arena.start(tid)
        with arena.sessions() as s:
            mid = s.scalar(select(Match.id).where(Match.tournament_id == tid))
        decisions = sum(b.decisions for b in bots)
        wait_until(lambda: sum(b.decisions for b in bots) > decisions + 20, "worker A playing the match", 120)
        namespace.link(False)  # A is cut off: no route to PostgreSQL, Redis or the bots
        beat = beat_factory(database_url=pg_database, env=env)
        worker_b = celery_worker_factory(database_url=pg_database, concurrency=2, pool="threads", env=env)

        def taken_over() -> bool:
            with arena.sessions() as s:
                m = s.get(Match, mid)
                return m is not None and m.attempts >= 2 and m.status == "running"

        try:
            wait_until(taken_over, "worker B playing the match again (A's lease expired)", 120)
        except AssertionError:
            with arena.sessions() as s:
                m = s.get(Match, mid)
                state = (m.status, m.attempts, m.lease_owner, m.lease_expires_at)
            raise AssertionError(f"{state}\nbeat: {beat.log()[-2000:]}\nB: {worker_b.log()[-3000:]}") from None
        namespace.link(True)  # A is back while B still plays

        final = arena.wait_finished(tid, workers=[worker_a, worker_b, beat])
        assert final["status"] == "finished", final
        ((match, result, log),) = arena.stored(tid)
        # the result stored is B's attempt, and nobody was charged for A's outage
        assert log["fairness"]["attempt"] == result.timings["attempt"] == match.attempts >= 2, match.attempts
        assert log["faults"] == [] and result.faults == [0, 0], log["faults"]
        wait_until(
            lambda: "stale match" in worker_a.log() or "stopped match" in worker_a.log(),
            "worker A giving up the match it lost",
            120,
        )
        assert f"stored match {mid}" not in worker_a.log(), worker_a.log()[-3000:]
        # B's log line comes after its commit, which the test saw first: wait for it
        wait_until(lambda: f"stored match {mid}" in worker_b.log(), "worker B's log saying it stored the match", 120)
    finally:
        for b in bots:
            b.close()
        for f in forwarders:
            f.close()
        arena.close()
