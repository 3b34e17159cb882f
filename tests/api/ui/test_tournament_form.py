"""The organizer's tournament form (/ui/tournaments/new): one field per rule-set option with
its documented range, time rules fields, and the REST API's validation behind it.

No browser: the Flask test client on SQLite (the browser flow is tests/api/ui/test_flows_browser.py)."""

from __future__ import annotations

import html as html_lib
import re

import pytest

import engine
from api import create_app
from api.ui import fields
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.models import Bot, Tournament
from arena.db.session import make_engine, make_sessionmaker
from arena.limits import BoundsError, check_match_bounds


@pytest.fixture(scope="module")
def form_site(tmp_path_factory):
    data = tmp_path_factory.mktemp("ui-form")
    url = f"sqlite:///{data / 'arena.db'}"
    upgrade(url)
    db_engine = make_engine(url)
    sm = make_sessionmaker(db_engine)
    app = create_app(
        Settings(data_dir=data, database_url=url, broker_url="redis://127.0.0.1:1/0", allow_private_bot_urls=True),
        engine=db_engine,
    )
    with sm() as s:
        organizer, token = create_account(s, "olga", "organizer")
        contestant, ctoken = create_account(s, "mika", "contestant")
        ids = []
        for i in range(4):
            b = Bot(
                owner_id=contestant.id,
                name=f"B{i}",
                url="http://127.0.0.1:9/",
                rulesets=list(engine.RULESETS),
                secret="s",
                status="ready",
            )
            s.add(b)
            s.flush()
            ids.append(b.id)
        s.commit()
    yield {"app": app, "sm": sm, "token": token, "contestant": ctoken, "bots": ids}
    db_engine.dispose()


@pytest.fixture
def organizer(form_site):
    c = form_site["app"].test_client()
    r = c.post("/ui/login", data={"token": form_site["token"], "next": "/ui/"})
    assert r.status_code == 303
    html = c.get("/ui/tournaments/new").get_data(as_text=True)
    c.csrf = re.search(r'name="csrf" value="([^"]+)"', html).group(1)
    return c


def _post(client, bots, **extra):
    data = {
        "csrf": client.csrf,
        "name": "Form cup",
        "ruleset": "jdf",
        "initial": "60",
        "increment": "10",
        "cap": "60",
        "games_per_pairing": "1",
        "max_faults": "3",
        "seed": "",
        "public_when_finished": "1",
        "participants": [str(b) for b in bots],
    }
    data.update(fields.default_values())
    for k, v in list(data.items()):  # checkboxes are sent only when checked
        if isinstance(v, bool):
            if v:
                data[k] = "1"
            else:
                del data[k]
    data.update(extra)
    return client.post("/ui/tournaments/new", data=data)


def _accepted(ruleset: str, options: dict) -> bool:
    """The REST API's validation of options (api.resources.tournaments: engine then bounds)."""
    try:
        engine.make_options(ruleset, options)
        check_match_bounds(ruleset, options)
    except (engine.OptionsError, BoundsError):
        return False
    return True


