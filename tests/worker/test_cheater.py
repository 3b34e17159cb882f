"""The cheater (issue 14): a contestant who wants to win at any cost, with its own token only.

Its bot is a real HTTP server that records every request it is sent; its client polls every
GET endpoint of the REST API and every page (``/ui``, signed in with its token) while a Trump
Millionaire tournament runs on a real Celery worker with PostgreSQL and Redis. Afterwards the
stored full logs (the organizer's) say what the deals were, and the test asserts that nothing
the cheater saw while the tournament ran held a card list of any deal, a seed (tournament,
match, attempt or game) or the salt, or another bot's URL, and that no bot met a deal twice.
"""

from __future__ import annotations

import json
import re
import time
import uuid

import pytest

import engine
from arena.runner.replay import check_fairness
from engine.frames import frames
from tests.worker.conftest import FINISH_TIMEOUT_S, SwitchBot

pytestmark = pytest.mark.services

SEED = 7_346_190_552_001_337
#: Lists of at least this many card codes in a response are compared with the deals.
MIN_CARDS = 4
CARD_LIST = re.compile(r'\[\s*(?:"[0-9A-Z]{2,3}"\s*,\s*){' + str(MIN_CARDS - 1) + r',}"[0-9A-Z]{2,3}"\s*\]')


class RecordingBot(SwitchBot):
    """A SwitchBot that keeps every POST body it receives (the cheater's memory)."""

    def __init__(self, *a, **kw):
        self.received: list[bytes] = []
        super().__init__(*a, **kw)

    def wsgi(self, environ, start_response):
        if environ["REQUEST_METHOD"] == "POST":
            import io

            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length)
            self.received.append(body)
            environ["wsgi.input"] = io.BytesIO(body)
        return super().wsgi(environ, start_response)


def _card_lists(text: str) -> list[tuple[int, ...]]:
    """Every JSON list of MIN_CARDS or more card codes in ``text``, as sorted card tuples."""
    out = []
    for m in CARD_LIST.finditer(text):
        try:
            out.append(tuple(sorted(engine.parse_cards(json.loads(m.group(0))))))
        except (engine.CardError, ValueError):
            continue
    return out


def _dealt_hands(log: dict) -> list[tuple[int, int, int, tuple[int, ...]]]:
    """(game, unit, seat, sorted hand) at the start of every deal (unit) of every game."""
    out = []
    for gm in log["games"]:
        seen: set[int] = set()
        for fr in frames(gm["engine_log"]):
            if fr["unit"] in seen:
                continue
            seen.add(fr["unit"])
            for seat, hand in enumerate(fr["hands"]):
                out.append((gm["index"], fr["unit"], seat, tuple(sorted(engine.parse_cards(hand)))))
    return out


def _stream_head(client, path: str) -> tuple[int, str]:
    """Status and first chunk of a live stream (``/ui/.../live``), then the stream is closed.
    What a contestant's live stream may carry is tested message by message against the
    engine's full view in ``tests/api/ui/test_live_public.py`` (the public channel shows played
    cards, which this test's deal-subset check would flag)."""
    resp = client.get(path, buffered=False)
    try:
        head = next(iter(resp.response), b"") if resp.status_code == 200 else resp.get_data()
    finally:
        resp.close()
    return resp.status_code, head.decode() if isinstance(head, bytes) else str(head)


