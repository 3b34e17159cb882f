"""FAULT-1..3 and TIME-3 with real misbehaving HTTP servers on 127.0.0.1 (short banks)."""

from __future__ import annotations

import pytest

from arena.runner.match import run_match
from arena.runner.players import HttpPlayer, LocalPlayer
from arena.runner.replay import replay
from bots_sdk.bot import Bot
from bots_sdk.samples import GreedyBot, RandomBot
from engine.timebank import TimeRules
from tests.bots_sdk.conftest import BAD_BOT_ANSWERS_AFTER_S

SHORT = TimeRules(initial_ms=500, increment_ms=100, cap_ms=500)


def _first_fault_game(log):
    assert log["faults"], "a fault was expected"
    return log["faults"][0]


@pytest.mark.parametrize(
    "behaviour,kind",
    [
        ("sleep", "timeout"),
        ("drip_headers", "timeout"),
        ("drip_body", "timeout"),
        ("garbage", "invalid_json"),
        ("status500", "http_status"),
        ("redirect", "http_status"),
        ("huge", "body_too_large"),
        ("illegal", "invalid_action"),
    ],
)
def test_http_fault_kinds_forfeit_the_million_doubt_game(bad_bot, behaviour, kind):
    srv = bad_bot(behaviour)
    log = run_match(
        [HttpPlayer(srv.url, name="bad"), GreedyBot()],
        "million_doubt",
        seed=3,
        games=2,
        time_rules=SHORT,
        notices=False,
    )
    assert [f["kind"] for f in log["faults"]] == [kind, kind]
    for gm in log["games"]:
        bad_seat = gm["seats"].index(0)
        f = gm["faults"][0]
        assert f["seat"] == bad_seat and f["player"] == 0
        # FAULT-2 in million_doubt: the faulting seat loses with the burst score (MD-17)
        assert gm["result"]["forfeit"] == bad_seat
        assert gm["result"]["scores"][str(bad_seat)] == -11
        assert gm["result"]["scores"][str(1 - bad_seat)] == 11
        assert gm["engine_log"]["actions"][-1] == {"seat": bad_seat, "forfeit": kind}
        if kind == "timeout":
            # cut off by the bank (500 ms), long before the bot would have answered
            assert 500 <= f["elapsed_ms"] < BAD_BOT_ANSWERS_AFTER_S * 1000
    assert log["result"]["scores"] == [-22, 22]
    assert log["result"]["faults"] == [2, 0]
    if behaviour == "garbage":
        assert "not json" in log["faults"][0]["received"]
    if behaviour == "huge":
        assert len(log["faults"][0]["received"]) <= 503
    replay(log)


def test_connection_refused_is_a_connection_error(refused_url):
    log = run_match([refused_url, RandomBot(seed=1)], "million_doubt", seed=1, games=1, time_rules=SHORT, notices=True)
    f = _first_fault_game(log)
    assert f["kind"] == "connection_error"
    assert log["games"][0]["result"]["forfeit"] == log["games"][0]["seats"].index(0)
    replay(log)


def test_fault_limit_forfeits_the_rest_of_the_match(bad_bot):
    srv = bad_bot("status500")
    log = run_match(
        [HttpPlayer(srv.url), GreedyBot()],
        "million_doubt",
        seed=9,
        games=6,
        time_rules=SHORT,
        max_faults=3,
        notices=False,
    )
    assert [f["kind"] for f in log["faults"]] == ["http_status"] * 3
    assert srv.requests == 3  # games 4-6: no request at all (FAULT-3)
    for gm in log["games"][3:]:
        bad_seat = gm["seats"].index(0)
        assert gm["exchanges"] == []
        assert gm["engine_log"]["actions"] == [{"seat": bad_seat, "forfeit": "max_faults"}]
        assert gm["result"]["scores"][str(bad_seat)] == -11
    assert log["result"]["wins"] == [0, 6]
    replay(log)


def test_trump_millionaire_fault_retires_the_seat(bad_bot):
    srv = bad_bot("garbage")
    players = [RandomBot(seed=1), HttpPlayer(srv.url), RandomBot(seed=2), RandomBot(seed=3)]
    log = run_match(players, "trump_millionaire", {"target_score": 30}, seed=4, time_rules=SHORT, notices=False)
    assert [f["kind"] for f in log["faults"]] == ["invalid_json"]
    res = log["games"][0]["result"]
    assert res["retired"] == [1]
    assert res["ranks"]["1"] == 4  # a retired seat ranks below every other (FAULT-2)
    assert log["result"]["ranks"][1] == 4
    replay(log)


def test_jdf_fault_retires_the_seat_for_each_game_until_the_limit(bad_bot):
    srv = bad_bot("illegal")
    players = [RandomBot(seed=1), RandomBot(seed=2), HttpPlayer(srv.url), RandomBot(seed=3)]
    log = run_match(
        players, "jdf", {"sets": 1, "games_per_set": 4}, seed=5, time_rules=SHORT, max_faults=2, notices=False
    )
    kinds = [f["kind"] for f in log["faults"]]
    assert kinds == ["invalid_action", "invalid_action"]
    assert "[" in log["faults"][0]["detail"]  # the refusal names its rule id
    forfeits = [a for a in log["games"][0]["engine_log"]["actions"] if "forfeit" in a]
    assert all(a["seat"] == 2 for a in forfeits)
    assert [a["forfeit"] for a in forfeits][:2] == ["invalid_action", "invalid_action"]
    assert all(a["forfeit"] == "max_faults" for a in forfeits[2:]) and len(forfeits) == 4
    assert srv.requests == 2
    replay(log)


