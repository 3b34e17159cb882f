"""The ladder pages without a browser (docs/ui.md, "Ladders"), on SQLite and PostgreSQL: the list,
a ladder's live table, sets and official table as the REST API gives them, who sees a private
ladder, the owner's forms (enter, pause, resume, withdraw), the organizer's form, and a bot's
ladder profile, public where its ladder is. The site: tests/api/ui/ladder_site.py (real sets
played between HTTP sample bots, ticks driven in-process)."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from arena.accounts import create_account
from arena.db.models import Ladder, LadderEntry, LadderMember
from arena.ladderboard import history, sets_of_bot
from tests.api.ui import ladder_site
from tests.helpers import mark_bot_checked


@pytest.fixture
def built(make_app, sessionmaker):
    app = make_app(par_rollouts=0)
    with sessionmaker() as s:
        _, token = create_account(s, "olga", "organizer")
    site = ladder_site.build(app, sessionmaker, ticks=4, organizer_token=token)
    site.app = app
    yield site
    site.close()


def _client(site, who: str | None = None):
    c = site.app.test_client()
    if who is not None:
        r = c.post("/ui/login", data={"token": site.tokens[who], "next": "/ui/"})
        assert r.status_code == 303
    return c


def _html(client, path: str, status: int = 200) -> str:
    r = client.get(path)
    assert r.status_code == status, (path, r.status_code)
    return r.get_data(as_text=True)


def _csrf(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)  # type: ignore[union-attr]


def _row(html: str, attr: str) -> str:
    return html.split(attr, 1)[1].split("</tr>", 1)[0]


def test_the_ladder_page_shows_the_apis_table_sets_and_official_table(built):
    anon = _client(built)
    listed = _html(anon, "/ui/ladders")
    assert 'id="nav-ladders"' in listed
    assert re.findall(r'<tr data-ladder="(\d+)"', listed) == [str(built.ladder)]  # the private one: not to anyone
    api = anon.get(f"/api/v1/ladders/{built.ladder}").get_json()
    page = _html(anon, f"/ui/ladders/{built.ladder}")
    rows = api["rows"]
    assert re.findall(r'<tr data-entry="(\d+)"', page.split('id="ladder-table"', 1)[1].split("</table>")[0]) == [
        str(r["entry_id"]) for r in rows
    ]
    for r in rows:
        row = _row(page, f'<tr data-entry="{r["entry_id"]}"')
        assert f'<td class="num rank">{r["rank"]}</td>' in row
        for key, label in (("mu", "μ"), ("sigma", "σ"), ("conservative", "μ − 3σ")):
            assert f'data-label="{label}">{r[key]:.2f}<' in row
        assert f'data-status="{r["status"]}"' in _row(page, f'data-entry="{r["entry_id"]}" data-bot=')
        assert ("provisional" in row) == r["provisional"]
        ahead = "" if r["ahead"] is None else ("1" if r["ahead"] else "0")
        assert f'data-ahead="{ahead}"' in row
        if r["bot_id"] is not None:
            assert f'href="/ui/bots/{r["bot_id"]}#ladder-{built.ladder}"' in row
    broken = next(r for r in rows if r["name"] == "dan-broken")
    assert broken["status"] == "paused" and broken["paused_by"] == "health"
    assert "by the ladder: forfeited 2 of its last 6 sets" in _row(page, f'<tr data-entry="{broken["entry_id"]}"')
    # recent sets: the API's, newest first, each with its replay
    sets = anon.get(f"/api/v1/ladders/{built.ladder}/sets?limit=20").get_json()
    recent = page.split('id="recent-table"', 1)[1].split("</table>", 1)[0]
    assert re.findall(r'<tr data-match="(\d+)" data-rating="(\w+)"', recent) == [
        (str(s["match_id"]), s["rating"]) for s in sets
    ]
    assert {s["rating"] for s in sets} >= {"rated", "unrated", "comparison"}
    for s in sets:
        assert f'<a href="/ui/matches/{s["match_id"]}" class="replay-link">replay</a>' in recent
    one = sets[0]["match_id"]
    assert "replay" in _html(anon, f"/ui/matches/{one}").lower()  # the set's page: public, its replay readable
    housed = next(s for s in sets if any(n.startswith("house: ") for n in s["names"]))
    sample = next(n for n in housed["names"] if n.startswith("house: ")).removeprefix("house: ")
    assert f"<td>{sample} (house)</td>" in _html(anon, f"/ui/matches/{housed['match_id']}")  # the sample it is
    # the official table and its matrix: the API's
    official = anon.get(f"/api/v1/ladders/{built.ladder}/official").get_json()
    table = page.split('id="official-table"', 1)[1].split("</table>", 1)[0]
    assert re.findall(r'<tr data-entry="(\d+)">', table) == [str(r["entry_id"]) for r in official["table"]]
    for r in official["table"]:
        assert f'<td class="num strength">{r["strength"]:+.2f}</td>' in _row(table, f'<tr data-entry="{r["entry_id"]}"')
    matrix = page.split('id="matrix"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r'<td class="([\w-]+)" data-significant="([01])"', matrix)
    flat = [
        (i, j) for i in range(len(official["matrix"]["entries"])) for j in range(len(official["matrix"]["entries"]))
    ]
    assert len(cells) == len(flat)
    for (cls, sig), (i, j) in zip(cells, flat, strict=True):
        z, significant = official["matrix"]["z"][i][j], official["matrix"]["significant"][i][j]
        assert sig == ("1" if significant else "0")
        assert cls == (
            "self" if i == j else ("sig-pos" if significant and z > 0 else "sig-neg" if significant else "nsig")
        )
    # the moving parts, alone; the collusion view for organizers only
    live = _html(anon, f"/ui/ladders/{built.ladder}/live.html")
    assert 'id="ladder-table"' in live and 'id="ladder-playing-none"' in live and "<html" not in live
    assert 'id="collusion"' not in page and 'id="collusion"' not in _html(
        _client(built, "ann"), f"/ui/ladders/{built.ladder}"
    )
    assert 'id="collusion"' in _html(_client(built, "olga"), f"/ui/ladders/{built.ladder}")
    # the tournament holding the sets is the ladder's: its page is the ladder page, the list leaves it out
    with built.app.extensions["arena"]["sessionmaker"]() as s:
        tid = s.get(Ladder, built.ladder).tournament_id
    r = _client(built, "olga").get(f"/ui/tournaments/{tid}")
    assert r.status_code == 303 and r.headers["Location"].endswith(f"/ui/ladders/{built.ladder}")
    assert f'data-tournament="{tid}"' not in _html(_client(built, "olga"), "/ui/")


def test_a_private_ladder_exists_for_its_members_only(built):
    path = f"/ui/ladders/{built.private}"
    assert 'name="token"' in _html(_client(built), path, 401)  # a visitor is asked to sign in
    assert _client(built).get(f"/ui/ladders/{built.private}/live.html").status_code == 401
    _html(_client(built, "ben"), path, 404)
    assert f'data-ladder="{built.private}"' not in _html(_client(built, "ben"), "/ui/ladders")
    member = _html(_client(built, "ann"), path)
    assert 'id="members"' not in member  # the members are listed to its owner and organizers
    organizer = _html(_client(built, "olga"), path)
    assert '<dd id="members">ann, olga</dd>' in organizer
    assert f'data-ladder="{built.private}"' in _html(_client(built, "ann"), "/ui/ladders")


def test_the_owner_enters_pauses_resumes_and_withdraws_through_the_forms(built, sessionmaker):
    c = _client(built, "ben")
    r = c.post(
        "/api/v1/bots",
        json={"name": "ben-2", "url": built.servers[0].origin + "/", "rulesets": ["million_doubt"]},
        headers=built.headers("ben"),
    )
    assert r.status_code == 201
    fresh = r.json["id"]
    page = _html(c, f"/ui/ladders/{built.ladder}")
    assert 'id="enter-form"' not in page and 'id="unready"' in page and f"ben-2 #{fresh}" in page  # not checked yet
    assert mark_bot_checked(sessionmaker, fresh, ladder_site.CHECK) == "ready"
    page = _html(c, f"/ui/ladders/{built.ladder}")
    assert f'<option value="{fresh}"' in page and f"arena ladder enter {built.ladder} --bot {fresh}" in page
    enter = f"/ui/ladders/{built.ladder}/enter"
    assert c.post(enter, data={"bot_id": fresh}).status_code == 400  # no CSRF token
    refused = c.post(
        enter, data={"csrf": _csrf(page), "bot_id": fresh, "max_concurrent": "10", "max_sets_per_hour": "3"}
    )
    assert refused.status_code == 422
    html = refused.get_data(as_text=True)
    assert 'data-field="max_concurrent">from 1 to 4 in this ladder' in html
    assert "The bot was not entered: correct the fields marked below (Sets at once)." in html
    assert 'name="max_concurrent" value="10"' in html  # the form as typed
    done = c.post(enter, data={"csrf": _csrf(page), "bot_id": fresh, "max_concurrent": "2", "max_sets_per_hour": "12"})
    assert done.status_code == 303 and done.headers["Location"].endswith(f"/ui/ladders/{built.ladder}#mine")
    entry = c.get(f"/api/v1/ladders/{built.ladder}/entries/{fresh}").get_json()
    assert (entry["status"], entry["max_concurrent"], entry["max_sets_per_hour"]) == ("active", 2, 12)
    base = f"/ui/ladders/{built.ladder}/entries/{fresh}"
    for action, status in (("pause", "paused"), ("resume", "active"), ("withdraw", "withdrawn")):
        r = c.post(f"{base}/{action}", data={"csrf": _csrf(page)})
        assert r.status_code == 303
        assert c.get(f"/api/v1/ladders/{built.ladder}/entries/{fresh}").get_json()["status"] == status
    # another account's bot: the API's refusal, as a notice on the page
    cat = _client(built, "cat")
    cat_page = _html(cat, f"/ui/ladders/{built.ladder}")
    r = cat.post(f"/ui/ladders/{built.ladder}/entries/{built.bots['ben-greedy']}/pause", data={"csrf": _csrf(cat_page)})
    assert r.status_code == 303
    notice = _html(cat, f"/ui/ladders/{built.ladder}")
    assert f"The entry was not paused: bot {built.bots['ben-greedy']} belongs to another account" in notice
    assert c.post(f"{base}/explode", data={"csrf": _csrf(page)}).status_code == 404
    # from the bot's page: back there
    bot_page = _html(c, f"/ui/bots/{built.bots['ben-greedy']}")
    assert (
        f'<input type="hidden" name="next" value="/ui/bots/{built.bots["ben-greedy"]}#ladder-{built.ladder}">'
        in bot_page
    )
    r = c.post(
        f"/ui/ladders/{built.ladder}/entries/{built.bots['ben-greedy']}/pause",
        data={"csrf": _csrf(bot_page), "next": f"/ui/bots/{built.bots['ben-greedy']}#ladder-{built.ladder}"},
    )
    assert r.headers["Location"].endswith(f"/ui/bots/{built.bots['ben-greedy']}#ladder-{built.ladder}")
    r = c.post(
        f"/ui/ladders/{built.ladder}/entries/{built.bots['ben-greedy']}/resume",
        data={"csrf": _csrf(bot_page), "next": "https://evil.example/"},
    )
    assert r.headers["Location"] == "/ui/"  # never away from the site


def test_organizers_create_ladders_through_the_form(built, sessionmaker):
    ben = _client(built, "ben")
    assert ben.get("/ui/ladders/new").status_code == 403
    assert 'id="new-ladder-link"' not in _html(ben, "/ui/ladders")
    c = _client(built, "olga")
    assert 'id="new-ladder-link"' in _html(c, "/ui/ladders")
    form = _html(c, "/ui/ladders/new")
    assert "Rule sets with one already: Million Doubt." in form
    base = {
        "csrf": _csrf(form),
        "name": "Club JDF",
        "ruleset": "jdf",
        "open": "0",
        "members": "ann, ben",
        "initial": "10",
        "increment": "1",
        "cap": "10",
        "max_faults": "3",
        "fill_with_house_bots": "1",
    }
    unknown = c.post("/ui/ladders/new", data={**base, "members": "ann, nobody"})
    assert unknown.status_code == 422
    assert 'data-field="members">no account named nobody' in unknown.get_data(as_text=True)
    again = c.post("/ui/ladders/new", data={**base, "ruleset": "million_doubt", "open": "1"})
    assert again.status_code == 409
    assert "The ladder was not created: million_doubt already has an open ladder" in again.get_data(as_text=True)
    bad = c.post(
        "/ui/ladders/new", data={**base, "ruleset": "trump_millionaire", "opt-trump_millionaire-target_score": "500"}
    )
    assert bad.status_code == 422
    html = bad.get_data(as_text=True)
    assert 'data-field="opt-trump_millionaire-target_score"' in html and 'value="500"' in html
    made = c.post("/ui/ladders/new", data={**base, "opt-jdf-five_skip": "1"})
    assert made.status_code == 303
    lid = int(made.headers["Location"].rsplit("/", 1)[1])
    with sessionmaker() as s:
        ladder = s.get(Ladder, lid)
        assert (ladder.name, ladder.ruleset, ladder.open_ruleset) == ("Club JDF", "jdf", None)
        assert ladder.tournament.options["five_skip"] is True and ladder.tournament.time_rules["cap"] == 10
        members = set(s.scalars(select(LadderMember.account_id).where(LadderMember.ladder_id == lid)))
    assert members == {built.ids["ann"], built.ids["ben"], ladder.owner_id}
    assert _client(built, "ben").get(f"/ui/ladders/{lid}").status_code == 200
    assert _client(built, "cat").get(f"/ui/ladders/{lid}").status_code == 404


def test_a_bots_ladder_profile_is_public_where_its_ladder_is(built, sessionmaker):
    anon = _client(built)
    ben = built.bots["ben-greedy"]
    page = _html(anon, f"/ui/bots/{ben}")
    assert 'id="bot-profile"' in page and "by ben" in page
    for owner_part in ('id="bot-url"', 'id="run-check"', 'id="check-result"', "max-concurrency", 'data-action="pause"'):
        assert owner_part not in page
    section = page.split(f'id="ladder-{built.ladder}"', 1)[1]
    with sessionmaker() as s:
        entry = s.scalar(select(LadderEntry).where(LadderEntry.ladder_id == built.ladder, LadderEntry.bot_id == ben))
        points = history(s, entry.id)
        recent = sets_of_bot(s, s.get(Ladder, built.ladder), ben)
    svg = section.split('<svg class="rating-chart ladder-chart"', 1)[1].split("</svg>", 1)[0]
    assert f'data-points="{len(points)}"' in svg and svg.count('<circle class="dot"') == len(points) > 0
    assert re.findall(r'<tr data-match="(\d+)">', section.split("profile-sets", 1)[1].split("</table>", 1)[0]) == [
        str(r.match_id) for r in recent
    ]
    assert f'<dd class="sets">{entry.sets}</dd>' in section
    # the broken bot: paused by the ladder, why and since when
    broken = _html(anon, f"/ui/bots/{built.bots['dan-broken']}")
    assert "Paused by the ladder" in broken and "forfeited 2 of its last 6 sets" in broken
    faults = broken.split('class="grid faults ladder-faults"', 1)[1].split("</table>", 1)[0]
    with sessionmaker() as s:
        dan = s.scalar(
            select(LadderEntry).where(
                LadderEntry.ladder_id == built.ladder, LadderEntry.bot_id == built.bots["dan-broken"]
            )
        )
        assert faults.count('<tr class="bad"') == dan.faults > 0  # every fault of its sets, from their logs
    # the new version: its parent, and the comparison on identical deals as the API gives it
    api = anon.get(f"/api/v1/ladders/{built.ladder}/entries/{built.version}").get_json()
    assert api["compare"]["sets"] >= 1
    version = _html(anon, f"/ui/bots/{built.version}")
    assert f'href="/ui/bots/{built.bots["ann-heuristic"]}">ann-heuristic #{built.bots["ann-heuristic"]}</a>' in version
    assert f'<p class="compare" data-sets="{api["compare"]["sets"]}">' in version
    assert f"{api['compare']['mean']:+.2f} points per set" in version
    parent = _html(anon, f"/ui/bots/{built.bots['ann-heuristic']}")
    assert f'Replaced by its new version <a href="/ui/bots/{built.version}#ladder-{built.ladder}"' in parent
    # a visitor reads the open ladder's section only; a member reads the private one's too
    assert f'id="ladder-{built.private}"' not in version
    assert f'id="ladder-{built.private}"' in _html(_client(built, "ann"), f"/ui/bots/{built.version}")
    # the owner's page: the bot page with its ladder sections and their forms
    own = _html(_client(built, "ben"), f"/ui/bots/{ben}")
    assert 'id="run-check"' in own and f'id="ladder-{built.ladder}"' in own and 'data-action="pause"' in own
    # a bot in no ladder the viewer reads: the bot page answers as before
    c = _client(built, "cat")
    r = c.post(
        "/api/v1/bots",
        json={"name": "solo", "url": built.servers[0].origin + "/", "rulesets": ["jdf"]},
        headers=built.headers("cat"),
    )
    solo = r.json["id"]
    assert anon.get(f"/ui/bots/{solo}").status_code == 401
    assert _client(built, "ben").get(f"/ui/bots/{solo}").status_code == 404  # nothing tells it exists