def _subset(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    rest = list(big)
    for c in small:
        if c not in rest:
            return False
        rest.remove(c)
    return True


def test_a_cheating_contestant_learns_no_card_seed_or_url(arena, bots, celery_worker_factory):
    client = arena.client
    # The cheater: one bot, its own account. Three opponents of another account.
    r = client.post("/api/v1/accounts", json={"name": "rival-" + uuid.uuid4().hex[:6]})
    assert r.status_code == 201
    rival = {"Authorization": f"Bearer {r.json['token']}"}
    cheater_token = arena.owner["Authorization"].split()[1]
    cheat = RecordingBot(engine_bot("heuristic", 1), mode="sleep", sleep_s=0.01)
    bots.append(cheat)
    cheat_id = arena.register(cheat, ["trump_millionaire"], "cheater")
    others = []
    for i, kind in enumerate(["greedy", "heuristic", "random"]):
        srv = SwitchBot(engine_bot(kind, 10 + i), mode="sleep", sleep_s=0.01)
        bots.append(srv)
        rr = client.post(
            "/api/v1/bots",
            json={"name": f"rival-{i}", "url": srv.url, "rulesets": ["trump_millionaire"]},
            headers=rival,
        )
        assert rr.status_code == 201
        srv.set_secret(rr.json["secret"])
        assert arena.eager_client.post(f"/api/v1/bots/{rr.json['id']}/check", headers=rival).json["status"] == "passed"
        others.append((rr.json["id"], srv))
    ids = [cheat_id] + [b for b, _ in others]
    tid = arena.create(
        "trump_millionaire",
        ids,
        seed=SEED,
        games_per_pairing=2,
        options={"target_score": 20},
        public_when_finished=True,
    )
    cheat.received.clear()  # the check's requests are not part of the tournament

    # Every GET route of the app, with the ids a cheater would try (all matches, all bots).
    app = client.application
    routes = sorted(
        {
            r.rule
            for r in app.url_map.iter_rules()
            if "GET" in r.methods
            and (r.rule.startswith("/api/v1") or r.rule.startswith("/ui"))
            and "static" not in r.rule
            and r.rule != "/ui/login"
        }
    )
    cheat_client = app.test_client()
    signed = cheat_client.post("/ui/login", data={"token": cheater_token, "next": "/ui/"})
    assert signed.status_code == 303  # signed in to the pages
    api_auth = {"Authorization": f"Bearer {cheater_token}"}

    worker = celery_worker_factory(concurrency=1, database_url=arena.database_url)
    started = arena.start(tid)
    assert started["seed"] is None and started["seed_chosen"]  # not even the organizer sees it now
    match_ids = [m["id"] for m in arena.get(f"/tournaments/{tid}/matches?per_page=100")["items"]]
    bot_ids = ids + [max(ids) + 1]

    def paths(rule: str) -> list[str]:
        rule = re.sub(r"<int[^>]*:tournament_id>", str(tid), rule)
        if "match_id" in rule:
            return [re.sub(r"<int[^>]*:match_id>", str(m), rule) for m in match_ids]
        if "bot_id" in rule:
            return [re.sub(r"<int[^>]*:bot_id>", str(b), rule) for b in bot_ids]
        if rule.endswith("/leaderboard"):
            return [rule + "?ruleset=trump_millionaire"]
        if rule.endswith("/matches") or rule.endswith("/tournaments"):
            return [rule + "?per_page=100"]
        return [rule]

    seen: list[tuple[float, str, int, str]] = []  # (time, path, status, body)
    covered: set[str] = set()
    deadline = time.monotonic() + FINISH_TIMEOUT_S
    rounds = 0
    while time.monotonic() < deadline:
        status = arena.get(f"/tournaments/{tid}")["status"]
        if status != "running":
            break
        this_round = []
        for rule in routes:
            for path in paths(rule):
                if path.endswith("/live"):  # a server-sent event stream (lasts as long as the match)
                    this_round.append((time.time(), path, *_stream_head(cheat_client, path)))
                    continue
                resp = cheat_client.get(path, headers=api_auth if path.startswith("/api/") else None)
                this_round.append((time.time(), path, resp.status_code, resp.get_data(as_text=True)))
        if arena.get(f"/tournaments/{tid}")["status"] == "running":  # all of it seen while running
            rounds += 1
            seen += this_round
            covered |= {rule for rule in routes}
        time.sleep(0.05)
    final = arena.wait_finished(tid, workers=[worker])
    assert final["status"] == "finished" and rounds >= 1
    assert covered == set(routes)

    # What there was to learn: the stored full logs.
    stored = arena.stored(tid)
    assert len(stored) == len(match_ids) == 8  # 1 table x 4 rotations x 2 rounds
    t_org = arena.get(f"/tournaments/{tid}")
    secrets_ = {str(SEED), t_org["salt"]}
    hands = []
    for m, _res, log in stored:
        secrets_ |= {str(m.seed), str(log["seed"])} | {str(g["seed"]) for g in log["games"]}
        hands += [(m.id, *h) for h in _dealt_hands(log)]
    other_urls = {srv.url for _, srv in others} | {srv.url.split("//")[1].rstrip("/") for _, srv in others}

    # 1. The API and the pages while the tournament ran: no card list of any deal, no seed,
    #    no salt, no other bot's URL; logs refused (embargo).
    for _when, path, code, body in seen:
        for s in secrets_:
            assert s not in body, (path, "a seed or the salt")
        for u in other_urls:
            assert u not in body, (path, "another bot's URL")
        for cards in _card_lists(body):
            assert not any(_subset(cards, h[-1]) for h in hands), (path, "cards of a deal")
        if path.endswith(("/log", "/logs", "log.json", "replay.json", "logs.jsonl")):
            assert code in (401, 403, 404), (path, code)
        assert '"engine_log"' not in body and '"exchanges"' not in body, path

    # 2. The cheater's bot: no seed, no URL, never a deal twice, never another seat's hand.
    bodies = [b.decode() for b in cheat.received]
    assert bodies and all(s not in b for b in bodies for s in secrets_)
    assert all(u not in b for b in bodies for u in other_urls)
    firsts: dict[tuple[str, int, int], tuple[int, ...]] = {}
    for b in bodies:
        req = json.loads(b)
        if req.get("type") != "decision":
            continue
        key = (req["match_id"], req["game"], req["unit"])
        firsts.setdefault(key, tuple(sorted(engine.parse_cards(req["observation"]["hand"]))))
    assert len(firsts) >= len(stored)
    assert len(set(firsts.values())) == len(firsts)  # never the same hand twice
    seat_of = {m.id: next(s.seat for s in m.seats if s.bot_id == cheat_id) for m, _, _ in stored}
    for mid, _g, _u, seat, hand in hands:
        if seat == seat_of[mid]:
            continue  # its own hands (it is told those)
        for got in firsts.values():
            assert got != hand, "the cheater was dealt a hand another seat held in some deal"
    # Every deal of the tournament is distinct (no rotation, round or attempt shares one).
    all_hands = [h[-1] for h in hands]
    assert len(set(all_hands)) == len(all_hands)

    # 3. Once finished: the seed, salt and logs are open, and the deals verify.
    revealed = client.get(f"/api/v1/tournaments/{tid}", headers=api_auth).json
    assert revealed["seed"] == SEED and revealed["seed_revealed"]
    got = client.get(f"/api/v1/matches/{match_ids[0]}/log", headers=api_auth)
    assert got.status_code == 200 and all(p["url"] is None for p in got.json["players"])
    for _m, _res, log in stored:
        check_fairness(log, revealed["seed"], revealed["salt"], revealed)


def engine_bot(kind: str, seed: int):
    from bots_sdk.samples import SAMPLE_BOTS

    return SAMPLE_BOTS[kind](seed=seed)
