"""Live-stream places across server processes (issue 29, part A point 1): two throwaway
accounts and one participant had locked the organizer out of every live view (429 five times
out of five) while the API stayed fast. The places were counted per process, and the places
reserved for "viewers with a stake" were shared by organizers and participants.

Two real ``arena api`` processes (gunicorn, one worker each) on one PostgreSQL database and
one Redis play the site; the attackers aim at the first process. Throwaway accounts hold at
most STREAMS_WITHOUT_STAKE places across both processes (the second process, with free
threads, refuses them too: the count is in Redis); a participant fills the reserved places
of the first; the organizer still gets a stream on each process, five of five (its own
places there, which nobody else can take), and the site keeps answering."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
import redis

from api.ui import live as live_pages
from arena.accounts import create_account
from arena.db.models import Account, Bot, Match, MatchSeat, Tournament, TournamentParticipant, utcnow
from arena.db.session import make_engine, make_sessionmaker
from arena.leases import LeaseSet
from tests import children
from tests.api.ui.test_live_caps import OpenStream
from tests.helpers import migrated_pg_database

pytestmark = [pytest.mark.services, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
#: Seconds a started server gets to answer, and a closed stream to give its places back
#: (guards against a hang, not timing goals).
READY_S = 90.0


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=3, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def _arena_api(tmp_path: Path, port: int, database_url: str, broker_url: str):
    """A real ``arena api --workers 1`` (gunicorn) on ``port``; yields its base URL."""
    log = tmp_path / f"api-{port}.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ARENA_DATABASE_URL": database_url,
        "ARENA_BROKER_URL": broker_url,
        "ARENA_RATE_LIMITS": "0",
    }
    with open(log, "wb") as out:
        proc = children.spawn(
            [sys.executable, "-m", "daifugo_arena.cli", "api", "--port", str(port), "--workers", "1", "--no-upgrade"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_S
        while not _healthy(url):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _seed(database_url: str) -> dict:
    """An organizer, a participant (two bots entered), two throwaway accounts, a running
    tournament and its running match."""
    engine = make_engine(database_url)
    try:
        with make_sessionmaker(engine)() as s:
            tokens, ids = {}, {}
            for name, role in (
                ("olga", "organizer"),
                ("alice", "contestant"),
                ("w0", "contestant"),
                ("w1", "contestant"),
            ):
                account, tokens[name] = create_account(s, name, role)
                ids[name] = account.id
            olga, alice = s.get(Account, ids["olga"]), s.get(Account, ids["alice"])
            bots = [
                Bot(owner_id=alice.id, name=n, url="http://127.0.0.1:9/", rulesets=["million_doubt"], secret="s")
                for n in ("A", "B")
            ]
            for b in bots:
                b.status = "ready"
            s.add_all(bots)
            s.flush()
            t = Tournament(
                name="Live cup",
                organizer_id=olga.id,
                ruleset="million_doubt",
                options={},
                time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0},
                games_per_pairing=2,
                seed=1,
                max_faults=3,
                status="running",
                started_at=utcnow(),
            )
            t.participants = [TournamentParticipant(bot_id=b.id) for b in bots]
            s.add(t)
            s.flush()
            m = Match(
                tournament_id=t.id,
                index=0,
                table=0,
                seed=7,
                status="running",
                seats=[MatchSeat(seat=i, bot_id=b.id) for i, b in enumerate(bots)],
            )
            s.add(m)
            s.commit()
            return {"tokens": tokens, "ids": ids, "tournament": t.id, "match": m.id}
    finally:
        engine.dispose()


def _signed_in(base: str, token: str) -> httpx.Client:
    c = httpx.Client(base_url=base, timeout=30, trust_env=False)
    r = c.post("/ui/login", data={"token": token, "next": "/ui/"})
    assert r.status_code == 303, r.text
    # the session cookie is Secure (httpx keeps it off plain HTTP): send it by hand
    c.headers["Cookie"] = "; ".join(v.split(";", 1)[0] for v in r.headers.get_list("set-cookie"))
    c.cookies.clear()
    return c


def test_the_organizer_keeps_a_place_on_every_process(tmp_path, pg_url, redis_url, free_port):
    database_url = migrated_pg_database(pg_url, "live")
    site = _seed(database_url)
    client = redis.Redis.from_url(redis_url)
    client.delete(live_pages.WITHOUT_STAKE_KEY)
    without_stake = LeaseSet(client, live_pages.WITHOUT_STAKE_KEY, live_pages.STREAMS_WITHOUT_STAKE)
    tournament = f"/ui/tournaments/{site['tournament']}/live"
    match = f"/ui/matches/{site['match']}/live"
    streams: list[OpenStream] = []
    clients: list[httpx.Client] = []

    def watch(base: str, who: str, path: str) -> OpenStream:
        c = _signed_in(base, site["tokens"][who])
        clients.append(c)
        stream = OpenStream(c, path)
        streams.append(stream)
        return stream

    with ExitStack() as stack:
        a = stack.enter_context(_arena_api(tmp_path, free_port(), database_url, redis_url))
        b = stack.enter_context(_arena_api(tmp_path, free_port(), database_url, redis_url))
        try:
            # two throwaway accounts open all they may on process A: they share the places
            # of every viewer without a stake, counted in Redis
            flood = [watch(a, who, tournament) for who in ("w0", "w1") for _ in range(live_pages.STREAMS_PER_ACCOUNT)]
            assert sorted(s.status for s in flood).count(200) == live_pages.STREAMS_WITHOUT_STAKE
            assert without_stake.held() == live_pages.STREAMS_WITHOUT_STAKE
            # ... and process B, whose threads are all free, refuses them too
            for who in ("w0", "w1"):
                r = _signed_in(b, site["tokens"][who]).get(tournament)
                assert r.status_code == 429 and "on this site" in r.text, r.text
            # the participant takes the places reserved for viewers with a stake on A
            mine = [watch(a, "alice", match if i % 2 else tournament) for i in range(live_pages.STREAMS_PER_ACCOUNT)]
            assert [s.status for s in mine] == [200] * live_pages.STREAMS_RESERVED + [429]
            # process A is full for everyone but organizers; the organizer still watches,
            # five times out of five: its own places on A, then B
            olga = [watch(base, "olga", match) for base in (a, a)]
            over = _signed_in(a, site["tokens"]["olga"]).get(match)
            assert over.status_code == 429 and "on this server" in over.text  # A: its 2 places are taken
            olga += [watch(b, "olga", match) for _ in range(3)]
            assert [s.status for s in olga] == [200] * 5
            assert _signed_in(b, site["tokens"]["olga"]).get(match).status_code == 429  # its 5 per account
            for base in (a, b):
                assert _healthy(base)  # the site keeps answering
        finally:
            for s in streams:
                s.close()
            # every place is given back (each server notices its viewer left at a keep-alive)
            deadline = time.monotonic() + READY_S
            leases = [without_stake] + [
                LeaseSet(client, f"arena:live:streams:{i}", live_pages.STREAMS_PER_ACCOUNT)
                for i in site["ids"].values()
            ]
            while any(lease.held() for lease in leases) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert [lease.held() for lease in leases] == [0] * len(leases)
            for c in clients:
                c.close()
    client.close()
