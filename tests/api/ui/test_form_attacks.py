"""A cheating contestant against the forms, now that they call the use cases directly
(arena.usecases) instead of the REST views: access rules, CSRF, the API's rate limits and a
broker down hold as through the API."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select

from api import create_app
from arena.accounts import create_account
from arena.config import Settings
from arena.db.models import Account, Bot, BotCheck, Match, Tournament
from arena.db.session import make_engine, make_sessionmaker
from arena.dispatch import QueueError
from arena.security import new_secret
from arena.status import BotStatus, MatchStatus, TournamentStatus
from arena.usecases import tournaments as tournament_cases
from tests.helpers import migrated_sqlite_url


class RecordingDispatcher:
    """Records what is sent; raises :class:`QueueError` while ``down``."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int]] = []
        self.down = False

    def _record(self, kind: str, ids) -> None:
        if self.down:
            raise QueueError("cannot reach the task broker: down for the test")
        self.sent += [(kind, int(i)) for i in ids]

    def send_matches(self, match_ids, *, priority: bool = False) -> int:
        self._record("match", match_ids)
        return len(match_ids)

    def send_check(self, check_id: int) -> None:
        self._record("check", [check_id])

    def launch_tournament(self, tournament_id: int, *, priority: bool = False) -> None:
        self._record("launch", [tournament_id])

    def send_table(self, match_id: int) -> None:
        self._record("table", [match_id])

    def await_entrants(self, tournament_id: int, countdown_s: float) -> None:
        self._record("poll", [tournament_id])

    def send_webhook(self, account_id: int, message: dict) -> None:
        self._record("webhook", [account_id])


class House:
    def __init__(self, tmp_path, *, rate_limits: bool = False):
        url = migrated_sqlite_url(tmp_path / "arena.db")
        self.sessions = make_sessionmaker(make_engine(url))
        self.dispatcher = RecordingDispatcher()
        settings = Settings(
            data_dir=tmp_path,
            database_url=url,
            broker_url="memory://",
            rate_limits=rate_limits,
            allow_private_bot_urls=True,
        )
        self.app = create_app(settings, dispatcher=self.dispatcher)
        self.app.testing = True
        self.tokens: dict[str, str] = {}
        self.ids: dict[str, int] = {}
        with self.sessions() as s:
            for name, role in (("org", "organizer"), ("alice", "contestant"), ("mallory", "contestant")):
                account, token = create_account(s, name, role)
                self.tokens[name], self.ids[name] = token, account.id
            for owner in ("alice", "alice", "alice", "alice"):
                s.add(
                    Bot(
                        owner_id=self.ids[owner],
                        name=f"{owner}-bot",
                        url="http://127.0.0.1:9/",
                        rulesets=["million_doubt"],
                        secret=new_secret(),
                        status=BotStatus.READY,
                    )
                )
            s.commit()
            self.bots = list(s.scalars(select(Bot.id).order_by(Bot.id)))
            org = s.get(Account, self.ids["org"])
            t = tournament_cases.create_tournament(
                s,
                org,
                ruleset="million_doubt",
                participants=self.bots,
                options={},
                time_rules={"initial": 60.0, "increment": 10.0, "cap": 60.0},
                games_per_pairing=1,
                max_faults=3,
                fill_with_house_bots=False,
                public_when_finished=True,
            )
            self.tournament = t.id

    def browser(self, who: str):
        c = self.app.test_client()
        assert c.post("/ui/login", data={"token": self.tokens[who]}).status_code == 303
        page = c.get("/ui/bots").get_data(as_text=True)
        c.csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        return c

    def status(self) -> str:
        with self.sessions() as s:
            return s.get(Tournament, self.tournament).status

    def secret(self, bot_id: int) -> str:
        with self.sessions() as s:
            return s.get(Bot, bot_id).secret

    def checks(self) -> int:
        with self.sessions() as s:
            return s.scalar(select(func.count()).select_from(BotCheck))


@pytest.fixture
def house(tmp_path):
    return House(tmp_path)


