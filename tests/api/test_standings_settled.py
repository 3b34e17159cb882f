"""Issue 28: standings that say what is settled, ratings from games, the leaderboard page.

Results are stored with arena.lifecycle.store_result (the worker's function); a game's par is
written into ``match_results.games`` by hand, as the par task will (``"par": [per seat]``).
"""

from __future__ import annotations

import math
import random

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from openskill.models import PlackettLuce
from sqlalchemy import inspect, select, text

from arena.db.migrate import alembic_config, upgrade
from arena.db.models import Bot, Match, MatchResult, MatchSeat, Rating, StandingsCache, Tournament, utcnow
from arena.db.session import make_engine
from arena.lifecycle import store_result
from arena.ranking import compute_report, game_ranks

#: Strength of each bot of the duels below: its expected score per game against a bot of 0.
from arena.ratings import rebuild_ratings
from arena.standings import load_records, tournament_report

STRENGTH = {"strong": 3.0, "mid": 0.0, "weak": -3.0}


def _bots(s, owner_id: int, names) -> dict[str, int]:
    ids = {}
    for name in names:
        b = Bot(owner_id=owner_id, name=name, url="http://127.0.0.1:9/", rulesets=["million_doubt"], secret="s")
        b.status = "ready"
        s.add(b)
        s.flush()
        ids[name] = b.id
    return ids


def _duels(s, org_id: int, bots: dict[str, int], rounds: int, seed: int, *, par: bool, name: str = "cup") -> int:
    """A finished Million Doubt tournament: every pair of ``bots`` plays ``rounds`` matches of
    2 games; scores are strength differences plus noise (zero-sum); with ``par``, each game's
    par is the noise's luck part, so the adjusted score is nearly the strength difference."""
    rng = random.Random(seed)
    t = Tournament(
        name=name,
        organizer_id=org_id,
        ruleset="million_doubt",
        options={},
        time_rules={},
        games_per_pairing=2,
        seed=seed,
        max_faults=3,
        status="running",
        started_at=utcnow(),
    )
    s.add(t)
    s.flush()
    names = list(bots)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]] * rounds
    matches = []
    for index, (a, b) in enumerate(pairs):
        m = Match(
            tournament_id=t.id,
            index=index,
            table=index,
            seed=index,
            status="running",
            seats=[MatchSeat(seat=0, bot_id=bots[a]), MatchSeat(seat=1, bot_id=bots[b])],
        )
        s.add(m)
        matches.append((m, a, b))
    s.commit()
    for m, a, b in matches:
        games = []
        for _g in range(2):
            luck = rng.gauss(0.0, 10.0)
            x = round(STRENGTH[a] - STRENGTH[b] + luck + rng.gauss(0.0, 1.0), 3)
            g = {"scores": [x, -x], "places": [1, 2] if x > 0 else [2, 1] if x < 0 else [1, 1]}
            if par:
                g["par"] = [luck, -luck]
            games.append(g)
        total = sum(g["scores"][0] for g in games)
        assert store_result(
            s,
            m.id,
            scores=[total, -total],
            places=[1, 2] if total > 0 else [2, 1] if total < 0 else [1, 1],
            faults=[0, 0],
            games=games,
            timings={},
            log={"match": m.id},
        )
    assert s.get(Tournament, t.id).status == "finished"
    return t.id


@pytest.fixture
def league(accounts, sessionmaker):
    org = accounts.organizer("olga")
    accounts.contestant("ann")
    with sessionmaker() as s:
        bots = _bots(s, accounts.ids["ann"], ["strong", "mid", "weak"])
        s.commit()
    return {"org": org, "org_id": accounts.ids["olga"], "bots": bots}


def test_standings_api_reports_adjusted_means_neighbours_and_settled(client, league, sessionmaker):
    with sessionmaker() as s:
        tid = _duels(s, league["org_id"], league["bots"], rounds=4, seed=1, par=True)
    body = client.get(f"/api/v1/tournaments/{tid}/standings", headers=league["org"]).json
    bots = league["bots"]
    assert body["order_by"] == "adjusted" and body["games"] == body["games_with_par"] == 3 * 4 * 2
    assert [r["bot_id"] for r in body["rows"]] == [bots["strong"], bots["mid"], bots["weak"]]
    assert [r["bot_name"] for r in body["rows"]] == ["strong", "mid", "weak"]  # as the page names them
    for r in body["rows"]:
        assert r["par_games"] == r["games"] == 16
        assert r["adjusted_ci95"] < r["ci95"]  # the luck taken out narrows the interval
    assert [(n["upper_rank"], n["lower_rank"], n["shared_games"]) for n in body["neighbours"]] == [
        (1, 2, 8),
        (2, 3, 8),
    ]
    assert all(n["significant"] for n in body["neighbours"])
    assert body["settled"] is True and body["top_settled"] is True
    assert "paired" in body["test"] and "neighbours" in body["settled_rule"]
    # the API equals the report of every stored result
    with sessionmaker() as s:
        expected = compute_report(load_records(s, tid), entrants=list(bots.values())).to_dict()
    assert [n["difference"] for n in body["neighbours"]] == pytest.approx(
        [n["difference"] for n in expected["neighbours"]]
    )
    # the raw scores alone (no par) do not settle the same tournament
    with sessionmaker() as s:
        raw = _duels(s, league["org_id"], bots, rounds=4, seed=1, par=False, name="raw cup")
    body = client.get(f"/api/v1/tournaments/{raw}/standings", headers=league["org"]).json
    assert body["order_by"] == "raw" and body["games_with_par"] == 0
    assert all(r["adjusted_mean"] is None and r["par_games"] == 0 for r in body["rows"])
    assert body["settled"] is False


