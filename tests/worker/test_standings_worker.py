"""Issue 28 end to end: a small tournament played by a real Celery worker process over Redis
and PostgreSQL, against SDK bots over HTTP; then the standings with their significance and
the leaderboard read through the API served over HTTP and through the ``arena`` command line.

The worker stores results without a par (the par task is another's); the test then writes a
par into every stored game, as that task does (``"par": [per seat]`` in
``match_results.games``), and reads again: the adjusted order, the ratings from adjusted
scores (rebuilt as the worker does, ``arena.followups.update_ratings``).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import httpx
import pytest
from click.testing import CliRunner
from openskill.models import PlackettLuce
from sqlalchemy import select

from api import create_app
from arena.db.models import Match, MatchResult, Rating
from arena.followups import update_ratings
from arena.ranking import compute_report, game_ranks
from bots_sdk.samples import SAMPLE_BOTS
from daifugo_arena.cli import main
from daifugo_arena.cli.display import settled_lines
from daifugo_arena.cli.servers import WsgiServer
from tests.worker.conftest import SwitchBot
from tests.worker.test_tournaments import _records_from_logs

pytestmark = pytest.mark.services

KINDS = ["heuristic", "greedy", "random"]


def _cli(*args: str) -> str:
    done = CliRunner().invoke(main, list(args))
    assert done.exit_code == 0, done.output
    return done.stdout


def _expected_ratings(records) -> dict:
    """openskill by hand: one update per game, ranks by adjusted score where there is a par."""
    model = PlackettLuce()
    ratings: dict = {}
    for rec in sorted(records, key=lambda r: r.index):
        tau = model.tau / math.sqrt(len(rec.games))
        for g in rec.games:
            current = [[ratings.get(b, model.rating())] for b in rec.seats]
            for b, team in zip(rec.seats, model.rate(current, ranks=game_ranks(g, len(rec.seats)), tau=tau)):
                ratings[b] = team[0]
    return ratings


def test_standings_and_leaderboard_of_a_tournament_played_by_a_worker(arena, bots, celery_worker_factory):
    for i, k in enumerate(KINDS):
        bots.append(SwitchBot(SAMPLE_BOTS[k](seed=i)))
    ids = [arena.register(b, ["million_doubt"], f"{k}-{i}") for i, (b, k) in enumerate(zip(bots, KINDS))]
    names = {b: f"{k}-{i}" for i, (b, k) in enumerate(zip(ids, KINDS))}
    tid = arena.create("million_doubt", ids, games_per_pairing=6)
    worker = celery_worker_factory(concurrency=2, database_url=arena.database_url)
    arena.start(tid)
    assert arena.wait_finished(tid, workers=[worker])["status"] == "finished"
    token = arena.org["Authorization"].removeprefix("Bearer ")
    server = WsgiServer(create_app(arena.settings, engine=arena.engine))
    http = httpx.Client(base_url=server.url + "/api/v1", headers=arena.org, timeout=60, trust_env=False)
    try:
        # --- without a par: raw order, the neighbours' tests as the logs give them
        records = _records_from_logs(arena.stored(tid))
        body = http.get(f"/tournaments/{tid}/standings").json()
        want = compute_report(records, entrants=ids).to_dict()
        assert body["order_by"] == "raw" and (body["games"], body["games_with_par"]) == (18, 0)
        assert [r["bot_id"] for r in body["rows"]] == [r["bot_id"] for r in want["rows"]]
        assert len(body["neighbours"]) == 2
        for got, exp in zip(body["neighbours"], want["neighbours"]):
            assert (got["upper_rank"], got["lower_rank"], got["significant"]) == (
                exp["upper_rank"],
                exp["lower_rank"],
                exp["significant"],
            )
            assert got["shared_games"] == 6  # one match of 6 games between each pair
            assert got["difference"] == pytest.approx(exp["difference"], abs=1e-9)
            assert got["ci95"] == pytest.approx(exp["ci95"], abs=1e-9)
        assert (body["settled"], body["top_settled"]) == (want["settled"], want["top_settled"])
        out = _cli("tournament", "standings", str(tid), "--api", server.url, "--token", token)
        for line in settled_lines(body):
            assert line in out
        assert "order by raw mean: 0 of 18 games have a par" in out and "adj. ±95%" not in out
        for r in body["rows"]:
            assert names[r["bot_id"]] in out
        as_json = json.loads(_cli("tournament", "standings", str(tid), "--api", server.url, "--token", token, "--json"))
        assert as_json == body
        # the worker rated every game (no par yet: the games' places)
        with arena.sessions() as s:
            stored = {r.bot_id: r for r in s.scalars(select(Rating).where(Rating.ruleset == "million_doubt"))}
        expected = _expected_ratings(records)
        for b in ids:
            assert stored[b].mu == pytest.approx(expected[b].mu, rel=1e-9)
            assert (stored[b].games, stored[b].matches) == (12, 2) and stored[b].last_played_at is not None

        # --- the par lands in every game (as the par task writes it): adjusted order and ratings
        with arena.sessions() as s:
            results = s.scalars(select(MatchResult).join(Match).where(Match.tournament_id == tid)).all()
            for res in results:
                res.games = [{**g, "par": [0.5 * x for x in g["scores"]]} for g in res.games]
            s.commit()
            assert update_ratings(s, "million_doubt") == 3
        records = _records_from_logs(arena.stored(tid))
        records = [
            replace(rec, games=[{**g, "par": [0.5 * x for x in g["scores"]]} for g in rec.games]) for rec in records
        ]
        body = http.get(f"/tournaments/{tid}/standings").json()
        want = compute_report(records, entrants=ids).to_dict()
        assert body["order_by"] == "adjusted" and body["games_with_par"] == 18
        for got, exp in zip(body["rows"], want["rows"]):
            assert got["bot_id"] == exp["bot_id"]
            assert got["adjusted_mean"] == pytest.approx(0.5 * got["mean_score"], abs=1e-9)
            assert got["adjusted_ci95"] == pytest.approx(exp["adjusted_ci95"], abs=1e-9)
        assert [n["significant"] for n in body["neighbours"]] == [n["significant"] for n in want["neighbours"]]
        out = _cli("tournament", "standings", str(tid), "--api", server.url, "--token", token)
        assert "order by adjusted mean (score minus par): every game has a par" in out and "adj. ±95%" in out
        assert settled_lines(body)[0] in out

        # --- the leaderboard, API and CLI (public: no token), from adjusted scores
        board = httpx.get(f"{server.url}/api/v1/leaderboard", params={"ruleset": "million_doubt"}).json()
        expected = _expected_ratings(records)
        assert [r["bot_id"] for r in board["items"]] == sorted(ids, key=lambda b: -expected[b].ordinal())
        for r in board["items"]:
            assert r["mu"] == pytest.approx(expected[r["bot_id"]].mu, rel=1e-9)
            assert (r["games"], r["matches"]) == (12, 2) and r["last_played"]
        out = _cli("leaderboard", "--ruleset", "million_doubt", "--api", server.url)
        for r in board["items"]:
            assert f"{r['bot_name']} #{r['bot_id']}" in out and f"{r['ordinal']:.2f}" in out
        board_json = json.loads(_cli("leaderboard", "-r", "million_doubt", "--api", server.url, "--json"))
        assert board_json["items"] == board["items"]
    finally:
        http.close()
        server.close()
