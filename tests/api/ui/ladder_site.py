"""A ladder that has been playing, for the ladder pages' tests (``test_ladder_pages.py`` without a
browser, ``test_ladder_browser.py`` in Chromium).

:func:`build` drives the real code end to end on the app's database: accounts sign up through the
API, register bots (real HTTP sample bots of graded strength on 127.0.0.1, ``tests.fakes.FakeBot``)
whose check is stored as passed, an organizer creates an open Million Doubt ladder (house bots
fill tables) and a private one, the owners enter their bots through the API, and ticks
(:func:`arena.usecases.ladders.tick`, one a minute of ``now``) form sets that the in-process
dispatcher plays and stores (eager mode: each set rated as it is stored). Then the batch fit
(:func:`arena.usecases.ladders.fit_ladder`). Along the way: one bot answers an illegal play to
every decision (the ladder pauses it: its health), and a new version of a bot replaces its
parent and plays comparison sets with it on identical deals.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy.orm import sessionmaker as Sessionmaker

from arena.db.models import Bot, utcnow
from arena.inprocess import InProcessDispatcher
from arena.lifecycle import ladders as states
from arena.usecases import ladders
from bots_sdk.samples import SAMPLE_BOTS
from tests.fakes import FakeBot
from tests.helpers import mark_bot_checked

RS = "million_doubt"
#: (account, bot name, sample bot): graded strength, heuristic the strongest.
BOTS = (
    ("ann", "ann-heuristic", "heuristic"),
    ("ben", "ben-greedy", "greedy"),
    ("cat", "cat-random", "random"),
    ("dan", "dan-broken", "broken"),
)
TIME_RULES = {"initial": 5.0, "increment": 1.0, "cap": 5.0}
#: The passed check stored for each bot (no game played: tests.helpers.mark_bot_checked), with
#: what the bot page shows of a check.
CHECK = {"ok": True, "url": {"ok": True}, "health": {"ok": True, "status": 200, "elapsed_ms": 1.5}, "conformance": []}


@dataclass
class LadderSite:
    """What :func:`build` made: ``tokens`` and ``ids`` of the accounts, ``bots`` (name -> id),
    the open ladder ``ladder`` and the private one ``private`` (members: ann), ``version`` (the
    new version of ann's bot), ``servers`` (to close)."""

    tokens: dict[str, str] = field(default_factory=dict)
    ids: dict[str, int] = field(default_factory=dict)
    bots: dict[str, int] = field(default_factory=dict)
    ladder: int = 0
    private: int = 0
    version: int = 0
    servers: list[FakeBot] = field(default_factory=list)

    def headers(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def close(self) -> None:
        for s in self.servers:
            s.close()


def _server(sample: str, servers: list[FakeBot]) -> FakeBot:
    player = SAMPLE_BOTS["random" if sample == "broken" else sample](seed=7)
    server = FakeBot(player)
    if sample == "broken":
        server.mode = "illegal"  # after its check: every decision a well-formed illegal play
    servers.append(server)
    return server


def build(app: Any, sessions: Sessionmaker, *, ticks: int = 10, organizer_token: str) -> LadderSite:
    """Build the site (module docstring) through ``app``'s API and the core's use cases;
    ``organizer_token``: an organizer's (made by the caller: organizers are made on the server)."""
    c = app.test_client()
    site = LadderSite()
    site.tokens["olga"] = organizer_token
    for account, name, sample in BOTS:
        r = c.post("/api/v1/accounts", json={"name": account})
        assert r.status_code == 201, r.json
        site.tokens[account], site.ids[account] = r.json["token"], r.json["id"]
        server = _server(sample, site.servers)
        r = c.post(
            "/api/v1/bots",
            json={"name": name, "url": server.origin + "/", "rulesets": [RS]},
            headers=site.headers(account),
        )
        assert r.status_code == 201, r.json
        site.bots[name] = r.json["id"]
        assert mark_bot_checked(sessions, r.json["id"], CHECK) == "ready"
    r = c.post(
        "/api/v1/ladders",
        json={"name": "Open Million Doubt", "ruleset": RS, "open": True, "time_rules": TIME_RULES},
        headers=site.headers("olga"),
    )
    assert r.status_code == 201, r.json
    site.ladder = r.json["id"]
    r = c.post(
        "/api/v1/ladders",
        json={"name": "Class 2B", "ruleset": RS, "members": [site.ids["ann"]], "time_rules": TIME_RULES},
        headers=site.headers("olga"),
    )
    assert r.status_code == 201, r.json
    site.private = r.json["id"]
    for account, name, _sample in BOTS:
        r = c.post(
            f"/api/v1/ladders/{site.ladder}/entries", json={"bot_id": site.bots[name]}, headers=site.headers(account)
        )
        assert r.status_code == 201, r.json
    r = c.post(
        f"/api/v1/ladders/{site.private}/entries",
        json={"bot_id": site.bots["ann-heuristic"]},
        headers=site.headers("ann"),
    )
    assert r.status_code == 201, r.json
    settings = dataclasses.replace(app.extensions["arena"]["settings"], celery_eager=True)
    play = InProcessDispatcher(settings).send_matches
    start = utcnow()
    rng = random.Random(5)

    def tick(k: int) -> None:
        ladders.tick(
            sessions, play, tick_s=60, probe_s=3600, online=lambda ids: set(), now=start + timedelta(minutes=k), rng=rng
        )

    for k in range(ticks):
        tick(k)
    # a new version of ann's bot: it takes its parent's place once its check passed, then plays
    # comparison sets with it on identical deals
    server = _server("heuristic", site.servers)
    r = c.post(
        "/api/v1/bots",
        json={
            "name": "ann-heuristic-v2",
            "url": server.origin + "/",
            "rulesets": [RS],
            "parent_id": site.bots["ann-heuristic"],
        },
        headers=site.headers("ann"),
    )
    assert r.status_code == 201, r.json
    site.version = r.json["id"]
    assert mark_bot_checked(sessions, site.version, CHECK) == "ready"
    with sessions() as s:
        states.after_check_passed(s, s.get(Bot, site.version))
        s.commit()
    for k in range(ticks, ticks + 3):
        tick(k)
    with sessions() as s:
        ladders.fit_ladder(s, site.ladder)
    return site