@pytest.mark.parametrize("action", ["start", "cancel", "resume", "retry"])
def test_a_contestant_cannot_act_on_a_tournament_through_the_form(house, action):
    c = house.browser("mallory")
    r = c.post(f"/ui/tournaments/{house.tournament}/{action}", data={"csrf": c.csrf})
    assert r.status_code == 303
    page = c.get(f"/ui/tournaments/{house.tournament}").get_data(as_text=True)
    assert re.search(r"id=\"notice\">The [a-z ]+ (was|were) not [a-z]+: organizer role required<", page)  # what, why
    assert house.status() == TournamentStatus.CREATED
    assert house.dispatcher.sent == []


def test_a_contestant_cannot_create_a_tournament_through_the_form(house):
    c = house.browser("mallory")
    r = c.post("/ui/tournaments/new", data={"csrf": c.csrf, "ruleset": "million_doubt", "participants": house.bots[:1]})
    assert r.status_code == 403
    with house.sessions() as s:
        assert s.scalar(select(func.count()).select_from(Tournament)) == 1


def test_a_contestant_cannot_check_or_rotate_another_accounts_bot(house):
    victim = house.bots[0]
    before = house.secret(victim)
    c = house.browser("mallory")
    r = c.post(f"/ui/bots/{victim}/check", data={"csrf": c.csrf})
    assert r.status_code == 403
    r = c.post(f"/ui/bots/{victim}/secret", data={"csrf": c.csrf})
    assert r.status_code == 403
    assert before not in r.get_data(as_text=True)
    assert house.secret(victim) == before and house.checks() == 0 and house.dispatcher.sent == []


def test_an_organizer_reads_a_bot_but_cannot_rotate_its_secret_nor_see_it(house):
    victim = house.bots[0]
    before = house.secret(victim)
    c = house.browser("org")
    page = c.get(f"/ui/bots/{victim}")
    assert page.status_code == 200 and before not in page.get_data(as_text=True)
    r = c.post(f"/ui/bots/{victim}/secret", data={"csrf": c.csrf})
    body = r.get_data(as_text=True)
    assert r.status_code == 403 and f"bot {victim} belongs to another account" in body
    assert house.secret(victim) == before and before not in body
    r = c.post(f"/ui/bots/{victim}/check", data={"csrf": c.csrf})
    assert r.status_code == 403 and house.checks() == 0


@pytest.mark.parametrize(
    "path",
    ["/ui/signup", "/ui/bots", "/ui/bots/{bot}/check", "/ui/bots/{bot}/secret", "/ui/tournaments/new"]
    + [f"/ui/tournaments/{{t}}/{a}" for a in ("start", "cancel", "resume", "retry")],
)
@pytest.mark.parametrize("csrf", [None, "forged-token-of-another-session-000000000"])
def test_every_form_refuses_a_post_without_its_csrf_token(house, path, csrf):
    c = house.browser("org")
    data = {"name": "x", "url": "http://127.0.0.1:9/", "rulesets": "million_doubt"}
    if csrf is not None:
        data["csrf"] = csrf
    bot = house.bots[0]
    with house.sessions() as s:  # the organizer owns this one, so only the token stops it
        s.get(Bot, bot).owner_id = house.ids["org"]
        s.commit()
    before = house.secret(bot)
    r = c.post(path.format(bot=bot, t=house.tournament), data=data)
    assert r.status_code == 400
    assert house.status() == TournamentStatus.CREATED and house.secret(bot) == before
    assert house.checks() == 0 and house.dispatcher.sent == []
    with house.sessions() as s:
        assert s.scalar(select(func.count()).select_from(Bot)) == len(house.bots)


def test_the_form_refuses_what_the_api_refuses_naming_the_field(house):
    c = house.browser("org")
    api = house.app.test_client()
    auth = {"Authorization": f"Bearer {house.tokens['org']}"}
    body = {"ruleset": "million_doubt", "participants": house.bots, "games_per_pairing": 0}
    answer = api.post("/api/v1/tournaments", json=body, headers=auth)
    assert answer.status_code == 422 and "games_per_pairing" in answer.json["errors"]["json"]
    form = {
        "csrf": c.csrf,
        "ruleset": "million_doubt",
        "participants": [str(b) for b in house.bots],
        "games_per_pairing": "0",
    }
    form |= {"initial": "60", "increment": "10", "cap": "60", "max_faults": "3"}
    r = c.post("/ui/tournaments/new", data=form)
    assert r.status_code == 422
    assert answer.json["errors"]["json"]["games_per_pairing"][0] in r.get_data(as_text=True)


