"""C-11 / issue 14: a bot's endpoint never reaches another contestant through a match log,
whatever spelling of its host an error text uses (found by an adversarial review)."""

from __future__ import annotations

import pytest

from arena.runner.redact import URL_BLANK, blank_urls


@pytest.mark.parametrize(
    "url, detail",
    [
        ("http://Secret-Alice-Bot.invalid:8080/decide", "host 'secret-alice-bot.invalid' does not resolve"),
        ("http://secret-alice-bot.invalid./decide", "host 'secret-alice-bot.invalid' does not resolve"),
        ("http://alice.example.org/", "ConnectError to ALICE.EXAMPLE.ORG:80 refused"),
        ("http://10.9.8.7:8080/decide", "host 10.9.8.7 is a private or non-public address"),
        ("http://bücher.example/", "host 'xn--bcher-kva.example' does not resolve"),
        ("http://bot.example/", "connected to 203.0.113.9 then reset; also [2001:db8::7]"),
    ],
)
def test_every_spelling_of_a_bot_host_is_blanked(url, detail):
    faults = [{"detail": detail, "received": f"echo {url}"}]
    blank_urls(faults, [url, None])
    text = faults[0]["detail"] + " " + faults[0]["received"]
    host = url.split("://", 1)[1].split("/", 1)[0].split(":")[0].rstrip(".").lower()
    assert host not in text.lower() and "alice" not in text.lower()
    assert "203.0.113.9" not in text and "2001:db8::7" not in text and "10.9.8.7" not in text
    assert URL_BLANK in text or "<address>" in text
