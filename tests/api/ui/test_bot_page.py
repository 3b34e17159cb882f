"""The bot page (/ui/bots/<id>): rating history, concurrency cap, paginated matches, faults,
and who sees what (arena.access). Test client against the shared ``site`` of conftest
(real matches played between sample bots, one bot faulting)."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select

from api import create_app
from api.ui import bot_forms
from arena.accounts import create_account
from arena.config import Settings
from arena.db.models import Bot, Match, MatchSeat, RatingHistory, Tournament
from arena.db.session import make_engine, make_sessionmaker
from arena.standings import tournament_standings
from tests.helpers import migrated_sqlite_url


def _client(site, who: str | None):
    c = site.app.test_client()
    if who is not None:
        r = c.post("/ui/login", data={"token": site.tokens[who], "next": "/ui/"})
        assert r.status_code == 303
    return c


def _rows(html: str, table_id: str) -> list[str]:
    body = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr (data-[a-z]+=\"[^\"]+\")", body)


def test_rating_history_is_each_finished_tournaments_standings_rating(site):
    ace = site.bots["Ace"]
    html = _client(site, "alice").get(f"/ui/bots/{ace}").get_data(as_text=True)
    with site.sessionmaker() as s:
        finished = s.scalars(
            select(Tournament).where(Tournament.status == "finished").order_by(Tournament.finished_at, Tournament.id)
        ).all()
        played = [t for t in finished if ace in [p.bot_id for p in t.participants]]
        expected = []
        for t in played:
            mine = next(st for st in tournament_standings(s, t) if st.entrant == ace)
            expected.append((t.id, f"{mine.mu:.2f}", f"{mine.sigma:.2f}", mine.rank))
    assert len(expected) == 4  # MD open, JDF cup, TM sprint, the private duel
    assert _rows(html, "rating-table") == [f'data-tournament="{tid}"' for tid, *_ in expected]
    table = html.split('id="rating-table"', 1)[1]
    for tid, mu, sigma, rank in expected:
        row = table.split(f'data-tournament="{tid}"', 1)[1].split("</tr>", 1)[0]
        assert f'{mu} <span class="muted">± {sigma}</span>' in row
        assert f">{rank} / " in row
    # one chart per rule set played, a dot per tournament of that rule set
    for rs, n in (("million_doubt", 2), ("jdf", 1), ("trump_millionaire", 1)):
        svg = html.split(f'<svg class="rating-chart" data-ruleset="{rs}"', 1)[1].split("</svg>", 1)[0]
        assert svg.count('<circle class="dot"') == n


def test_the_cap_is_the_value_the_bot_api_returns(site):
    ace = site.bots["Ace"]
    c = _client(site, "alice")
    api = c.get(f"/api/v1/bots/{ace}", headers={"Authorization": f"Bearer {site.tokens['alice']}"}).get_json()
    html = c.get(f"/ui/bots/{ace}").get_data(as_text=True)
    assert f'id="max-concurrency" data-value="{api["max_concurrency"]}"' in html
    assert f"{api['max_concurrency']} requests at once" in html


def test_matches_are_paginated(site, monkeypatch):
    ace = site.bots["Ace"]
    with site.sessionmaker() as s:
        ids = list(
            s.scalars(select(MatchSeat.match_id).where(MatchSeat.bot_id == ace).order_by(MatchSeat.match_id.desc()))
        )
    assert len(ids) > 5
    monkeypatch.setattr(bot_forms, "BOT_MATCHES_PER_PAGE", 5)
    c = _client(site, "alice")
    seen = []
    pages = -(-len(ids) // 5)
    for page in range(1, pages + 1):
        html = c.get(f"/ui/bots/{ace}?page={page}").get_data(as_text=True)
        rows = [int(x.split('"')[1]) for x in _rows(html, "bot-matches")]
        assert len(rows) == (5 if page < pages else len(ids) - 5 * (pages - 1))
        assert f"page {page} of {pages}" in html
        seen += rows
    assert seen == ids
    html = c.get(f"/ui/bots/{ace}?page=999").get_data(as_text=True)  # past the end: the last page
    assert f"page {pages} of {pages}" in html


def _fault_counts(site, bot_id: int) -> int:
    with site.sessionmaker() as s:
        total = 0
        for m, seat in s.execute(
            select(Match, MatchSeat.seat)
            .join(MatchSeat, MatchSeat.match_id == Match.id)
            .where(MatchSeat.bot_id == bot_id)
        ):
            if m.result is not None:
                total += m.result.faults[seat]
        return total


def test_faults_listed_from_the_logs_the_viewer_may_read(site):
    glitch = site.bots["Glitch"]
    n = _fault_counts(site, glitch)
    assert n > 0
    html = _client(site, "bob").get(f"/ui/bots/{glitch}").get_data(as_text=True)
    body = html.split('id="bot-faults"', 1)[1].split("</table>", 1)[0]
    assert body.count('<tr class="bad"') == n
    assert "Invalid action" in body or "invalid_action" in body
    assert 'id="faults-embargoed"' not in html


def test_fault_details_wait_for_the_end_of_a_running_tournament(site):
    """Log embargo: while the tournament runs, the owner sees the count, not the details;
    an organizer sees the details."""
    glitch = site.bots["Glitch"]
    tid = site.tournaments["jdf"]
    with site.sessionmaker() as s:
        in_jdf = s.scalar(
            select(func.count())
            .select_from(Match)
            .join(MatchSeat, MatchSeat.match_id == Match.id)
            .where(Match.tournament_id == tid, MatchSeat.bot_id == glitch)
        )
        t = s.get(Tournament, tid)
        t.status = "running"  # as if still being played
        s.commit()
    try:
        assert in_jdf
        owner = _client(site, "bob").get(f"/ui/bots/{glitch}").get_data(as_text=True)
        organizer = _client(site, "olga").get(f"/ui/bots/{glitch}").get_data(as_text=True)
        assert 'id="faults-embargoed"' in owner
        owner_rows = (
            owner.split('id="bot-faults"', 1)[1].split("</table>", 1)[0].count('<tr class="bad"')
            if '<table class="grid faults" id="bot-faults"' in owner
            else 0
        )
        organizer_rows = organizer.split('id="bot-faults"', 1)[1].split("</table>", 1)[0].count('<tr class="bad"')
        assert organizer_rows == _fault_counts(site, glitch) > owner_rows
        assert 'id="faults-embargoed"' not in organizer
        jdf_links = re.findall(r'<tr class="bad" data-match="(\d+)">', owner)
        with site.sessionmaker() as s:
            assert all(s.get(Match, int(m)).tournament_id != tid for m in jdf_links)
    finally:
        with site.sessionmaker() as s:
            s.get(Tournament, tid).status = "finished"
            s.commit()


def _match_ids_on_page(html: str) -> set[int]:
    body = html.split('id="bot-matches"', 1)[1].split("</table>", 1)[0] if 'id="bot-matches"' in html else ""
    return {int(m) for m in re.findall(r'<tr data-match="(\d+)">', body)}


def _ace_matches(site, *tournaments: str) -> set[int]:
    ids = [site.tournaments[k] for k in tournaments]
    with site.sessionmaker() as s:
        return set(
            s.scalars(
                select(Match.id)
                .join(MatchSeat, MatchSeat.match_id == Match.id)
                .where(MatchSeat.bot_id == site.bots["Ace"], Match.tournament_id.in_(ids))
            )
        )


#: The owner's and organizers' parts of a bot page; the forms are the owner's alone.
DETAILS = ('id="bot-check"', 'id="bot-url"', 'id="max-concurrency"', 'id="bot-status"')
FORMS = ('id="run-check"', 'id="rotate-secret"')


@pytest.mark.parametrize(
    ("who", "tournaments", "privileged"),
    [
        (None, ("md", "jdf", "tm"), False),  # a visitor: the public tournaments
        ("carol", ("md", "jdf", "tm"), False),  # signed in, no bot in the private duel
        ("bob", ("md", "jdf", "tm", "private"), False),  # his Rando played the private duel
        ("olga", ("md", "jdf", "tm", "private"), True),  # organizers see everything
        ("alice", ("md", "jdf", "tm", "private"), True),  # the owner
    ],
)
def test_a_bot_page_is_public_where_its_tournaments_are(site, who, tournaments, privileged):
    """Issue 42, point 10: anyone opens a rated bot's page: its ratings, its rating history
    (tournaments the viewer may read: a visitor the public ones) and the matches the viewer
    may read; the owner's parts (check and its details, secret rotation, URL, cap) stay
    with the owner and organizers."""
    ace = site.bots["Ace"]
    r = _client(site, who).get(f"/ui/bots/{ace}")
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    assert _match_ids_on_page(html) == _ace_matches(site, *tournaments)
    history = {int(t) for t in re.findall(r'<tr data-tournament="(\d+)">', html)}
    readable = {site.tournaments[k] for k in tournaments}
    assert history == (readable if who is None else readable | {site.tournaments["private"]})
    assert 'id="ratings"' in html or "Not rated yet" in html
    for part in DETAILS:
        assert (part in html) == privileged, part
    for part in FORMS:
        assert (part in html) == (who == "alice"), part
    if not privileged:
        assert 'id="bot-owner">alice<' in html and "http://127.0.0.1:9/" not in html


def test_a_bot_in_no_tournament_the_viewer_reads_is_not_shown(site):
    """A bot neither rated nor entered in a tournament the viewer may read: a visitor is asked
    to sign in, another account gets 404 (its existence is not told); a deleted bot is 404
    for everyone, its owner included."""
    with site.sessionmaker() as s:
        quiet = Bot(
            owner_id=site.accounts["carol"], name="Quiet", url="http://127.0.0.1:9/", rulesets=["jdf"], secret="s"
        )
        gone = Bot(
            owner_id=site.accounts["carol"], name="Gone", url="http://127.0.0.1:9/", rulesets=["jdf"], secret="s"
        )
        gone.status = "deleted"
        s.add_all([quiet, gone])
        s.commit()
        quiet_id, gone_id = quiet.id, gone.id
    try:
        assert _client(site, None).get(f"/ui/bots/{quiet_id}").status_code == 401
        assert _client(site, "bob").get(f"/ui/bots/{quiet_id}").status_code == 404
        assert _client(site, "carol").get(f"/ui/bots/{quiet_id}").status_code == 200
        assert _client(site, "olga").get(f"/ui/bots/{quiet_id}").status_code == 200
        for who in (None, "bob", "carol", "olga"):
            assert _client(site, who).get(f"/ui/bots/{gone_id}").status_code == 404
    finally:
        with site.sessionmaker() as s:
            s.query(Bot).filter(Bot.id.in_([quiet_id, gone_id])).delete()
            s.commit()


def test_rating_history_shows_the_rating_across_tournaments_after_each(site):
    """The last column of the rating history is the ``rating_history`` row of that
    tournament (the cross-tournament rating as it stood after it), a dash without one."""
    ace, md = site.bots["Ace"], site.tournaments["md"]
    with site.sessionmaker() as s:
        s.add(
            RatingHistory(
                ruleset="million_doubt", bot_id=ace, tournament_id=md, position=0, mu=27.125, sigma=6.5, games=4
            )
        )
        s.commit()
    try:
        html = _client(site, "alice").get(f"/ui/bots/{ace}").get_data(as_text=True)
        table = html.split('id="rating-table"', 1)[1].split("</table>", 1)[0]
        row = table.split(f'data-tournament="{md}"', 1)[1].split("</tr>", 1)[0]
        assert '<td class="num after">27.12 <span class="muted">± 6.50</span></td>' in row
        other = table.split(f'data-tournament="{site.tournaments["jdf"]}"', 1)[1].split("</tr>", 1)[0]
        assert '<td class="num after"><span class="muted">–</span></td>' in other
    finally:
        with site.sessionmaker() as s:
            s.query(RatingHistory).delete()
            s.commit()


def test_reloading_the_register_answer_registers_no_second_bot(tmp_path):
    """The register form is answered by the new bot's page (its secret shown once, so no
    redirect); a reload sends the same form again, and gets that bot's page back, without
    the secret, instead of a second bot. A new form (a new form id) registers again."""
    url = migrated_sqlite_url(tmp_path / "arena.db")
    engine_ = make_engine(url)
    sm = make_sessionmaker(engine_)
    app = create_app(
        Settings(
            data_dir=tmp_path,
            database_url=url,
            broker_url="redis://127.0.0.1:1/0",
            allow_private_bot_urls=True,
            rate_limits=False,
        ),
        engine=engine_,
    )
    with sm() as s:
        _mika, token = create_account(s, "mika", "contestant")
        s.commit()
    c = app.test_client()
    assert c.post("/ui/login", data={"token": token, "next": "/ui/"}).status_code == 303

    def form() -> dict:
        html = c.get("/ui/bots").get_data(as_text=True)
        return {
            "csrf": re.search(r'name="csrf" value="([^"]+)"', html).group(1),
            "form_id": re.search(r'name="form_id" value="([0-9a-f]{32})"', html).group(1),
            "name": "Kestrel",
            "url": "http://127.0.0.1:9/",
            "rulesets": ["jdf"],
        }

    def bots() -> list[int]:
        with sm() as s:
            return list(s.scalars(select(Bot.id).order_by(Bot.id)))

    sent = form()
    first = c.post("/ui/bots", data=sent)
    assert first.status_code == 201
    assert bots() and len(bots()) == 1
    secret = re.search(r'id="secret-value">([^<]+)<', first.get_data(as_text=True)).group(1)
    again = c.post("/ui/bots", data=sent)  # the browser's reload
    html = again.get_data(as_text=True)
    assert again.status_code == 200 and "This form was sent already" in html
    assert len(bots()) == 1 and f"#{bots()[0]}" in html
    assert secret not in html and 'id="secret-card"' not in html  # shown once only
    assert c.post("/ui/bots", data=form()).status_code == 201  # a new form: a second bot
    assert len(bots()) == 2
    engine_.dispose()


def test_times_from_the_api_are_shown_as_the_pages_show_theirs():
    """The bot page's check and registration times come from the API as ISO 8601 text; the
    pages show them as every other time, in UTC to the minute."""
    from datetime import datetime

    from api.ui.views import _when

    want = "2026-12-01 19:46 UTC"
    assert _when("2026-12-01T19:46:15.123456+00:00") == want
    assert _when("2026-12-01T21:46:59+02:00") == want  # another offset: converted
    assert _when("2026-12-01T19:46:15") == want == _when(datetime(2026, 12, 1, 19, 46, 15))
    assert _when(None) == "—" and _when("soon") == "soon"


def test_the_checks_warnings_are_shown_in_the_readers_language(site):
    """The warnings of the last check come from their codes (warning_codes), translated; an
    outcome stored before the codes shows its English text."""
    ace = site.bots["Ace"]
    english = "the bot answered a badly signed request with HTTP 200, not 401: ..."
    with site.sessionmaker() as s:
        bot = s.get(Bot, ace)
        before = bot.last_check
        bot.last_check = {
            **(before or {"ok": True, "conformance": []}),
            "warnings": [english, "an older warning"],
            "warning_codes": [{"code": "signature_not_refused", "params": {"status": 200}}],
        }
        s.commit()
    try:
        c = _client(site, "alice")
        en = c.get(f"/ui/bots/{ace}").get_data(as_text=True)
        assert "⚠ the bot answered a badly signed request with HTTP 200, not 401: it does not check" in en
        assert "⚠ an older warning" in en
        c.get("/ui/lang/ja")
        ja = c.get(f"/ui/bots/{ace}").get_data(as_text=True)
        assert "⚠ 署名の不正なリクエストにボットが 401 ではなく HTTP 200 で答えました。" in ja
        assert "⚠ an older warning" in ja and english not in ja
    finally:
        with site.sessionmaker() as s:
            s.get(Bot, ace).last_check = before
            s.commit()


@pytest.mark.parametrize("gateway", ["ws://127.0.0.1:8765/v1/bots", ""])
def test_a_bot_that_connects_gets_the_command_that_runs_it(tmp_path, gateway):
    """The register answer of a bot that connects shows, with its secret, the one command that
    runs it (``arena bots connect`` with its id and the arena's gateway); later visits show the
    same command with a placeholder for the secret, shown once only. Without ARENA_GATEWAY_URL
    the page says so. Another viewer (an organizer) gets no command."""
    import html as html_lib

    url = migrated_sqlite_url(tmp_path / "arena.db")
    engine_ = make_engine(url)
    sm = make_sessionmaker(engine_)
    app = create_app(
        Settings(
            data_dir=tmp_path,
            database_url=url,
            broker_url="redis://127.0.0.1:1/0",
            rate_limits=False,
            gateway_url=gateway,
        ),
        engine=engine_,
    )
    with sm() as s:
        _mika, token = create_account(s, "mika", "contestant")
        _boss, boss_token = create_account(s, "boss", "organizer")
        s.commit()
    c = app.test_client()
    assert c.post("/ui/login", data={"token": token, "next": "/ui/"}).status_code == 303
    page = c.get("/ui/bots").get_data(as_text=True)
    answer = c.post(
        "/ui/bots",
        data={
            "csrf": re.search(r'name="csrf" value="([^"]+)"', page).group(1),
            "form_id": re.search(r'name="form_id" value="([0-9a-f]{32})"', page).group(1),
            "name": "Laptop",
            "transport": "connect",
            "rulesets": ["million_doubt"],
        },
    )
    assert answer.status_code == 201
    html = answer.get_data(as_text=True)
    with sm() as s:
        bot = s.scalars(select(Bot)).one()
        bot_id, secret = bot.id, bot.secret
    command = re.search(r'<code id="connect-command" data-with-secret="1">([^<]+)</code>', html).group(1)
    where = f" --gateway {gateway}" if gateway else ""
    assert command == f"ARENA_BOT_SECRET={secret} arena bots connect --bot-id {bot_id}{where} greedy"
    assert "proves to the arena that it holds this secret" in html
    assert ('id="no-gateway"' in html) == (not gateway)

    later = c.get(f"/ui/bots/{bot_id}").get_data(as_text=True)
    assert secret not in later
    command = re.search(r'<code id="connect-command" data-with-secret="0">([^<]+)</code>', later).group(1)
    assert html_lib.unescape(command) == (
        f"ARENA_BOT_SECRET=<its signing secret> arena bots connect --bot-id {bot_id}{where} greedy"
    )
    assert "over all its connections" in later and "endpoint (URL)" not in later
    assert "pip install . in a checkout" in later and "pip install daifugo-arena" not in later
    # a program of one's own (a starter, any language) is run with the same variables
    program = re.search(r'<code id="program-command" data-with-secret="1">([^<]+)</code>', html).group(1)
    where_to = gateway or "<the gateway URL>"
    assert html_lib.unescape(program) == (
        f"ARENA_BOT_ID={bot_id} ARENA_GATEWAY_URL={where_to} ARENA_BOT_SECRET={secret} <your program>"
    )
    assert 'arena play connect greedy --run "&lt;your program&gt;"' in later  # text, not a tag

    def page_after_check(health: dict, lang: str = "en") -> str:
        with sm() as s:
            s.get(Bot, bot_id).last_check = {"ok": health["ok"], "url": {"ok": True, "error": None}, "health": health}
            s.commit()
        c.get(f"/ui/lang/{lang}")
        return c.get(f"/ui/bots/{bot_id}").get_data(as_text=True)

    # its last check met a program that is no sample bot: "your program", no sample command
    java = page_after_check({"ok": True, "status": None, "elapsed_ms": 2.0, "name": "java-starter", "error": None})
    assert 'id="connect-command"' not in java and 'id="program-command" data-with-secret="0"' in java
    assert "Its last check met java-starter, a program of your own" in java
    assert "in place of &lt;your program&gt;:" in java
    java_ja = page_after_check(
        {"ok": True, "status": None, "elapsed_ms": 2.0, "name": "java-starter", "error": None}, "ja"
    )
    assert "（&lt;あなたのプログラム&gt; の所に" in java_ja
    c.get("/ui/lang/en")
    # a sample bot: the sample's own command
    sample = page_after_check({"ok": True, "status": None, "elapsed_ms": 2.0, "name": "heuristic", "error": None})
    command = re.search(r'<code id="connect-command" data-with-secret="0">([^<]+)</code>', sample).group(1)
    assert command.endswith(" heuristic") and "Its last check met the sample bot heuristic" in sample
    # a failed check says which step the bot reached, in the page's language
    dropped = {
        "ok": False,
        "status": None,
        "elapsed_ms": 5001.0,
        "name": None,
        "step": "auth_failed",
        "error": "the bot connected 4 s ago but failed authentication (close 4401: ...)",
        "error_code": {"code": "dial_auth_failed", "params": {"ago_s": 4, "wait_s": "5", "code": 4401, "meaning": ""}},
    }
    en = page_after_check(dropped)
    assert re.search(r'<span id="health-error" data-step="auth_failed">the bot connected 4 s ago but failed', en)
    ja = page_after_check(dropped, "ja")
    assert "ボットは 4 秒前に接続しましたが、認証に失敗しました" in ja
    c.get("/ui/lang/en")

    # its check, as the worker stores it for a bot that connects: no URL step, a health answer
    # over its connection without an HTTP status
    with sm() as s:
        s.get(Bot, bot_id).last_check = {
            "ok": True,
            "url": {"ok": True, "error": None},
            "health": {"ok": True, "status": None, "elapsed_ms": 3.04, "name": "laptop", "error": None},
            "signature": {"ok": True, "status": 4401, "warning": None},
            "conformance": [],
        }
        s.commit()
    checked = c.get(f"/ui/bots/{bot_id}").get_data(as_text=True)
    table = checked.split('id="check-table"', 1)[1].split("</table>", 1)[0]
    assert 'data-step="url"' not in table and "HTTP None" not in table
    assert "Health (over its connection)</td><td>✔</td>" in table and "3.0 ms · laptop" in table
    assert "closed with 4401" in table
    c.get("/ui/lang/ja")
    ja = c.get(f"/ui/bots/{bot_id}").get_data(as_text=True)
    assert "死活確認（接続経由）" in ja and "3.0 ミリ秒 · laptop" in ja and "<h2>登録したボット</h2>" not in ja
    assert "<h2>登録したボット</h2>" in c.get("/ui/bots").get_data(as_text=True)

    boss = app.test_client()
    assert boss.post("/ui/login", data={"token": boss_token, "next": "/ui/"}).status_code == 303
    seen = boss.get(f"/ui/bots/{bot_id}").get_data(as_text=True)
    assert 'id="bot-connection"' in seen and 'id="connect-command"' not in seen
    engine_.dispose()
