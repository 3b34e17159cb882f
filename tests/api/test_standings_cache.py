"""Issue 15: standings reads do not recompute every match; the cached prefix gives exactly
the standings of every stored result, whatever order results land in and reads come."""

from __future__ import annotations

import random

import pytest

from arena.db.models import Account, Match, MatchSeat, StandingsCache, Tournament
from arena.lifecycle import MatchStatus, store_result
from arena.standings import compute_standings, load_records, tournament_standings


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