def test_every_option_has_a_field_and_its_bounds_are_the_apis():
    for rs, fs in fields.option_fields().items():
        assert [f.name for f in fs] == list(engine.option_names(rs))
        defaults = engine.make_options(rs, {}).to_dict()
        for f in fs:
            if f.kind == "bool":
                assert _accepted(rs, {f.name: True}) and not _accepted(rs, {f.name: 1})
                continue

            def value(x, f=f, defaults=defaults):
                return x if f.kind == "int" else [x] * len(defaults[f.name]) if f.entries[0] == f.entries[1] else [x]

            assert _accepted(rs, {f.name: value(f.min)}), (rs, f.name, f.min)
            assert not _accepted(rs, {f.name: value(f.min - 1)}), (rs, f.name, f.min - 1)
            assert _accepted(rs, {f.name: value(f.max)}), (rs, f.name, f.max)
            assert not _accepted(rs, {f.name: value(f.max + 1)}), (rs, f.name, f.max + 1)
            if f.kind == "int_list":
                lo, hi = f.entries
                assert _accepted(rs, {f.name: [f.min] * hi}) and not _accepted(rs, {f.name: [f.min] * (hi + 1)})
                assert lo == 1 and not _accepted(rs, {f.name: []}) or not _accepted(rs, {f.name: [f.min] * (lo - 1)})
    # the JDF product bound shown in the help text
    assert _accepted("jdf", {"sets": 8, "games_per_set": fields.JDF_MAX_GAMES // 8})
    assert not _accepted("jdf", {"sets": 9, "games_per_set": 100})


def test_the_form_shows_every_rule_sets_options_with_ranges(organizer):
    html = organizer.get("/ui/tournaments/new").get_data(as_text=True)
    for rs, fs in fields.option_fields().items():
        assert f'data-ruleset="{rs}"' in html
        for f in fs:
            assert f'name="{fields.field_name(rs, f.name)}"' in html
    assert 'name="opt-jdf-five_skip" value="1"' in html and 'type="checkbox"' in html  # local rules: checkboxes
    assert 'name="opt-trump_millionaire-target_score" value="100" type="number" step="1" min="1" max="333"' in html
    assert 'name="initial" value="60" type="number" step="any" min="0.001" max="3600"' in html
    assert "1 to 333" in html and "0.001 to 3600" in html and "1 to 1000" in html
    assert 'name="options"' not in html  # no JSON box


def test_options_from_fields_reach_the_tournament(organizer, form_site):
    r = _post(
        organizer,
        form_site["bots"],
        **{
            "opt-jdf-sets": "2",
            "opt-jdf-games_per_set": "3",
            "opt-jdf-five_skip": "1",
            "opt-jdf-rank_points": "5, 3, 1, 0",
            "initial": "20",
            "cap": "30",
            "increment": "2.5",
        },
    )
    assert r.status_code == 303, r.get_data(as_text=True)[:2000]
    tid = int(r.headers["Location"].rstrip("/").rsplit("/", 1)[1])
    with form_site["sm"]() as s:
        t = s.get(Tournament, tid)
        assert t.options["sets"] == 2 and t.options["games_per_set"] == 3 and t.options["five_skip"] is True
        assert t.options["rank_points"] == [5, 3, 1, 0] and t.options["seven_pass"] is False
        assert t.time_rules == {"initial": 20.0, "increment": 2.5, "cap": 30.0}


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ({"opt-jdf-sets": "0"}, "opt-jdf-sets", "between 1 and 100"),
        ({"opt-jdf-sets": "three"}, "opt-jdf-sets", "must be an integer"),
        ({"opt-jdf-sets": "9", "opt-jdf-games_per_set": "100"}, "opt-jdf-games_per_set", "at most 800"),
        ({"opt-jdf-rank_points": "3, 2, 1"}, "opt-jdf-rank_points", "4 integers"),
        (
            {"ruleset": "trump_millionaire", "opt-trump_millionaire-target_score": "334"},
            "opt-trump_millionaire-target_score",
            "at most 333",
        ),
        (
            {"ruleset": "trump_millionaire", "opt-trump_millionaire-rate_choices": "1, x"},
            "opt-trump_millionaire-rate_choices",
            "list of integers",
        ),
        ({"cap": "10", "initial": "20"}, "time_rules.cap", "cap must be >= initial"),
        ({"initial": "0"}, "time_rules.initial", "0.001"),
        ({"increment": "soon"}, "time_rules.increment", "number"),
        ({"max_faults": "101"}, "max_faults", "100"),
        ({"max_rounds": "0"}, "until_settled.max_rounds", "greater than or equal to 1"),
    ],
)
def test_a_bad_value_shows_the_apis_message_by_its_field_and_keeps_the_form(organizer, form_site, extra, field, words):
    r = _post(organizer, form_site["bots"], name="Kept name", **extra)
    html = r.get_data(as_text=True)
    assert r.status_code == 422
    m = re.search(rf'<p class="error field-error" data-field="{re.escape(field)}">([^<]*)</p>', html)
    assert m, html[html.find("<form") :][:3000]
    assert words in html_lib.unescape(m.group(1))
    assert 'value="Kept name"' in html
    for k, v in extra.items():  # what the user typed is still in the form
        if k == "ruleset":
            assert f'<option value="{v}" selected>' in html
        else:
            assert f'name="{k}" value="{v}"' in html
    assert 'id="form-message"' in html  # the API's message at the top too
    banner = html_lib.unescape(html.split('id="form-message"', 1)[1].split("</p>", 1)[0])
    assert "until_settled" not in banner and "time_rules" not in banner  # the form's labels, not the API's


