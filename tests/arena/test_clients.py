"""One notion of "one client" (arena.clients), and the gateway's cheap readings of a
stranger's frames (bots_sdk.wire.parse_auth, answer_id): shapes checked before any JSON is
parsed, linear in the input whatever it holds."""

from __future__ import annotations

import json
import time

import pytest

from arena.clients import client_key, forwarded_address, network_key
from bots_sdk import wire


@pytest.mark.parametrize(
    ("address", "client", "network"),
    [
        ("203.0.113.7", "203.0.113.7", "203.0.113.0/24"),
        ("2001:db8:1:2::7", "2001:db8:1:2::/64", "2001:db8:1::/48"),
        ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64", "2001:db8:1::/48"),
        ("::ffff:203.0.113.7", "203.0.113.7", "203.0.113.0/24"),
        ("fe80::1%eth0", "fe80::/64", "fe80::/48"),
        ("", "", ""),
        ("not an address" * 20, ("not an address" * 20)[:100], ("not an address" * 20)[:100]),
    ],
)
def test_one_client_per_ipv4_address_and_per_ipv6_64(address: str, client: str, network: str) -> None:
    assert client_key(address) == client
    assert network_key(address) == network


def test_forwarded_for_is_read_only_behind_trusted_proxies() -> None:
    assert forwarded_address("10.0.0.1", ["198.51.100.9, 203.0.113.7"], 0) == "10.0.0.1"
    assert forwarded_address("10.0.0.1", ["198.51.100.9, 203.0.113.7"], 1) == "203.0.113.7"
    assert forwarded_address("10.0.0.1", ["198.51.100.9", "203.0.113.7"], 2) == "198.51.100.9"
    assert forwarded_address("10.0.0.1", ["203.0.113.7"], 2) == "10.0.0.1"  # shorter: the client's own words


def test_an_auth_frame_is_read_only_in_its_fixed_shape() -> None:
    frame = wire.auth_frame(7, "secret", "nonce", now=1_800_000_000)
    assert wire.parse_auth(frame) == json.loads(frame)
    for junk in (
        "[" * 100,
        '{"type": "auth", "bot_id": 7, "x": [1]}',  # an array
        '{"type": "auth", "bot_id": 7, "x": {"y": 1}}',  # nesting
        '{"type": "auth", "bot_id": 7, "x": "\\u0041"}',  # an escape
        '{"type": "other", "bot_id": 7}',
        "{" + '"a": 1, ' * 100 + '"type": "auth"}',  # over MAX_AUTH_FRAME_CHARS
        '{"type": "auth", "bot_id": 7',
    ):
        assert wire.parse_auth(junk) is None, junk


@pytest.mark.parametrize(
    ("frame", "rid"),
    [
        ('{"id":"a1","body":{"type":"pass"}}', "a1"),
        (' { "id" : "a1" , "body" : {} } ', "a1"),
        ('{"body":{"type":"pass","id":"inner"},"id":"a1"}', "a1"),
        ('{"body":{"id":"inner"}}', None),  # only the body's own id: none
        ('{"body":{"x":1,"id":"inner"}}', None),
        ('{"type":"x","id":"a1","body":{}}', None),  # neither first nor last
        ('{"id":"a\\u0031","body":{}}', None),  # escaped: not read
        ("not json {", None),
    ],
)
def test_an_answer_is_routed_by_its_first_or_last_key(frame: str, rid: str | None) -> None:
    assert wire.answer_id(frame) == rid


def test_reading_a_hostile_answers_id_is_linear() -> None:
    """The gateway reads an answer's id on its event loop: whatever a 64 KiB frame holds, that
    costs about what a plain frame of the same size costs (no backtracking, no JSON parse)."""
    size = 60_000
    plain = '{"id":"a1","body":{"pad":"' + "x" * size + '"}}'
    hostile = [
        '{"body":' + "[{}," * (size // 4) + "{}]" + ',"id":"a1"}',  # 15,000 objects, the id last
        '{"id":' * (size // 6),
        '"id"   ' * (size // 7) + "}",
        " " * size + "{",
        "{" + '"id":"' + "a" * 64 + '", ' * (size // 70) + "}",
    ]

    def cost(text: str) -> float:
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            wire.answer_id(text)
            best = min(best, time.perf_counter() - t)
        return best

    base = max(cost(plain), cost(" " * size + "x"), 1e-5)
    for text in hostile:
        assert cost(text) < 50 * base, text[:40]
