"""Live streams are capped (api/ui/live.py): each holds a server thread, so one account may
keep at most STREAMS_PER_ACCOUNT open and a server process at most STREAMS_PER_PROCESS; a
stream beyond a cap answers 429, and the site keeps answering (the attacker of the review
opened 40 streams and took the site down). Real HTTP server and Redis."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from api.ui import live as live_pages
from tests.ui.test_live_browser import live_site  # noqa: F401  (the fixture)


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
    _all_released()
    for c in [*clients, organizer]:
        c.close()


@pytest.mark.services
def test_a_server_process_keeps_threads_for_everything_else(live_site, monkeypatch):  # noqa: F811
    site = live_site
    monkeypatch.setattr(live_pages, "_process_streams", threading.BoundedSemaphore(1))
    path = f"/ui/matches/{site['match']}/live"
    first = OpenStream(_signed_in(site, "olga"), path)
    assert first.status == 200
    second = _signed_in(site, "alice").get(path)
    assert second.status_code == 429 and "on this server" in second.text
    first.close()
    _all_released()


def _all_released() -> None:
    """Wait until the server noticed the closed streams (its next keep-alive write) and
    gave their places back, so later tests of this process start with every place free."""
    deadline = time.monotonic() + 60
    while live_pages.open_streams() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert live_pages.open_streams() == 0
