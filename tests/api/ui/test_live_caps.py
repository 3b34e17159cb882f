"""Live streams are capped (api/ui/live.py): each holds a server thread, so one account may
keep at most STREAMS_PER_ACCOUNT open and a server process at most STREAMS_PER_PROCESS; a
stream beyond a cap answers 429, and the site keeps answering (the attacker of the review
opened 40 streams and took the site down). Real HTTP server and Redis."""

from __future__ import annotations

import socket
import struct
import threading
import time

import httpx
import pytest
import redis

from api.ui import live as live_pages
from arena import live
from arena.accounts import create_account
from tests.api.ui.conftest import wait_streams_released
from tests.api.ui.test_live_browser import live_site  # noqa: F401  (the fixture)


def _signed_in(site, who: str) -> httpx.Client:
    c = httpx.Client(base_url=site["url"], timeout=30)
    r = c.post("/ui/login", data={"token": site["tokens"][who], "next": "/ui/"})
    assert r.status_code == 303
    # the session cookie is Secure (httpx keeps it off plain HTTP): send it by hand
    c.headers["Cookie"] = "; ".join(v.split(";", 1)[0] for v in r.headers.get_list("set-cookie"))
    c.cookies.clear()
    return c


class OpenStream:
    """A stream held open in a thread until ``close()``; ``status`` once it answered."""

    def __init__(self, client: httpx.Client, path: str):
        self.status: int | None = None
        self.answered = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(client, path), daemon=True)
        self._thread.start()
        assert self.answered.wait(30)

    def _run(self, client: httpx.Client, path: str) -> None:
        try:
            with client.stream("GET", path) as r:
                self.status = r.status_code
                self.answered.set()
                if r.status_code != 200:
                    r.read()
                    return
                for _chunk in r.iter_bytes():
                    if self._stop.is_set():
                        return
        except httpx.HTTPError:
            pass  # closed by close(): the viewer left

    def close(self) -> None:
        """Leave: stop reading; the server notices at its next keep-alive write."""
        self._stop.set()


@pytest.mark.services
def test_one_account_holds_at_most_its_streams_and_the_site_keeps_answering(live_site):  # noqa: F811
    site = live_site
    path = f"/ui/matches/{site['match']}/live"
    clients = [_signed_in(site, "alice") for _ in range(live_pages.STREAMS_PER_ACCOUNT + 1)]
    streams = [OpenStream(c, path) for c in clients[:-1]]
    assert [s.status for s in streams] == [200] * live_pages.STREAMS_PER_ACCOUNT
    over = clients[-1].get(path)
    assert over.status_code == 429 and "live views open already" in over.text
    with httpx.Client(base_url=site["url"]) as anyone:
        assert anyone.get("/healthz").status_code == 200
    organizer = _signed_in(site, "olga")  # another account is not affected
    other = OpenStream(organizer, path)
    assert other.status == 200
    # a stream that ends gives its place back (noticed at the next keep-alive write)
    streams[0].close()
    deadline = time.monotonic() + 60
    status = 429
    while status == 429 and time.monotonic() < deadline:
        r = clients[-1].get("/ui/tournaments/999999/live")  # other requests are answered: 404
        assert r.status_code == 404
        probe = OpenStream(clients[-1], path)
        status = probe.status
        probe.close()
        if status == 429:
            time.sleep(0.5)
    assert status == 200
    for s in [*streams, other]:
        s.close()
    wait_streams_released()
    for c in [*clients, organizer]:
        c.close()


@pytest.mark.services
def test_a_server_process_keeps_threads_for_everything_else(live_site, monkeypatch):  # noqa: F811
    site = live_site
    monkeypatch.setattr(live_pages, "_process_streams", threading.BoundedSemaphore(1))
    monkeypatch.setattr(live_pages, "_reserved_streams", threading.BoundedSemaphore(0))
    monkeypatch.setattr(live_pages, "_organizer_streams", threading.BoundedSemaphore(0))
    path = f"/ui/matches/{site['match']}/live"
    first = OpenStream(_signed_in(site, "olga"), path)
    assert first.status == 200
    second = _signed_in(site, "alice").get(path)
    assert second.status_code == 429 and "on this server" in second.text
    first.close()
    wait_streams_released()


