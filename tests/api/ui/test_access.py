"""Access rules of the /ui pages (Flask test client on the same site as the browser tests)."""

from __future__ import annotations

import json

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

from arena import crypto, matchlog
from arena.db.models import Bot, Match, MatchLog, utcnow


@pytest.fixture
def client(site):
    return site.app.test_client()


def _match_ids(site, key: str) -> list[int]:
    with site.sessionmaker() as s:
        return list(
            s.scalars(select(Match.id).where(Match.tournament_id == site.tournaments[key]).order_by(Match.index))
        )


def _signed_in(site, name: str):
    c = site.app.test_client()
    r = c.post("/ui/login", data={"token": site.tokens[name], "next": "/ui/"})
    assert r.status_code == 303 and r.headers["Location"] == "/ui/"
    return c


def test_anonymous_sees_public_finished_tournaments_only(site, client):
    r = client.get("/ui/")
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    for key in ("md", "jdf"):
        assert f'data-tournament="{site.tournaments[key]}"' in html
    for key in ("private", "running"):
        assert f'data-tournament="{site.tournaments[key]}"' not in html
    assert client.get(f"/ui/tournaments/{site.tournaments['md']}").status_code == 200
    md_match = _match_ids(site, "md")[0]
    assert client.get(f"/ui/matches/{md_match}").status_code == 200
    for path in (
        f"/ui/tournaments/{site.tournaments['private']}",
        f"/ui/tournaments/{site.tournaments['running']}",  # public, but not finished yet
        f"/ui/matches/{_match_ids(site, 'private')[0]}",
        f"/ui/matches/{_match_ids(site, 'private')[0]}/log.json",
        f"/ui/matches/{_match_ids(site, 'private')[0]}/replay.json",
        f"/ui/tournaments/{site.tournaments['private']}/logs.jsonl",
    ):
        r = client.get(path)
        assert r.status_code == 401, path
        assert "Sign in" in r.get_data(as_text=True)
    assert client.get("/ui/tournaments/999999").status_code == 404
    assert client.get("/ui/matches/99999999999").status_code == 404


def test_public_match_log_download_is_the_stored_log(site, client):
    mid = _match_ids(site, "md")[1]
    r = client.get(f"/ui/matches/{mid}/log.json")
    assert r.status_code == 200
    assert r.headers["Content-Disposition"] == f'attachment; filename="match-{mid}.json"'
    with site.sessionmaker() as s:
        stored = json.loads(matchlog.decompress(s.scalar(select(MatchLog.data).where(MatchLog.match_id == mid))))
    assert r.get_json() == stored
    replay = client.get(f"/ui/matches/{mid}/replay.json").get_json()
    assert [len(g["frames"]) for g in replay["games"]] == [len(g["engine_log"]["actions"]) + 1 for g in stored["games"]]


def test_sign_in_by_form_post_only_with_a_server_side_session_logout_revokes(site, client):
    tid = site.tournaments["private"]
    r = client.get(f"/ui/tournaments/{tid}?token={site.tokens['alice']}")
    assert r.status_code == 401  # a token in the address signs nobody in
    assert "Set-Cookie" not in r.headers
    r = client.post("/ui/login", data={"token": site.tokens["alice"], "next": f"/ui/tournaments/{tid}"})
    assert r.status_code == 303 and r.headers["Location"] == f"/ui/tournaments/{tid}"
    cookie = r.headers["Set-Cookie"]
    assert "arena_ui=" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/ui" in cookie
    assert "Secure" in cookie
    assert site.tokens["alice"] not in cookie
    assert client.get(f"/ui/tournaments/{tid}").status_code == 200
    stolen = cookie.split(";", 1)[0].split("=", 1)[1]  # the attacker copies the cookie
    thief = site.app.test_client()
    thief.set_cookie("arena_ui", stolen, path="/ui")
    assert thief.get(f"/ui/tournaments/{tid}").status_code == 200
    assert client.post("/ui/logout").status_code == 303
    assert thief.get(f"/ui/tournaments/{tid}").status_code == 401  # logout revoked the copy
    assert client.get(f"/ui/tournaments/{tid}").status_code == 401
    assert site.app.test_client().post("/ui/login", data={"token": "nope"}).status_code == 401


