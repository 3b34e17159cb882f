"""An organizer whose own bot plays in the tournament (issue 28: deals nobody learns before the
end, organizers included).

The attack: an organizer registers a bot, puts it in a tournament it runs, and while the
tournament plays it opens its bot's match live (organizers get the full channel: every hand)
and reads the logs of the matches already played (organizers are not under the log embargo).
Fed to the bot, the live hands are the opponent's cards in the game being played: in Million
Doubt, every doubt called right. An organizer who owns a participant of a tournament is now a
contestant of it for what the embargo keeps: its own seats' view or the public live channel,
no log until it is over.
A real Redis, the site over HTTP, a match played with the worker's publisher.
"""

from __future__ import annotations

import pytest
import redis

from arena import access, live
from arena.accounts import create_account
from arena.db.models import Account, Bot, Match, MatchSeat, Tournament
from arena.lifecycle import store_result

from .conftest import wait_streams_released
from .test_live_public import SseReader, _client, _play, _site, _subscribers, _wait_subscribed


@pytest.fixture
def site(tmp_path, redis_url):
    """The live tests' site; organizer ``oscar`` owns the bot in seat 0 of the running Million
    Doubt match, whose tournament has one more match, played and stored (its log readable)."""
    st, server, engine = _site(tmp_path, redis_url)
    st["redis"] = redis_url
    mid = st["matches"]["million_doubt"]
    with st["sm"]() as s:
        oscar, st["tokens"]["oscar"] = create_account(s, "oscar", "organizer")
        m = s.get(Match, mid)
        bots = [seat.bot_id for seat in m.seats]
        s.get(Bot, bots[0]).owner_id = oscar.id
        played = Match(
            tournament_id=m.tournament_id,
            index=1,
            table=1,
            seed=78,
            status="running",
            seats=[MatchSeat(seat=i, bot_id=b) for i, b in enumerate(reversed(bots))],
        )
        s.add(played)
        s.commit()
        assert store_result(
            s,
            played.id,
            scores=[3.0, -3.0],
            places=[1, 2],
            faults=[0, 0],
            games=[{"scores": [3.0, -3.0], "places": [1, 2]}],
            timings={},
            log={"match_id": played.id, "games": []},
        )
        st["played"] = played.id
        assert s.get(Tournament, m.tournament_id).status == "running"
    yield st
    wait_streams_released()
    server.shutdown()
    engine.dispose()


@pytest.mark.services
def test_an_organizer_whose_bot_plays_watches_its_own_seat_only(site):
    """Oscar owns the bot of player 0: he watches that seat's own view (its hand, issue 29 B6),
    as any contestant; never the full channel, never player 1's hand."""
    mid = site["matches"]["million_doubt"]
    r = redis.Redis.from_url(site["redis"])
    with _client(site, "oscar") as oscar:
        reader = SseReader(oscar, f"/ui/matches/{mid}/live")
        _wait_subscribed(r, live.player_channel(mid, 0))
        assert _subscribers(r, live.channel(mid, True)) == 0  # before: the full channel, every hand
        assert _subscribers(r, live.player_channel(mid, 1)) == 0
        _play(site, "million_doubt")
        reader.join()
    steps = [m for m in reader.messages if m["type"] == "step"]
    assert reader.status == 200 and steps
    for m in steps:  # the engine seat of player 0 changes game by game (seats swapped)
        own = m["own_seat"]
        assert m["hands"][own] is not None and m["hands"][1 - own] is None
    r.close()


@pytest.mark.services
def test_an_organizer_whose_bot_plays_reads_no_log_before_the_end(site):
    tid = site["tournaments"]["million_doubt"]
    played = site["played"]
    embargoed = [f"/api/v1/matches/{played}/log", f"/api/v1/tournaments/{tid}/logs"]
    pages = [f"/ui/matches/{played}/log.json", f"/ui/matches/{played}/replay.json", f"/ui/tournaments/{tid}/logs.jsonl"]
    with _client(site, None) as c:
        for who, want in (("oscar", 403), ("olga", 200)):  # olga runs the tournament and plays in it not
            bearer = {"Authorization": f"Bearer {site['tokens'][who]}"}
            assert [c.get(p, headers=bearer).status_code for p in embargoed] == [want, want], who
    with _client(site, "oscar") as oscar:
        assert [oscar.get(p).status_code for p in pages] == [403, 403, 403]
        bearer = {"Authorization": f"Bearer {site['tokens']['oscar']}"}
        assert oscar.get(f"/api/v1/matches/{played}", headers=bearer).status_code == 200  # the record
        page = oscar.get(f"/ui/matches/{played}").text
        assert "shown when the tournament is finished" in page and "replay-card" not in page
    with site["sm"]() as s:  # once the tournament is over, everything an organizer reads
        t = s.get(Tournament, tid)
        oscar_account = s.query(Account).filter_by(name="oscar").one()
        m = s.get(Match, played)
        t.status = "finished"
        s.flush()
        assert access.can_read_log(s, oscar_account, m, t)
        assert access.can_download_tournament_logs(s, oscar_account, t)
        s.rollback()
