"""Faults as codes with parameters on the pages (issue 39, point 2).

- Rewording an English template (an engine refusal's, a runner fault's) changes the log's
  English ``detail`` and nothing a page shows: the pages translate by code and parameters.
- A log written before codes (version 1: ``tests/arena/fixtures/match-log-v1.json``, written
  by the code of commit 702989f) still verifies and still displays: its English details as
  they are.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from api.ui import faults as pages
from api.ui.replay import build_replay
from api.ui.views import _translated_details
from arena import faults
from arena.matchlog import LOG_VERSION, read_log
from arena.runner.replay import replay, verify_logs
from bots_sdk import protocol
from daifugo_arena.cli import main
from engine import refusals
from engine.refusals import Refusal

from .test_papercuts import WRONG_ANSWERS, WrongOnce, faulty_log

V1_LOG = Path(__file__).resolve().parents[2] / "arena" / "fixtures" / "match-log-v1.json"


def _shown(site, log: dict) -> dict[str, object]:
    """What the pages show of a log's faults, in English and Japanese: the fault tables'
    cells and the replay's translated frames."""
    out: dict[str, object] = {}
    for lang in ("en", "ja"):
        with site.app.test_request_context("/ui/", headers={"Accept-Language": lang}):
            cells = [pages.fault_detail(f) for f in log["faults"]]
            frames = [
                (frame["fault"] or {}).get("detail")
                for game in _translated_details(build_replay(copy.deepcopy(log), ["a", "b"]))["games"]
                for frame in game["frames"]
            ]
        out[lang] = (cells, frames)
    return out


def test_rewording_an_engine_template_changes_no_page(site, monkeypatch):
    before = faulty_log()
    codes = {f["code"] for f in before["faults"]}
    assert codes & {c.value for c in Refusal}, codes  # the engine refused some answers
    assert codes & {c.value for c in faults.FaultCode}, codes  # and the shape check others
    for code, template in list(refusals.TEMPLATES.items()):
        monkeypatch.setitem(refusals.TEMPLATES, code, "REWORDED " + template)  # type: ignore[index]
    for code, template in list(faults.TEMPLATES.items()):
        monkeypatch.setitem(faults.TEMPLATES, code, "REWORDED " + template)  # type: ignore[index]
    after = faulty_log()
    # the logs' English changed (the templates are what renders it) ...
    assert [f["code"] for f in after["faults"]] == [f["code"] for f in before["faults"]]
    assert all(f["detail"].startswith("REWORDED ") for f in after["faults"])
    assert [f["params"] for f in after["faults"]] == [f["params"] for f in before["faults"]]
    # ... and no page shows any of it
    shown_before, shown_after = _shown(site, before), _shown(site, after)
    assert shown_after == shown_before
    assert "REWORDED" not in json.dumps(shown_after, ensure_ascii=False)


def test_an_old_log_verifies_and_displays(site):
    log = read_log(V1_LOG)
    assert log["version"] == 1 and LOG_VERSION == 2
    assert log["faults"] and all("code" not in f for f in log["faults"])
    assert replay(log) == log["result"]  # arena logs verify: the same check
    assert verify_logs([V1_LOG]) == (1, [])
    with site.app.test_request_context("/ui/", headers={"Accept-Language": "ja"}):
        cells = [pages.fault_detail(f) for f in log["faults"]]
        data = _translated_details(build_replay(copy.deepcopy(log), ["a", "b"]))
    assert cells == [f["detail"] for f in log["faults"]]  # the English as it was written
    shown = [frame["fault"]["detail"] for g in data["games"] for frame in g["frames"] if frame["fault"]]
    assert sorted(shown) == sorted(f["detail"] for f in log["faults"])


def test_an_old_log_verifies_on_the_command_line():
    result = CliRunner().invoke(main, ["logs", "verify", str(V1_LOG)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("code", [c.value for c in Refusal])
def test_every_refusal_renders_from_its_parameters(code):
    names = faults.param_names(code)
    params = {name: 7 for name in names}
    assert faults.render(code, params, "C-12").endswith(" [C-12]")
    assert "%(" not in faults.render(code, params)


class Listener(WrongOnce):
    """:class:`WrongOnce` that keeps the notices it is sent."""

    def __init__(self, wrongs):
        super().__init__(wrongs)
        self.notices: list[dict] = []

    def notice(self, message):
        self.notices.append(message)


def test_the_match_end_notice_tells_a_bot_its_own_faults_as_codes():
    me, rival = Listener(WRONG_ANSWERS[:3]), Listener([])
    log = faulty_log(me, rival, games=4)
    end = me.notices[-1]
    protocol.validate("notice", end)
    mine = [f for f in log["faults"] if f["player"] == 0]
    assert mine and end["your_faults"] == [
        {k: f[k] for k in ("game", "n", "kind", "code", "params", "rule", "detail")} for f in mine
    ]
    assert rival.notices[-1]["your_faults"] == []  # never a rival's faults
    protocol.validate("notice", rival.notices[-1])