def test_login_never_redirects_off_site(site):
    c = site.app.test_client()
    for target in ("//evil.example/", "https://evil.example/", "/api/v1/bots", "/ui\\evil"):
        r = c.post("/ui/login", data={"token": site.tokens["carol"], "next": target})
        assert r.status_code == 303 and r.headers["Location"] == "/ui/", target


def test_contestants_see_their_own_matches(site):
    private_match = _match_ids(site, "private")[0]  # Ace (alice) vs Rando (bob), finished, not public
    running_match = _match_ids(site, "running")[0]  # Greedo (alice) vs Rando (bob), queued
    carol = _signed_in(site, "carol")  # no bot anywhere
    r = carol.get(f"/ui/tournaments/{site.tournaments['private']}")
    assert r.status_code == 200  # every account reads tournaments and standings (as the API)
    html = r.get_data(as_text=True)
    assert f'href="/ui/matches/{private_match}"' not in html and "not visible to you" in html
    for path in (
        f"/ui/matches/{private_match}",
        f"/ui/matches/{private_match}/log.json",
        f"/ui/tournaments/{site.tournaments['private']}/logs.jsonl",
        f"/ui/matches/{running_match}",
    ):
        assert carol.get(path).status_code == 403, path
    bob = _signed_in(site, "bob")
    assert bob.get(f"/ui/matches/{private_match}").status_code == 200
    assert bob.get(f"/ui/matches/{private_match}/log.json").status_code == 200
    r = bob.get(f"/ui/matches/{running_match}")
    # running tournament: the log is embargoed, even for a seated bot's owner
    assert r.status_code == 200 and "shown when the tournament is finished" in r.get_data(as_text=True)
    assert bob.get(f"/ui/matches/{running_match}/log.json").status_code == 403
    olga = _signed_in(site, "olga")
    html = olga.get("/ui/").get_data(as_text=True)
    assert all(f'data-tournament="{t}"' in html for t in site.tournaments.values())
    lines = olga.get(f"/ui/tournaments/{site.tournaments['private']}/logs.jsonl").get_data(as_text=True).splitlines()
    assert json.loads(lines[0])["tournament"]["id"] == site.tournaments["private"]
    assert [json.loads(x)["match_id"] for x in lines[1:]] == _match_ids(site, "private")
    # signing out closes the private pages again
    assert bob.post("/ui/logout").status_code == 303
    assert bob.get(f"/ui/matches/{private_match}").status_code == 401


def test_api_accepts_public_when_finished(site):
    c = site.app.test_client()
    headers = {"Authorization": f"Bearer {site.tokens['olga']}"}
    body = {
        "ruleset": "million_doubt",
        "participants": [site.bots["Ace"], site.bots["Rando"]],
        "separate_owners": False,
    }
    r = c.post("/api/v1/tournaments", json=body, headers=headers)
    assert r.status_code == 201 and r.json["public_when_finished"] is True
    r = c.post("/api/v1/tournaments", json={**body, "public_when_finished": False}, headers=headers)
    assert r.status_code == 201 and r.json["public_when_finished"] is False
    r = c.post("/api/v1/tournaments", json={**body, "public_when_finished": "maybe"}, headers=headers)
    assert r.status_code == 422 and "public_when_finished" in r.json["message"]
    # API errors stay JSON next to the HTML pages
    assert c.get("/api/v1/matches/999999").status_code == 401
    assert c.get("/api/v1/matches/999999").is_json


