"""What the check says of a bot that dials out, from what the gateways wrote of its connections
(:class:`arena.relay.Story`): which step a bot found not connected reached
(:func:`arena.conformance.dial_step`), and the warning of a bot that sends no keep-alive pings
(:func:`arena.conformance.ping_warning`); the pages translate both from their codes. The same
through a real gateway and worker: tests/gateway/test_check_dialout.py."""

from __future__ import annotations

import flask
import pytest

from api.ui import i18n
from arena.conformance import DIAL_MESSAGES, dial_step, ping_warning
from arena.relay import Story
from bots_sdk import wire

NOW = 1_800_000_000.0


def _story(event=None, ago=0.0, code=None, by="", pinged=None) -> Story:
    return Story(event, None if event is None else NOW - ago, code, by, pinged)


@pytest.mark.parametrize(
    ("story", "step", "code", "text"),
    [
        (None, "unknown", "dial_unknown", "the bot is not connected to a gateway (no connection within 5 s)"),
        (_story(), "never_connected", "dial_never_connected", "the bot never connected: no connection with its id"),
        (
            _story("refused", 12, 4401, "gateway"),
            "auth_failed",
            "dial_auth_failed",
            "the bot connected 12 s ago but failed authentication (close 4401: a wrong signature for its id;",
        ),
        (
            _story("refused", 3, 4429, "gateway"),
            "refused",
            "dial_refused",
            "the bot connected 3 s ago but its connection was refused (close 4429: too many connections",
        ),
        (
            _story("closed", 40),
            "dropped",
            "dial_dropped",
            "the bot authenticated, then its connection dropped 40 s ago without a close (its program stopped",
        ),
        (
            _story("closed", 7, 1000, "bot"),
            "dropped",
            "dial_closed_by_bot",
            "the bot authenticated, then closed its connection 7 s ago (close 1000), and it did not connect again",
        ),
        (
            _story("closed", 7, 1008, "gateway"),
            "dropped",
            "dial_closed_by_gateway",
            "the bot authenticated, then the gateway closed its connection 7 s ago (close 1008: a frame broke",
        ),
        (_story("welcomed", 2), "connected", "dial_connected", "the bot authenticated 2 s ago, but no connection"),
    ],
)
def test_a_bot_found_not_connected_is_told_the_step_it_reached(story, step, code, text) -> None:
    said = dial_step(story, wait_s=5.0, now=NOW)
    assert said["step"] == step and said["error_code"]["code"] == code
    assert said["error"].startswith(text), said["error"]
    assert said["error"] == DIAL_MESSAGES[code] % said["error_code"]["params"]
    assert _health_error("en", said) == said["error"]  # the pages' English is the stored text
    assert _health_error("ja", said) != said["error"]  # and every step is translated


def _health_error(lang: str, health: dict) -> str:
    app = flask.Flask("t")
    i18n.init_i18n(app)
    with app.test_request_context("/ui/bots/1", headers={"Cookie": f"{i18n.COOKIE}={lang}"}):
        return i18n.health_error(health)


def test_the_pages_and_the_check_share_the_messages() -> None:
    assert i18n._HEALTH_MESSAGES == DIAL_MESSAGES
    assert _health_error("ja", {"error": "an older outcome, no code"}) == "an older outcome, no code"
    said = dial_step(_story("refused", 1, 4401, "gateway"), wait_s=5.0, now=NOW)
    assert _health_error("ja", said).startswith("ボットは 1 秒前に接続しましたが、認証に失敗しました")


class Clock:
    """A fake clock: ``now()`` reads it, ``sleep(s)`` advances it (no real wait)."""

    def __init__(self) -> None:
        self.t = NOW
        self.slept = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s
        self.slept += s


def test_a_bot_that_pinged_within_the_silence_gets_no_warning() -> None:
    clock = Clock()
    story = _story("welcomed", 600, pinged=NOW - 4)
    assert ping_warning(lambda: story, lambda: NOW - 600, now=clock.now, sleep=clock.sleep) is None
    assert clock.slept == 0


def test_a_bot_connected_longer_than_the_silence_without_a_ping_is_warned() -> None:
    clock = Clock()
    story = _story("welcomed", 40)
    warning = ping_warning(lambda: story, lambda: NOW - 40, now=clock.now, sleep=clock.sleep)
    assert warning is not None and warning["code"] == "no_pings" and warning["params"] == {"silent_s": 40}
    assert warning["text"].startswith("the bot sent no keep-alive ping in 40 s of connection")
    result = {"warnings": [warning["text"]], "warning_codes": [{"code": "no_pings", "params": warning["params"]}]}
    app = flask.Flask("t")
    i18n.init_i18n(app)
    for lang in ("en", "ja"):
        with app.test_request_context("/ui/bots/1", headers={"Cookie": f"{i18n.COOKIE}={lang}"}):
            (shown,) = i18n.check_warnings(result)
        assert shown == warning["text"] if lang == "en" else shown.startswith("ボットは接続中の 40 秒間")
    # its last ping long ago: silent since then
    old = _story("welcomed", 600, pinged=NOW - 100)
    assert ping_warning(lambda: old, lambda: NOW - 600, now=clock.now, sleep=clock.sleep)["params"] == {  # type: ignore[index]
        "silent_s": 100
    }


def test_a_young_connection_is_waited_for_until_its_first_ping_is_due() -> None:
    clock = Clock()
    pings = iter([None, None, None, NOW + 1.2])  # its first ping, seen on the fourth look
    story = lambda: _story("welcomed", 3, pinged=next(pings))  # noqa: E731
    assert ping_warning(story, lambda: NOW - 3, now=clock.now, sleep=clock.sleep) is None
    assert clock.slept == 1.5
    clock = Clock()  # never a ping: warned once its first ping is overdue (the interval and some slack)
    warning = ping_warning(lambda: _story("welcomed", 3), lambda: NOW - 3, now=clock.now, sleep=clock.sleep)
    assert warning is not None and warning["params"]["silent_s"] == 7 and clock.slept == 4.0
    # a ping before this connection opened (an earlier run of the bot) does not count for it
    earlier, clock = _story("welcomed", 10, pinged=NOW - 20), Clock()
    assert ping_warning(lambda: earlier, lambda: NOW - 10, now=clock.now, sleep=clock.sleep)["params"] == {  # type: ignore[index]
        "silent_s": 10
    }


def test_nothing_is_judged_of_a_bot_that_left_or_past_the_checks_deadline() -> None:
    clock = Clock()
    assert ping_warning(lambda: _story("closed", 1), lambda: None, now=clock.now, sleep=clock.sleep) is None
    young = ping_warning(lambda: _story("welcomed", 1), lambda: NOW - 1, until=0.0, now=clock.now, sleep=clock.sleep)
    assert young is None and clock.slept == 0
    assert (wire.PING_FIRST_S, wire.PING_SILENCE_S) == (7.0, 15.0)