def test_a_par_added_after_a_read_reaches_the_cached_standings(client, league, sessionmaker):
    """The par task writes ``par`` into a result the standings cache already folded: the
    row's ``changes`` count moves (an UPDATE through SQLAlchemy adds 1), the read sees it and
    folds the tournament again, without the writer's help."""
    with sessionmaker() as s:
        tid = _duels(s, league["org_id"], league["bots"], rounds=2, seed=5, par=False)
        first = tournament_report(s, s.get(Tournament, tid))
        assert first.order_by == "raw" and s.get(StandingsCache, tid).prefix_index == 5
        results = s.scalars(
            select(MatchResult).join(Match).where(Match.tournament_id == tid).order_by(Match.index)
        ).all()
        for k, res in enumerate(results):  # par lands match by match, reads in between
            res.games = [{**g, "par": [g["scores"][0] / 2, -g["scores"][0] / 2]} for g in res.games]
            s.commit()
            assert res.changes == 1
            got = tournament_report(s, s.get(Tournament, tid))
            assert got.games_with_par == 2 * (k + 1)
            assert (
                got.to_dict() == compute_report(load_records(s, tid), entrants=list(league["bots"].values())).to_dict()
            )
        assert got.order_by == "adjusted"
        assert got.rows[0].adjusted_mean == pytest.approx(got.rows[0].mean_score / 2)
        assert s.get(StandingsCache, tid).prefix_index == 5


def test_once_games_have_a_par_the_cache_waits_for_each_results_par(client, league, sessionmaker):
    """When the tournament's games get a par, the cached prefix stops before a result still
    waiting for its par: the par landing later is folded as new, not by folding all again."""
    with sessionmaker() as s:
        tid = _duels(s, league["org_id"], league["bots"], rounds=2, seed=6, par=True)
        results = s.scalars(
            select(MatchResult).join(Match).where(Match.tournament_id == tid).order_by(Match.index)
        ).all()
        late = results[3]
        with_par = late.games
        late.games = [{k: v for k, v in g.items() if k != "par"} for g in with_par]
        s.commit()
        entrants = list(league["bots"].values())
        got = tournament_report(s, s.get(Tournament, tid))
        assert got.order_by == "raw" and got.games_with_par == 10
        assert got.to_dict() == compute_report(load_records(s, tid), entrants=entrants).to_dict()
        cache = s.get(StandingsCache, tid)
        assert cache.prefix_index == 2  # matches 0-2 cached; 3 waits for its par, 4-5 beyond it
        late.games = with_par
        s.commit()
        got = tournament_report(s, s.get(Tournament, tid))
        assert got.order_by == "adjusted"
        assert got.to_dict() == compute_report(load_records(s, tid), entrants=entrants).to_dict()
        s.refresh(cache)
        assert cache.prefix_index == 5 and cache.state["changes"] == 2  # 3 was folded new, once


def test_ratings_update_once_per_game_by_adjusted_score(client, league, sessionmaker):
    with sessionmaker() as s:
        tid = _duels(s, league["org_id"], league["bots"], rounds=3, seed=2, par=True)
        assert rebuild_ratings(s, "million_doubt") == 3
        s.commit()
        stored = {r.bot_id: r for r in s.scalars(select(Rating))}
        model = PlackettLuce()
        want = {b: model.rating() for b in league["bots"].values()}
        for rec in load_records(s, tid):
            tau = model.tau / math.sqrt(len(rec.games))
            for g in rec.games:
                teams = model.rate([[want[b]] for b in rec.seats], ranks=game_ranks(g, 2), tau=tau)
                for b, team in zip(rec.seats, teams):
                    want[b] = team[0]
        last = max(m.finished_at for m in s.scalars(select(Match).where(Match.tournament_id == tid)))
    for b, r in want.items():
        assert stored[b].mu == pytest.approx(r.mu, rel=1e-12) and stored[b].sigma == pytest.approx(r.sigma, rel=1e-12)
        assert (stored[b].games, stored[b].matches) == (12, 6)  # 6 matches of 2 games, each game an update
    board = client.get("/api/v1/leaderboard?ruleset=million_doubt").json
    bots = league["bots"]
    assert [r["bot_id"] for r in board["items"]] == [bots["strong"], bots["mid"], bots["weak"]]
    top = board["items"][0]
    assert (top["games"], top["matches"], top["owner"], top["bot_name"]) == (12, 6, "ann", "strong")
    assert top["ordinal"] == pytest.approx(top["mu"] - 3 * top["sigma"])
    assert top["last_played"].startswith(last.strftime("%Y-%m-%dT%H:%M"))