def test_sign_in_and_out_posted_from_another_site_are_refused(site):
    """Login CSRF (adversarial review): another site cannot sign a visitor into its account."""
    c = site.app.test_client()
    token = site.tokens["olga"]
    r = c.post("/ui/login", data={"token": token}, headers={"Origin": "https://evil.example"})
    assert r.status_code == 400 and "arena_ui" not in r.headers.get("Set-Cookie", "")
    r = c.post("/ui/login", data={"token": token}, headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 400
    r = c.post("/ui/login", data={"token": token}, headers={"Origin": "http://localhost"})
    assert r.status_code == 303  # same origin (the test client's host)
    assert c.post("/ui/logout", headers={"Origin": "https://evil.example"}).status_code == 400


def test_organizer_actions_shown_only_where_they_apply(site):
    """The tournament page offers an action only where it can succeed: a finished
    tournament with no failed match offers none; a running one with every match queued
    offers resume and cancel, not start nor retry."""
    organizer = _signed_in(site, "olga")

    def actions(key: str) -> set[str]:
        html = organizer.get(f"/ui/tournaments/{site.tournaments[key]}").get_data(as_text=True)
        return {a for a in ("start", "resume", "retry", "cancel") if f'id="action-{a}"' in html}

    assert actions("md") == set()
    assert actions("running") == {"resume", "cancel"}
    html = organizer.get(f"/ui/tournaments/{site.tournaments['running']}").get_data(as_text=True)
    resume = html.split('id="action-resume"', 1)[1].split(">", 1)[0]
    assert "the reaper also does it by itself" in resume  # each button says what it does
    contestant = _signed_in(site, "alice")
    assert 'id="organizer-actions"' not in contestant.get(f"/ui/tournaments/{site.tournaments['md']}").get_data(
        as_text=True
    )


def test_resume_is_offered_only_where_it_does_something(site):
    """Issue 42: Resume sends again matches without a result; offered while none is being
    played and some were sent more than RESUME_GUARD_S ago (or never), not beside Cancel on a
    tournament whose workers are playing, nor when every waiting match was just sent."""
    organizer = _signed_in(site, "olga")
    tid = site.tournaments["running"]

    def offered() -> bool:
        return 'id="action-resume"' in organizer.get(f"/ui/tournaments/{tid}").get_data(as_text=True)

    with site.sessionmaker() as s:
        matches = s.scalars(select(Match).where(Match.tournament_id == tid).order_by(Match.index)).all()
        saved = [(m.id, m.status, m.queued_at) for m in matches]
    try:
        assert offered()  # queued, never sent, nothing playing: the broker may have lost them
        with site.sessionmaker() as s:
            s.get(Match, saved[0][0]).status = "running"
            s.commit()
        assert not offered()  # a worker plays: the others wait their turn
        with site.sessionmaker() as s:
            s.get(Match, saved[0][0]).status = "queued"
            for mid, _status, _queued in saved:
                s.get(Match, mid).queued_at = utcnow()
            s.commit()
        assert not offered()  # every one sent a moment ago: a resume would send nothing
    finally:
        with site.sessionmaker() as s:
            for mid, status, queued in saved:
                m = s.get(Match, mid)
                m.status, m.queued_at = status, queued
            s.commit()


def test_read_pages_show_bot_names_without_decrypting_secrets(site, client, monkeypatch):
    """The pages read bot names only: with the secrets' key lost or rotated away (no key
    decrypts them), a public tournament page, its match page and its live parts still answer
    200 with the names (loading whole bots gave a 500)."""
    monkeypatch.setenv(crypto.ENV_KEYS, Fernet.generate_key().decode())
    tid = site.tournaments["md"]
    pages = [f"/ui/tournaments/{tid}", f"/ui/matches/{_match_ids(site, 'md')[0]}", "/ui/"]
    owner = _signed_in(site, "alice")  # the owner's bot pages and the API's bot reads too
    bearer = {"Authorization": f"Bearer {site.tokens['alice']}"}
    for path in ["/ui/bots", f"/ui/bots/{site.bots['Ace']}", "/api/v1/bots", f"/api/v1/bots/{site.bots['Ace']}"]:
        assert owner.get(path, headers=bearer if path.startswith("/api") else {}).status_code == 200, path
    assert _signed_in(site, "olga").get("/ui/tournaments/new").status_code == 200
    htmls = []
    for path in pages:
        r = client.get(path)
        assert r.status_code == 200, path
        htmls.append(r.get_data(as_text=True))
    named = [n for n in site.bots if n in htmls[0]]
    assert named and all(n in htmls[0] for n in named)
    with site.sessionmaker() as s:  # the key really is gone for the secrets (read where needed only)
        bot = s.scalars(select(Bot)).first()
        assert bot is not None and bot.name in site.bots
        with pytest.raises(crypto.ConfigError):
            _ = bot.secret
