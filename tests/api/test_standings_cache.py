"""Issue 15: standings reads do not recompute every match; the cached prefix gives exactly
the standings of every stored result, whatever order results land in and reads come."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from arena.board import read_board
from arena.db.models import Account, Match, MatchSeat, StandingsCache, Tournament
from arena.lifecycle import MatchStatus, store_result
from arena.ranking import compute_standings
from arena.standings import ResultsSeen, load_records, tournament_report, tournament_standings


def _rows(standings):
    return [
        (
            s.entrant,
            s.matches,
            s.games,
            s.wins,
            s.faults,
            round(s.total_score, 9),
            None if s.mean_score is None else round(s.mean_score, 9),
            None if s.ci95 is None else round(s.ci95, 9),
            round(s.mu, 9),
            round(s.sigma, 9),
            s.rank,
        )
        for s in standings
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cached_prefix_equals_a_full_recompute(sessionmaker, seed):
    rng = random.Random(seed)
    bots = [101, 102, 103, 104, 105]
    with sessionmaker() as s:
        org = Account(name=f"org{seed}", role="organizer", token_hash=f"{seed:064d}")
        s.add(org)
        s.flush()
        t = Tournament(
            name="c",
            organizer_id=org.id,
            ruleset="million_doubt",
            options={},
            time_rules={},
            games_per_pairing=2,
            seed=seed,
            max_faults=3,
            status="running",
        )
        t.participants = []
        s.add(t)
        s.flush()
        pairs = [(a, b) for i, a in enumerate(bots) for b in bots[i + 1 :]]
        matches = []
        for index, (a, b) in enumerate(pairs):
            m = Match(
                tournament_id=t.id,
                index=index,
                table=index,
                seed=index,
                status=MatchStatus.RUNNING,
                seats=[MatchSeat(seat=0, house_bot=str(a)), MatchSeat(seat=1, house_bot=str(b))],
            )
            s.add(m)
            matches.append(m)
        s.commit()
        tid = t.id
        order = list(range(len(matches)))
        rng.shuffle(order)  # results land out of schedule order
        cancelled = order.pop()  # one match never gets a result
        s.get(Match, matches[cancelled].id).status = MatchStatus.CANCELLED
        s.commit()
        for k, i in enumerate(order):
            x = rng.choice([-3.0, -1.0, 1.0, 2.5])
            games = [
                {"scores": [x, -x], "places": [1, 2] if x > 0 else [2, 1]},
                {"scores": [-1.0, 1.0], "places": [2, 1]},
            ]
            assert store_result(
                s,
                matches[i].id,
                scores=[x - 1, 1 - x],
                places=[1, 2] if x > 1 else [2, 1],
                faults=[rng.randint(0, 1), 0],
                games=games,
                timings={},
                log={"i": i},
            )
            if k % 3 == 0:  # reads between the writes move the cached prefix
                t = s.get(Tournament, tid)
                assert _rows(tournament_standings(s, t)) == _rows(compute_standings(load_records(s, tid)))
        t = s.get(Tournament, tid)
        final = tournament_standings(s, t)
        assert _rows(final) == _rows(compute_standings(load_records(s, tid)))
        cache = s.get(StandingsCache, tid)
        assert cache is not None and cache.prefix_index == len(matches) - 1  # all done: all cached
        assert sum(r.matches for r in final) == 2 * (len(matches) - 1)
        # a read of a finished tournament folds nothing new: the same rows again
        assert _rows(tournament_standings(s, t)) == _rows(final)


def test_unplayed_entrants_have_no_rank(sessionmaker):
    rows = compute_standings([], entrants=[3, 1, 2])
    assert [r.rank for r in rows] == [0, 0, 0] and [r.entrant for r in rows] == [1, 2, 3]


def test_tournament_page_shows_one_page_of_matches(client, sessionmaker):
    """/ui/tournaments/<id> renders 100 matches a page, however many the tournament has."""
    with sessionmaker() as s:
        org = Account(name="pager", role="organizer", token_hash="9" * 64)
        s.add(org)
        s.flush()
        t = Tournament(
            name="big",
            organizer_id=org.id,
            ruleset="million_doubt",
            options={},
            time_rules={},
            games_per_pairing=2,
            seed=1,
            max_faults=3,
            status="finished",
            public_when_finished=True,
        )
        s.add(t)
        s.flush()
        for index in range(250):
            s.add(
                Match(
                    tournament_id=t.id,
                    index=index,
                    table=index,
                    seed=index,
                    status=MatchStatus.CANCELLED,
                    seats=[MatchSeat(seat=0, house_bot="house-1"), MatchSeat(seat=1, house_bot="house-2")],
                )
            )
        s.commit()
        tid = t.id
    pages = {}
    for page in (1, 2, 3, 4):
        r = client.get(f"/ui/tournaments/{tid}?page={page}")
        assert r.status_code == 200
        pages[page] = r.data.decode().count("<tr data-match=")
    assert pages == {1: 100, 2: 100, 3: 50, 4: 50}  # past the end: the last page
    body = client.get(f"/ui/tournaments/{tid}?page=2").data.decode()
    assert "page 2 of 3" in body and 'rel="prev"' in body and 'rel="next"' in body
    assert '<td class="num">101</td>' in body  # match #101 opens page 2


def _duel_tournament(s, name: str, n: int) -> tuple[int, list[int]]:
    org = Account(name=name, role="organizer", token_hash=name.encode().hex().ljust(64, "0")[:64])
    s.add(org)
    s.flush()
    t = Tournament(
        name=name,
        organizer_id=org.id,
        ruleset="million_doubt",
        options={},
        time_rules={},
        games_per_pairing=1,
        seed=1,
        max_faults=3,
        status="running",
    )
    s.add(t)
    s.flush()
    ids = []
    for index in range(n):
        m = Match(
            tournament_id=t.id,
            index=index,
            table=index,
            seed=index,
            status=MatchStatus.RUNNING,
            seats=[MatchSeat(seat=0, house_bot="a"), MatchSeat(seat=1, house_bot="b")],
        )
        s.add(m)
        s.flush()
        ids.append(m.id)
    s.commit()
    return t.id, ids


def _store(s, match_id: int, x: float) -> None:
    assert store_result(
        s,
        match_id,
        scores=[x, -x],
        places=[1, 2] if x > 0 else [2, 1],
        faults=[0, 0],
        games=[{"scores": [x, -x], "places": [1, 2] if x > 0 else [2, 1]}],
        timings={},
        log={"m": match_id},
    )


def test_standings_of_what_one_read_saw_leave_out_later_results(sessionmaker):
    """Issue 42, point 3: the standings of a read (ResultsSeen) hold exactly the results that
    read saw, even when the cached prefix already holds a result stored after it; the cache
    is neither used nor moved back by such a read."""
    with sessionmaker() as s:
        tid, ids = _duel_tournament(s, "seen", 3)
        _store(s, ids[0], 2.0)
        seen = ResultsSeen(indices=frozenset({0, 1, 2}), with_result=frozenset({0}))
        _store(s, ids[1], 3.0)  # stored after the read
        t = s.get(Tournament, tid)
        assert sum(r.games for r in tournament_standings(s, t)) == 4  # a plain read: both (two seats each)
        assert s.get(StandingsCache, tid).prefix_index == 1
        report = tournament_report(s, t, seen)
        assert sum(r.games for r in report.rows) == 2  # the read saw one result
        assert s.get(StandingsCache, tid).prefix_index == 1  # not moved back
        by = {r.entrant: r for r in report.rows}
        assert by["a"].total_score == 2.0 and by["b"].total_score == -2.0


def test_the_board_is_one_read_that_agrees_with_itself(sessionmaker):
    """read_board: progress, playing now, the page of the table and the standings from one
    read of the matches (the page's match statuses are the read's, not the rows' later ones)."""
    with sessionmaker() as s:
        tid, ids = _duel_tournament(s, "board", 4)
        _store(s, ids[0], 1.0)
        _store(s, ids[2], -1.0)
        s.get(Match, ids[3]).status = MatchStatus.QUEUED
        s.commit()
        board = read_board(s, s.get(Tournament, tid), _organizer(s), page=1, per_page=2)
        assert (board.finished, board.total, board.counts) == (2, 4, {"finished": 2, "running": 1, "queued": 1})
        assert [line.id for line in board.playing] == [ids[1]] and board.playing_total == 1
        assert [(line.id, line.status) for line in board.rows] == [(ids[0], "finished"), (ids[1], "running")]
        assert board.rows[0].result is not None and board.rows[1].result is None
        assert (board.page, board.pages, board.shown) == (1, 2, 4)
        assert sum(r.matches for r in board.report.rows) == 2 * board.finished
        second = read_board(s, s.get(Tournament, tid), _organizer(s), page=9, per_page=2)  # clamped
        assert second.page == 2 and [line.id for line in second.rows] == ids[2:]


def _organizer(s) -> Account:
    return s.scalars(select(Account).where(Account.role == "organizer")).first()


def test_a_result_stored_while_a_read_holds_its_match_is_loaded(sessionmaker):
    """A read that loaded a match before its result landed (the board's match lines) and then
    folds the standings: the result, committed meanwhile by a worker, is read, not the match's
    stale empty one (CI: "match 7 has no result" on a tournament page under load)."""
    with sessionmaker() as reader, sessionmaker() as worker:
        tid, ids = _duel_tournament(reader, "stale", 2)
        held = reader.scalars(select(Match).where(Match.id == ids[0]).options(selectinload(Match.result))).one()
        assert held.result is None
        _store(worker, ids[0], 2.0)
        records = load_records(reader, tid)
        assert [r.index for r in records] == [0] and list(records[0].scores) == [2.0, -2.0]
        report = tournament_report(reader, reader.get(Tournament, tid))
        assert {r.entrant: r.total_score for r in report.rows} == {"a": 2.0, "b": -2.0}