def test_leaderboard_page_in_both_languages_links_every_bot_to_its_page(client, league, sessionmaker):
    with sessionmaker() as s:
        _duels(s, league["org_id"], league["bots"], rounds=1, seed=3, par=True)
        rebuild_ratings(s, "million_doubt")
        s.commit()
    html = client.get("/ui/leaderboard").get_data(as_text=True)
    assert 'id="nav-leaderboard"' in html and "Conservative rating (μ − 3σ)" in html
    assert html.count('<tr data-bot="') == 3
    assert all(f'href="/ui/bots/{b}"' in html for b in league["bots"].values())  # for everyone (issue 42)
    ja = client.get("/ui/leaderboard?ruleset=million_doubt", headers={"Accept-Language": "ja"}).get_data(as_text=True)
    assert "ランキング" in ja and "保守的レーティング (μ − 3σ)" in ja and "ミリオンダウト" in ja
    empty = client.get("/ui/leaderboard?ruleset=jdf").get_data(as_text=True)
    assert 'id="no-ratings"' in empty
    assert client.get("/ui/leaderboard?ruleset=go").status_code == 404
    # a visitor opens a rated bot's page (its public profile)
    page = client.get(f"/ui/bots/{league['bots']['strong']}")
    assert page.status_code == 200 and 'id="ratings"' in page.get_data(as_text=True)


def test_standings_page_says_whether_the_ranking_is_settled(client, league, sessionmaker):
    with sessionmaker() as s:
        settled = _duels(s, league["org_id"], league["bots"], rounds=4, seed=1, par=True)
        open_ = _duels(s, league["org_id"], league["bots"], rounds=1, seed=7, par=False, name="short")
    html = client.get(f"/ui/tournaments/{settled}").get_data(as_text=True)
    assert 'data-settled="true"' in html and "Ranking settled" in html and "First place settled." in html
    assert "Order by adjusted mean (score minus par): every game has a par." in html
    ja = client.get(f"/ui/tournaments/{open_}", headers={"Accept-Language": "ja"}).get_data(as_text=True)
    assert 'data-settled="false"' in ja and "順位未確定" in ja and "ゲーム数不足" in ja  # 1 round: too few
    assert "並び順：素点の平均。パーがあるのは 6 ゲーム中 0 ゲームです。" in ja


def test_migration_0013_adds_the_rating_columns_and_result_changes(database_url):
    """Ratings and results stored before 0013 keep their rows: ``matches`` 0, ``last_played_at``
    null, ``changes`` 0 (the next rebuild fills the ratings); the downgrade drops the columns."""
    before = ScriptDirectory.from_config(alembic_config()).get_revision("0013").down_revision
    engine = make_engine(database_url)
    now = utcnow()
    try:
        upgrade(engine=engine, revision=before)
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO accounts (id, name, role, token_hash, created_at)"
                    " VALUES (1, 'al', 'organizer', :h, :n)"
                ),
                {"h": "a" * 64, "n": now},
            )
            conn.execute(
                text(
                    "INSERT INTO bots (id, owner_id, name, url, rulesets, secret, status, created_at, updated_at)"
                    " VALUES (7, 1, 'old', 'http://old.example/', '[]', 'x', 'ready', :n, :n)"
                ),
                {"n": now},
            )
            conn.execute(
                text(
                    "INSERT INTO ratings (ruleset, bot_id, mu, sigma, games, updated_at)"
                    " VALUES ('jdf', 7, 30.0, 2.0, 12, :n)"
                ),
                {"n": now},
            )
        upgrade(engine=engine)
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT bot_id, games, matches, last_played_at FROM ratings")).all()
        assert [tuple(r) for r in rows] == [(7, 12, 0, None)]
        assert "changes" in {c["name"] for c in inspect(engine).get_columns("match_results")}
        command.downgrade(alembic_config(engine=engine), before)
        assert not {"matches", "last_played_at"} & {c["name"] for c in inspect(engine).get_columns("ratings")}
        assert "changes" not in {c["name"] for c in inspect(engine).get_columns("match_results")}
    finally:
        engine.dispose()


def test_rated_tournaments_is_the_one_selection(sessionmaker, league):
    """Every tournament of the rule set is rated today; the ratings read no other selection."""
    from arena.ratings import rated_tournaments

    with sessionmaker() as s:
        tid = _duels(s, league["org_id"], league["bots"], rounds=1, seed=4, par=False)
        assert list(s.scalars(select(Tournament.id).where(rated_tournaments("million_doubt")))) == [tid]
        assert list(s.scalars(select(Tournament.id).where(rated_tournaments("jdf")))) == []
