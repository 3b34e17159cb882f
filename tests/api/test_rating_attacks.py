"""A dishonest organizer against the ratings across tournaments (issue 28: rankings people can
defend), on SQLite and PostgreSQL, results stored with arena.lifecycle.store_result (the
worker's function) and the ratings rebuilt as the worker does.

The attack: the organizer's favourite bot plays the house bot (``random``) in 20 tournaments of
one 10-game match each (``fill_with_house_bots``, one participant). Each tournament's house
seat used to be a new entrant at the prior rating (mu 25): the house bot counted as an average
contestant again and again, however often it had lost. The same 200 games in ONE tournament
rated the bot at mu 26.9; split into 20 tournaments, mu 35.0, and it climbs with every
tournament. The rating of the same games against the same program must not depend on how they
are cut into tournaments: a house seat is now one entrant across tournaments (per sample bot
and seat), rated, never stored.
"""

from __future__ import annotations

import random

import pytest
from sqlalchemy import select

from arena import lifecycle
from arena.db.models import Bot, Rating, Tournament
from arena.leaderboard import leaderboard
from arena.ratings import rebuild_ratings
from arena.schedule import ScheduledMatch

GAMES = 10
TOURNAMENTS = 20


def _results(seed: int) -> list[dict]:
    """TOURNAMENTS * GAMES Million Doubt games of a bot (seat 0) winning 3 in 4 against the house bot."""
    rng = random.Random(seed)
    out = []
    for _ in range(TOURNAMENTS * GAMES):
        x = float(rng.choice((1, 2, 3))) * (1 if rng.random() < 0.75 else -1)
        out.append({"scores": [x, -x], "places": [1, 2] if x > 0 else [2, 1]})
    return out


def _against_the_house(s, org_id: int, bot: int, house_bot: str, games: list[dict]) -> int:
    """A tournament of ``bot`` and one house seat (``house_bot``) whose one match holds ``games``."""
    t = lifecycle.create_tournament(
        s,
        participants=[bot],
        name="farm",
        organizer_id=org_id,
        ruleset="million_doubt",
        options={},
        time_rules={},
        games_per_pairing=len(games),
        max_faults=3,
        fill_with_house_bots=True,
        house_bot=house_bot,
        public_when_finished=True,
    )
    tid = t.id
    (mid,) = lifecycle.start_tournament(s, tid, lambda seed: [ScheduledMatch(0, 0, (bot, "house-1"), seed)])
    assert isinstance(lifecycle.claim_match(s, mid), lifecycle.Claimed)
    total = sum(g["scores"][0] for g in games)
    assert lifecycle.store_result(
        s,
        mid,
        scores=[total, -total],
        places=[1, 2] if total > 0 else [2, 1],
        faults=[0, 0],
        games=games,
        timings={},
        log={"match": mid},
    )
    assert s.get(Tournament, tid).status == "finished"
    return tid


def test_splitting_games_against_the_house_into_tournaments_inflates_no_rating(accounts, sessionmaker):
    accounts.organizer("olga")
    accounts.contestant("ann")
    games = _results(seed=28)
    with sessionmaker() as s:
        bots = []
        for name in ("farmed", "control"):
            b = Bot(owner_id=accounts.ids["ann"], name=name, url="http://127.0.0.1:9/", rulesets=["million_doubt"])
            b.status, b.secret = "ready", "s"
            s.add(b)
            s.flush()
            bots.append(b.id)
        s.commit()
        farmed, control = bots
        for k in range(TOURNAMENTS):  # the farm: 20 tournaments against the random house bot
            _against_the_house(s, accounts.ids["olga"], farmed, "random", games[k * GAMES : (k + 1) * GAMES])
        # the same games in one tournament (another house bot: another entrant)
        _against_the_house(s, accounts.ids["olga"], control, "greedy", games)
        rebuild_ratings(s, "million_doubt")
        s.commit()
        got = {r.bot_id: r for r in s.scalars(select(Rating).where(Rating.ruleset == "million_doubt"))}
        rows, total = leaderboard(s, "million_doubt")
    assert set(got) == {farmed, control} and total == 2  # house seats are rated, never stored
    assert got[farmed].games == got[control].games == TOURNAMENTS * GAMES
    # before: farmed mu 35.0 against control 26.9
    assert got[farmed].mu == pytest.approx(got[control].mu, abs=0.5), (got[farmed].mu, got[control].mu)
    assert got[farmed].mu - 3 * got[farmed].sigma <= got[control].mu - 3 * got[control].sigma + 0.5
    assert [r.bot_id for r in rows][0] in (farmed, control)
