"""Play until settled (issue 28, item 3) through the lifecycle, the API, the pages and the CLI's
text, on SQLite and PostgreSQL: a round ends when its last match is stored; the tournament
then stops settled, stops at max_rounds, or gets one more round of its schedule with fresh
match positions (fresh seeds). Results are stored with arena.lifecycle.store_result, the
worker's function; the sequential test itself: tests/arena/test_sequential.py; on a real
Celery worker: tests/worker/test_until_settled.py."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from arena import lifecycle
from arena.accounts import create_account
from arena.db.models import Match, Tournament
from arena.fairness import match_seed
from arena.schedule import build_schedule
from arena.sequential import MIN_GAMES
from daifugo_arena.cli.display import settling_text
from tests.api.conftest import eager_client, register_checked_bot

GAMES = 10  # games per match (million_doubt: games_per_pairing)


@pytest.fixture
def bot(client, accounts, bot_server) -> int:
    """A ready Million Doubt bot: with a house bot, the two entrants of the tournaments below."""
    return register_checked_bot(client, accounts.contestant("ann"), bot_server.url + "/", ["million_doubt"], "solo")


def _tournament(sessionmaker, bot: int, max_rounds: int, **rule) -> int:
    """A running Million Doubt tournament of ``bot`` and a house bot, played until settled."""
    with sessionmaker() as s:
        org, _ = create_account(s, "boss", "organizer")
        t = lifecycle.create_tournament(
            s,
            participants=[bot],
            name="settle",
            organizer_id=org.id,
            ruleset="million_doubt",
            options={},
            time_rules={},
            games_per_pairing=GAMES,
            max_faults=3,
            fill_with_house_bots=True,
            public_when_finished=True,
            until_settled={"max_rounds": max_rounds, "delta": 1.0, "alpha": 0.05, "beta": 0.05, **rule},
        )
        tid = t.id
    with sessionmaker() as s:
        lifecycle.start_tournament(
            s, tid, lambda seed: build_schedule(2, [bot], GAMES, seed, fill_with_house_bots=True, tournament_id=tid)
        )
    return tid


def _games(margin: float) -> list[dict]:
    """GAMES games: the bot (seat 0) wins each by ``margin``; with margin 0, alternate wins of 3."""
    out = []
    for i in range(GAMES):
        x = margin if margin else (3.0 if i % 2 == 0 else -3.0)
        out.append({"scores": [x, -x], "places": [1, 2] if x > 0 else [2, 1]})
    return out


def _store(sessionmaker, match_id: int, margin: float) -> lifecycle.Stored:
    games = _games(margin)
    with sessionmaker() as s:
        total = sum(g["scores"][0] for g in games)
        return lifecycle.store_result(
            s,
            match_id,
            scores=[total, -total],
            places=[1, 2] if total > 0 else ([2, 1] if total < 0 else [1, 1]),
            faults=[0, 0],
            games=games,
            timings={},
            log={"match": match_id},
        )


def _open_matches(sessionmaker, tid: int) -> list[Match]:
    with sessionmaker() as s:
        return list(
            s.scalars(select(Match).where(Match.tournament_id == tid, Match.status != "finished").order_by(Match.index))
        )


def _tournament_row(sessionmaker, tid: int) -> Tournament:
    with sessionmaker() as s:
        return s.get(Tournament, tid)


def test_even_bots_get_every_round_with_fresh_deals_then_stop_at_max_rounds(sessionmaker, bot):
    tid = _tournament(sessionmaker, bot, max_rounds=3)
    seen_indices: list[int] = []
    for round_ in (1, 2, 3):
        (m,) = _open_matches(sessionmaker, tid)  # two entrants: one match a round
        assert m.index == round_ - 1 and m.status == "queued"
        seen_indices.append(m.index)
        stored = _store(sessionmaker, m.id, margin=0)
        t = _tournament_row(sessionmaker, tid)
        assert t.settle is not None and not t.settle["settled"] and t.settle["games"] == GAMES * round_
        if round_ < 3:
            (nxt,) = _open_matches(sessionmaker, tid)
            assert stored.added == (nxt.id,) and (t.status, t.rounds, t.stop_reason) == ("running", round_ + 1, None)
            assert nxt.seed == match_seed(t.seed, tid, nxt.index) and nxt.status == "queued"
        else:
            assert stored.added == () and (t.status, t.rounds, t.stop_reason) == ("finished", 3, "max_rounds")
    with sessionmaker() as s:
        seeds = list(s.scalars(select(Match.seed).where(Match.tournament_id == tid)))
    assert seen_indices == [0, 1, 2] and len(set(seeds)) == 3  # fresh positions, fresh seeds
    again = _store(sessionmaker, m.id, margin=0)  # a redelivery of the last match stores nothing
    assert not again and again.added == ()
    assert _tournament_row(sessionmaker, tid).rounds == 3


def test_a_clear_leader_settles_before_max_rounds(sessionmaker, bot):
    tid = _tournament(sessionmaker, bot, max_rounds=10)
    rounds_needed = -(-MIN_GAMES // GAMES)  # the test waits for MIN_GAMES games
    for round_ in range(1, rounds_needed + 1):
        (m,) = _open_matches(sessionmaker, tid)
        stored = _store(sessionmaker, m.id, margin=5.0)
        assert bool(stored.added) == (round_ < rounds_needed)
    t = _tournament_row(sessionmaker, tid)
    assert (t.status, t.rounds, t.stop_reason) == ("finished", rounds_needed, "settled")
    assert t.settle["settled"] and t.settle["leader"] == bot and t.settle["runner_up"] == "house-1"
    assert t.settle["difference"] == pytest.approx(10.0) and not t.settle["adjusted"]
    assert _open_matches(sessionmaker, tid) == []


def test_adjusted_scores_are_tested_when_every_game_has_a_par(sessionmaker, bot):
    """The bot wins every game by 5, but its cards were worth 5 more (par): adjusted, the
    two are even, so the tournament plays its two rounds."""
    tid = _tournament(sessionmaker, bot, max_rounds=2)
    for _ in range(2):
        (m,) = _open_matches(sessionmaker, tid)
        games = [{**g, "par": [5.0, -5.0]} for g in _games(5.0)]
        with sessionmaker() as s:
            lifecycle.store_result(
                s, m.id, scores=[50, -50], places=[1, 2], faults=[0, 0], games=games, timings={}, log={}
            )
    t = _tournament_row(sessionmaker, tid)
    assert (t.stop_reason, t.rounds) == ("max_rounds", 2)
    assert t.settle["adjusted"] and t.settle["difference"] == pytest.approx(0.0)


def test_a_failed_match_holds_the_decision_until_it_is_retried(sessionmaker, bot):
    tid = _tournament(sessionmaker, bot, max_rounds=3)
    (m,) = _open_matches(sessionmaker, tid)
    with sessionmaker() as s:
        assert lifecycle.fail_match(s, m.id, "internal error")
    t = _tournament_row(sessionmaker, tid)
    assert (t.status, t.rounds, t.stop_reason, t.settle) == ("finished", 1, None, None)
    assert settling_text({"until_settled": t.until_settled, "rounds": 1, "status": "finished"}).startswith("stopped")
    with sessionmaker() as s:
        assert lifecycle.retry_failed(s, tid) == [m.id]
    assert _store(sessionmaker, m.id, margin=0).added  # the retried match ends round 1: round 2
    assert _tournament_row(sessionmaker, tid).rounds == 2


def test_the_api_the_page_and_the_cli_say_why_it_stopped(client, accounts, bot_server, sessionmaker):
    org = accounts.organizer("org")
    ann = accounts.contestant("ann")
    bots = [register_checked_bot(client, ann, bot_server.url + "/", ["trump_millionaire"], f"b{i}") for i in range(4)]
    body = {"ruleset": "trump_millionaire", "participants": bots, "games_per_pairing": 1, "separate_owners": False}
    for bad, field in (
        ({"max_rounds": 0}, "max_rounds"),
        ({"max_rounds": 101}, "max_rounds"),
        ({"max_rounds": 2.5}, "max_rounds"),
        ({"max_rounds": 3, "delta": -1}, "delta"),
        ({"max_rounds": 3, "alpha": 0.9}, "alpha"),
        ({"delta": 2}, "max_rounds"),
    ):
        r = client.post("/api/v1/tournaments", json={**body, "until_settled": bad}, headers=org)
        assert r.status_code == 422 and field in r.json["errors"]["json"]["until_settled"], (bad, r.json)
    r = client.post(
        "/api/v1/tournaments", json={**body, "options": {"target_score": 50}, "until_settled": {"max_rounds": 4}}
    )
    assert r.status_code == 401
    r = client.post(
        "/api/v1/tournaments",
        json={**body, "options": {"target_score": 50}, "until_settled": {"max_rounds": 4}},
        headers=org,
    )
    assert r.status_code == 201, r.json
    t = r.json
    assert t["until_settled"] == {"max_rounds": 4, "delta": 5.0, "alpha": 0.05, "beta": 0.05}  # TM: target/10
    assert (t["rounds"], t["stop_reason"], t["settle"]) == (1, None, None)
    assert settling_text(t) == "round 1 of at most 4"
    plain = client.post("/api/v1/tournaments", json=body, headers=org).json
    assert plain["until_settled"] is None and settling_text(plain) is None
    # as stored when it stopped settled after round 3
    verdict = {
        "settled": True,
        "llr": 3.5,
        "lower": -2.94,
        "upper": 2.94,
        "leader": bots[2],
        "runner_up": bots[0],
        "difference": 12.5,
        "se": 3.25,
        "games": 48,
        "adjusted": False,
    }
    with sessionmaker() as s:
        row = s.get(Tournament, t["id"])
        row.status, row.rounds, row.stop_reason, row.settle = "finished", 3, "settled", verdict
        s.commit()
    got = client.get(f"/api/v1/tournaments/{t['id']}", headers=ann).json
    assert (got["rounds"], got["stop_reason"], got["settle"]) == (3, "settled", verdict)
    assert settling_text(got) == (
        f"settled after round 3: bot {bots[2]} ahead of bot {bots[0]} by 12.50 ± 3.25 points per game"
    )
    page = client.get(f"/ui/tournaments/{t['id']}").get_data(as_text=True)  # public once finished
    assert 'data-reason="settled"' in page and "Settled after round 3" in page and f"b2 #{bots[2]}" in page
    ja = client.get(f"/ui/tournaments/{t['id']}", headers={"Accept-Language": "ja"}).get_data(as_text=True)
    assert "ラウンド 3 で決着" in ja
    with sessionmaker() as s:
        row = s.get(Tournament, t["id"])
        row.stop_reason, row.rounds = "max_rounds", 4
        row.settle = {**verdict, "settled": False, "llr": 1.0}
        s.commit()
    got = client.get(f"/api/v1/tournaments/{t['id']}", headers=ann).json
    assert settling_text(got) == "max rounds (4) reached: the sequential test did not settle the top two"
    page = client.get(f"/ui/tournaments/{t['id']}").get_data(as_text=True)
    assert 'data-reason="max_rounds"' in page and "Maximum of 4 rounds reached" in page
    # not to be read as the standings' "first place settled", which is another test
    assert "the sequential test did not find the leader ahead of the runner-up by the difference asked" in page
    assert "(test 1.0, settled at 2.94). The standings’ “settled” below is another test" in page
    ja = client.get(f"/ui/tournaments/{t['id']}", headers={"Accept-Language": "ja"}).get_data(as_text=True)
    assert "（検定値 1.0、決着は 2.94 以上）。下の順位表の「確定」は別の検定で" in ja and "95% 信頼区間" in ja
    ui = client.application.test_client()
    assert ui.post("/ui/login", data={"token": accounts.tokens["ann"], "next": "/ui/"}).status_code == 303
    page = ui.get(f"/ui/tournaments/{plain['id']}").get_data(as_text=True)
    assert "no: one round of the schedule" in page


def test_in_process_the_added_rounds_are_played_too(client, accounts, bot_server):
    """Eager mode (the demo, quick runs): the store that adds a round plays it in the same
    process, until the tournament stops; a cancelled one says so."""
    org = accounts.organizer("org")
    ann = accounts.contestant("ann")
    bots = [register_checked_bot(client, ann, bot_server.url + "/", ["million_doubt"], f"g{i}") for i in range(2)]
    body = {
        "ruleset": "million_doubt",
        "participants": bots,
        "separate_owners": False,
        "games_per_pairing": 2,
        "until_settled": {"max_rounds": 3},
    }
    tid = client.post("/api/v1/tournaments", json=body, headers=org).json["id"]
    r = eager_client(client).post(f"/api/v1/tournaments/{tid}/start", headers=org)
    assert r.status_code == 202, r.json
    t = client.get(f"/api/v1/tournaments/{tid}", headers=org).json
    # 3 rounds of one match of 2 games: 6 games, fewer than the test's MIN_GAMES: never settled
    assert (t["status"], t["rounds"], t["stop_reason"]) == ("finished", 3, "max_rounds")
    assert t["progress"] == {"finished": 3, "total": 3, "queued": 3} and t["settle"]["games"] == 6
    ms = client.get(f"/api/v1/tournaments/{tid}/matches", headers=org).json["items"]
    assert [m["index"] for m in ms] == [0, 1, 2] and len({m["seed"] for m in ms}) == 3  # revealed: all distinct
    other = client.post("/api/v1/tournaments", json=body, headers=org).json["id"]
    assert client.post(f"/api/v1/tournaments/{other}/cancel", headers=org).status_code == 200
    assert settling_text(client.get(f"/api/v1/tournaments/{other}", headers=org).json) == "cancelled during round 1"