def test_a_contestant_cannot_create_a_tournament_through_the_form(form_site):
    c = form_site["app"].test_client()
    assert c.post("/ui/login", data={"token": form_site["contestant"], "next": "/ui/"}).status_code == 303
    assert c.get("/ui/tournaments/new").status_code == 403
    html = c.get("/ui/bots").get_data(as_text=True)
    c.csrf = re.search(r'name="csrf" value="([^"]+)"', html).group(1)
    with form_site["sm"]() as s:
        before = s.query(Tournament).count()
    r = _post(c, form_site["bots"], name="Sneaky")
    assert r.status_code == 403
    with form_site["sm"]() as s:
        assert s.query(Tournament).count() == before


def test_options_of_another_rule_set_are_not_sent(organizer, form_site):
    """A field of a rule set not chosen (here a JDF local rule with Million Doubt, which
    refuses local rules) is ignored: only the chosen rule set's options reach the API."""
    r = _post(
        organizer,
        form_site["bots"][:2],
        ruleset="million_doubt",
        **{"opt-jdf-five_skip": "1", "opt-million_doubt-burst_score": "15"},
    )
    assert r.status_code == 303, r.get_data(as_text=True)[:1500]
    tid = int(r.headers["Location"].rstrip("/").rsplit("/", 1)[1])
    with form_site["sm"]() as s:
        assert s.get(Tournament, tid).options == {"burst_score": 15}


def test_the_house_bot_select_reaches_the_tournament(organizer, form_site):
    """The form lists every sample bot for the house seats (``heuristic`` chosen); the one
    picked is stored; a form without the field gets ``heuristic``; a name that is no sample
    bot is the API's 422, shown by the field."""
    html = organizer.get("/ui/tournaments/new").get_data(as_text=True)
    select = html[html.index('<select id="t-house-bot" name="house_bot"') :]
    select = select[: select.index("</select>")]
    assert re.findall(r'<option value="([^"]+)"', select) == ["random", "greedy", "heuristic", "search"]
    assert '<option value="heuristic" selected>' in select
    r = _post(organizer, form_site["bots"][:3], fill_with_house_bots="1", house_bot="search")
    assert r.status_code == 303, r.get_data(as_text=True)[:1500]
    r2 = _post(organizer, form_site["bots"][:3], fill_with_house_bots="1")
    assert r2.status_code == 303, r2.get_data(as_text=True)[:1500]
    with form_site["sm"]() as s:
        made = [s.get(Tournament, int(x.headers["Location"].rstrip("/").rsplit("/", 1)[1])) for x in (r, r2)]
        assert [(t.house_bot, t.fill_with_house_bots) for t in made] == [("search", True), ("heuristic", True)]
    bad = _post(organizer, form_site["bots"][:3], fill_with_house_bots="1", house_bot="alphazero")
    page = bad.get_data(as_text=True)
    assert bad.status_code == 422
    m = re.search(r'<p class="error field-error" data-field="house_bot">([^<]*)</p>', page)
    assert m and "search" in html_lib.unescape(m.group(1)), page[page.find("<form") :][:3000]