class Crasher(Bot):
    name = "crasher"

    def play(self, req):
        raise RuntimeError("bug in my bot")


class NotJson(Bot):
    def play(self, req):
        return {"type": "pass", "oops": {1, 2}}


class Chatty(Bot):
    def play(self, req):
        return {**super().play(req), "comment": "x" * 300}


@pytest.mark.parametrize(
    "bot,kind", [(Crasher(), "bot_error"), (NotJson(), "invalid_json"), (Chatty(), "invalid_action")]
)
def test_in_process_bot_faults(bot, kind):
    log = run_match([LocalPlayer(bot), GreedyBot()], "million_doubt", seed=2, games=2, time_rules=SHORT, notices=False)
    assert [f["kind"] for f in log["faults"]] == [kind, kind]
    assert log["result"]["scores"] == [-22, 22]
    replay(log)


def test_notice_errors_are_not_faults(bad_bot):
    srv = bad_bot("status500")  # answers every POST, notices included, with 500

    class Hybrid(HttpPlayer):
        def decide(self, body, timeout_s):
            return LocalPlayer(GreedyBot()).decide(body, timeout_s)

    log = run_match([Hybrid(srv.url), GreedyBot()], "million_doubt", seed=2, games=2, time_rules=SHORT, notices=True)
    assert log["faults"] == []
    assert srv.requests == 2  # match_start and match_end reached the server


@pytest.mark.parametrize(
    "url,says",
    [
        ("http://[::1", "not a valid URL"),  # httpx cannot parse it
        ("ftp://127.0.0.1/bot", "unsupported protocol"),
        ("http://xn--ls8h.la/bot", "Codepoint"),  # a real domain that IDNA 2008 refuses
        ("http://a..b/bot", "label empty"),  # the resolver refuses it
    ],
)
def test_a_url_httpx_cannot_use_is_a_connection_error(url, says):
    """FAULT-1: a bot URL that cannot be parsed, has another scheme or a host name that IDNA
    or the resolver refuses is a recorded fault, never an exception out of the match (no
    network needed: each fails before any lookup or connection)."""
    log = run_match(
        [HttpPlayer(url, name="bad"), GreedyBot()], "million_doubt", seed=5, games=2, time_rules=SHORT, notices=True
    )
    assert [f["kind"] for f in log["faults"]] == ["connection_error", "connection_error"]
    assert says in log["faults"][0]["detail"]
    assert log["result"]["scores"] == [-22, 22]
    replay(log)


def test_cookies_set_by_a_bot_are_never_sent_back():
    """The arena's requests go straight to httpx's transport: no cookie jar, so one bot cannot
    make the arena carry state from request to request (or from match to match)."""
    import threading

    from waitress.server import create_server

    from bots_sdk.server import make_app

    inner = make_app(GreedyBot())
    cookies = []

    def app(environ, start_response):
        cookies.append(environ.get("HTTP_COOKIE"))

        def with_cookie(status, headers, exc_info=None):
            return start_response(status, headers + [("Set-Cookie", "session=abc; Path=/")], exc_info)

        return inner(environ, with_cookie)

    server = create_server(app, host="127.0.0.1", port=0, threads=2)
    threading.Thread(target=server.run, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.effective_port}/"
        log = run_match(
            [HttpPlayer(url), GreedyBot()], "million_doubt", seed=2, games=2, time_rules=SHORT, notices=True
        )
    finally:
        server.close()
    assert log["faults"] == []
    asked = sum(1 for g in log["games"] for ex in g["exchanges"] if ex["player"] == 0)
    assert len(cookies) == asked + 2 > 2  # every decision request to player 0, and 2 notices
    assert set(cookies) == {None}
    replay(log)


def test_a_deadline_that_fires_late_never_cuts_the_next_request():
    """The watchdog may run a request's cut-off just as that request ends; it must then leave
    the player's next request (on the same kept-alive connection) alone."""
    import engine
    from bots_sdk import protocol
    from bots_sdk.server import start

    server = start(GreedyBot())
    try:
        g = engine.new_game("million_doubt", None, 4)
        body = protocol.dumps(
            protocol.build_request(g, g.decision().seat, match_id="m", game=0, time_rules=SHORT, remaining_ms=500)
        )
        player = HttpPlayer(server.url)
        assert player.decide(body, 5.0).fault is None
        late = player._exchange  # the request that just ended
        sock = player._sock
        player._cut_exchange(late)  # its deadline "fires" now
        assert not player._fired and player._sock is sock
        out = player.decide(body, 5.0)
        assert out.fault is None and out.action["type"] == "play"
        assert player._sock is sock  # still the same keep-alive connection
        player.close()
    finally:
        server.close()