def test_start_with_the_broker_down_through_the_form_leaves_nothing_half_started(house):
    house.dispatcher.down = True
    c = house.browser("org")
    start = {"csrf": c.csrf, "if_offline": "start"}  # its bots serve nothing: start without them
    r = c.post(f"/ui/tournaments/{house.tournament}/start", data=start)
    assert r.status_code == 303
    page = c.get(f"/ui/tournaments/{house.tournament}").get_data(as_text=True)
    assert "The tournament was not started: cannot reach the task broker" in page
    with house.sessions() as s:
        statuses = set(s.scalars(select(Match.status).where(Match.tournament_id == house.tournament)))
    assert statuses == {MatchStatus.PENDING}  # none left queued-but-never-sent: a start again sends them
    house.dispatcher.down = False
    c.post(f"/ui/tournaments/{house.tournament}/start", data=start)
    sent = [mid for kind, mid in house.dispatcher.sent if kind == "match"]
    with house.sessions() as s:
        ids = set(s.scalars(select(Match.id).where(Match.tournament_id == house.tournament)))
    assert ids and sorted(sent) == sorted(ids)  # each match sent once, none lost


def test_a_check_with_the_broker_down_through_the_form_changes_nothing(house):
    bot = house.bots[0]
    house.dispatcher.down = True
    c = house.browser("alice")
    r = c.post(f"/ui/bots/{bot}/check", data={"csrf": c.csrf})
    assert r.status_code == 503 and "the check could not be started" in r.get_data(as_text=True)
    with house.sessions() as s:
        assert s.get(Bot, bot).status == BotStatus.READY
    house.dispatcher.down = False
    assert c.post(f"/ui/bots/{bot}/check", data={"csrf": c.csrf}).status_code == 303  # not 409: none left running
    assert [k for k, _ in house.dispatcher.sent] == ["check"]


def test_sign_ups_through_the_api_and_the_form_share_one_limit(tmp_path):
    """Before the use cases, the form ran the API endpoint, so both counted against one limit:
    alternating the two must not give a client twice the sign-ups."""
    house = House(tmp_path, rate_limits=True)
    api = house.app.test_client()
    assert [api.post("/api/v1/accounts", json={"name": f"a{i}"}).status_code for i in range(5)] == [201] * 5
    c = house.app.test_client()
    token = re.search(r'name="csrf" value="([^"]+)"', c.get("/ui/signup").get_data(as_text=True)).group(1)
    r = c.post("/ui/signup", data={"csrf": token, "name": "f0"})
    assert r.status_code == 429 and int(r.headers["Retry-After"]) > 0
    with house.sessions() as s:
        assert s.scalar(select(func.count()).select_from(Account)) == 3 + 5


def test_checks_through_the_api_and_the_form_share_one_limit(tmp_path):
    house = House(tmp_path, rate_limits=True)
    api = house.app.test_client()
    auth = {"Authorization": f"Bearer {house.tokens['alice']}"}
    codes = [api.post(f"/api/v1/bots/{house.bots[i % 4]}/check", headers=auth).status_code for i in range(6)]
    assert codes == [202, 202, 429, 429, 409, 409]  # two at once per account (TooManyChecks); six a minute
    c = house.browser("alice")
    r = c.post(f"/ui/bots/{house.bots[0]}/check", data={"csrf": c.csrf})
    assert r.status_code == 429 and "6 per 1 minute" in r.get_data(as_text=True)


def test_a_tournament_form_counts_with_the_api_endpoint_of_its_action(tmp_path):
    house = House(tmp_path, rate_limits=True)
    api = house.app.test_client()
    auth = {"Authorization": f"Bearer {house.tokens['mallory']}"}
    start = f"/api/v1/tournaments/{house.tournament}/start"
    assert {api.post(start, headers=auth).status_code for _ in range(120)} == {403}
    assert api.post(start, headers=auth).status_code == 429
    c = house.browser("org")
    r = c.post(f"/ui/tournaments/{house.tournament}/start", data={"csrf": c.csrf})
    assert r.status_code == 429 and "120 per 1 minute" in r.get_data(as_text=True)
    assert house.status() == TournamentStatus.CREATED and house.dispatcher.sent == []
    r = c.post(f"/ui/tournaments/{house.tournament}/cancel", data={"csrf": c.csrf})  # another endpoint's count
    assert r.status_code == 303 and house.status() == TournamentStatus.CANCELLED