@pytest.mark.services
def test_accounts_signed_up_to_watch_cannot_take_the_places_of_viewers_with_a_stake(live_site):  # noqa: F811
    """Any signed-in account may watch a running tournament's events; those without a bot in
    it share STREAMS_WITHOUT_STAKE places across every process (and STREAMS_PER_PROCESS -
    STREAMS_RESERVED in one), so a flood of fresh accounts (the attacker review: two, at 5
    each, filled a process) leaves the organizer and the tournament's contestants their
    places."""
    site = live_site
    shared = live_pages.STREAMS_WITHOUT_STAKE
    with site["sm"]() as s:
        tokens = [create_account(s, f"watcher{i}", "contestant")[1] for i in range(2)]
        s.commit()
    site["tokens"].update({f"watcher{i}": tok for i, tok in enumerate(tokens)})
    tournament = f"/ui/tournaments/{site['tournament']}/live"
    flood = []
    for i in range(2):  # two fresh accounts open all they may
        for _ in range(live_pages.STREAMS_PER_ACCOUNT):
            stream = OpenStream(_signed_in(site, f"watcher{i}"), tournament)
            flood.append(stream)
    assert sorted(s.status for s in flood) == [200] * shared + [429] * (len(flood) - shared)
    stake = [
        OpenStream(_signed_in(site, "olga"), f"/ui/matches/{site['match']}/live"),  # organizers' places
        OpenStream(_signed_in(site, "olga"), tournament),
        OpenStream(_signed_in(site, "alice"), tournament),  # a bot of hers is entered: reserved places
        OpenStream(_signed_in(site, "alice"), f"/ui/matches/{site['match']}/live"),
    ]
    assert [s.status for s in stake] == [200] * 4
    assert live_pages.open_streams() == shared + 4
    for s in [*flood, *stake]:
        s.close()
    wait_streams_released()


@pytest.mark.services
def test_a_busy_stream_ends_after_its_longest_life_too(live_site, monkeypatch):  # noqa: F811
    """MAX_STREAM_S bounds a stream that never idles (events more often than IDLE_S): it used
    to be checked only when idle, so a busy stream outlived its account lease (330 s) and its
    account could open more than STREAMS_PER_ACCOUNT (the attacker review)."""
    site = live_site
    monkeypatch.setattr(live_pages, "MAX_STREAM_S", 1.0)
    stream = OpenStream(_signed_in(site, "alice"), f"/ui/tournaments/{site['tournament']}/live")
    assert stream.status == 200
    deadline = time.monotonic() + 30
    while stream._thread.is_alive() and time.monotonic() < deadline:
        live.publish_tournament_event(site["redis"], site["tournament"], "claimed", [1])  # never idle
        time.sleep(0.2)
    assert not stream._thread.is_alive()  # the server ended it (the browser would reconnect)
    wait_streams_released()


@pytest.mark.services
def test_a_viewer_that_resets_the_connection_after_the_end_gives_its_place_back(live_site):  # noqa: F811
    """The werkzeug server skips the response's close when the client's reset reaches it
    while it drains the socket (seen in CI: a leaked place, then a 429 for the next stream);
    the stream gives its place back when its events end, whatever the server does."""
    site = live_site
    client = _signed_in(site, "alice")
    host, port = site["url"].removeprefix("http://").split(":")
    r = redis.Redis.from_url(site["redis"])
    for _ in range(3):
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.sendall(
            f"GET /ui/matches/{site['match']}/live HTTP/1.1\r\nHost: {host}\r\n"
            f"Cookie: {client.headers['Cookie']}\r\n\r\n".encode()
        )
        got = b""
        while b": live" not in got:  # subscribed: the first event is sent after the subscription
            got += sock.recv(4096)
        assert b" 200 " in got.split(b"\r\n", 1)[0]
        assert live_pages.open_streams() == 1
        live.LivePublisher(site["redis"], site["match"]).end()
        while b'"type":"end"' not in got:
            got += sock.recv(4096)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # a reset, at once
        wait_streams_released()
        assert r.keys("arena:live:streams:*") == []  # the account's lease is gone too
    client.close()
    r.close()
