"""Every special-purpose address range against the bot URL policy (arena/url_policy.py), as a
contestant who wants the arena to call into a network it should not reach would try them.

Issue 29: ``http://[fec0::1]/`` was accepted (deprecated site-local IPv6: ``is_global`` is
True for ``fec0::/10`` on Python 3.11). The table below is the audit: each range of IANA's
special-purpose registries (and the IPv6 forms that embed an IPv4 address), a sample address,
and what the policy does without and with ``allow_private``. The answer never depends on the
Python version's own tables (``REFUSED_RANGES`` and the embedding rules decide)."""

from __future__ import annotations

import socket

import pytest

from arena.url_policy import BotUrlError, check_bot_url, checked_addresses

OK, REFUSED = None, "refused"

#: (address, without allow_private, with allow_private, what it is)
SPECIAL = [
    # -- the report, and the ranges Python 3.11 calls global although they are not ----------
    ("fec0::1", REFUSED, REFUSED, "site-local, deprecated (RFC 3879)"),
    ("feff:ffff::1", REFUSED, REFUSED, "site-local, last of fec0::/10"),
    ("3fff::1", REFUSED, REFUSED, "documentation (RFC 9637)"),
    ("3fff:fff:ffff::1", REFUSED, REFUSED, "documentation, last of 3fff::/20"),
    ("192.88.99.1", REFUSED, REFUSED, "6to4 relay anycast, deprecated (RFC 7526)"),
    ("::ffff:192.88.99.1", REFUSED, REFUSED, "the same, IPv4-mapped"),
    # -- IPv6 forms embedding an IPv4 address -----------------------------------------------
    ("::ffff:127.0.0.1", REFUSED, OK, "IPv4-mapped loopback"),
    ("::ffff:10.1.2.3", REFUSED, OK, "IPv4-mapped private"),
    ("::ffff:169.254.169.254", REFUSED, REFUSED, "IPv4-mapped metadata"),
    ("::ffff:8.8.8.8", OK, OK, "IPv4-mapped public"),
    ("::ffff:0:a00:1", REFUSED, REFUSED, "IPv4-translated (RFC 2765), reserved"),
    ("::127.0.0.1", REFUSED, REFUSED, "IPv4-compatible, deprecated (RFC 4291)"),
    ("::8.8.8.8", REFUSED, REFUSED, "IPv4-compatible of a public address, deprecated"),
    ("2002:7f00:1::", REFUSED, OK, "6to4 of 127.0.0.1"),
    ("2002:a00:1::", REFUSED, OK, "6to4 of 10.0.0.1"),
    ("2002:a9fe:a9fe::", REFUSED, REFUSED, "6to4 of the metadata address"),
    ("2002:c058:6301::", REFUSED, REFUSED, "6to4 of the 6to4 relay anycast"),
    ("2002::", REFUSED, REFUSED, "6to4 of 0.0.0.0"),
    ("2002:808:808::1", OK, OK, "6to4 of 8.8.8.8"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", REFUSED, REFUSED, "Teredo, client 127.0.0.1"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", REFUSED, REFUSED, "Teredo, client 192.0.2.45"),
    ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", REFUSED, REFUSED, "Teredo, client 8.8.8.8 (a tunnel)"),
    ("64:ff9b::7f00:1", REFUSED, OK, "NAT64 of 127.0.0.1"),
    ("64:ff9b::a9fe:a9fe", REFUSED, REFUSED, "NAT64 of the metadata address"),
    ("64:ff9b::808:808", OK, OK, "NAT64 of 8.8.8.8"),
    ("64:ff9b:1::a00:1", REFUSED, OK, "local-use NAT64 of 10.0.0.1"),
    ("64:ff9b:1::808:808", OK, OK, "local-use NAT64 of 8.8.8.8"),
    # -- the other IPv6 special ranges ------------------------------------------------------
    ("::", REFUSED, REFUSED, "unspecified"),
    ("::1", REFUSED, OK, "loopback"),
    ("100::1", REFUSED, REFUSED, "discard-only (RFC 6666)"),
    ("2001:db8::1", REFUSED, OK, "documentation (RFC 3849): private for the local setting"),
    ("2001:2::1", REFUSED, OK, "benchmarking (RFC 5180)"),
    ("2001:10::1", REFUSED, OK, "ORCHID, deprecated"),
    ("2001:20::1", REFUSED, OK, "ORCHIDv2"),
    ("fc00::1", REFUSED, OK, "unique local"),
    ("fd00:ec2::254", REFUSED, REFUSED, "the AWS metadata address (unique local)"),
    ("fe80::1", REFUSED, REFUSED, "link-local"),
    ("fe80::1%1", REFUSED, REFUSED, "link-local with a zone"),
    ("ff02::1", REFUSED, REFUSED, "multicast"),
    ("5f00::1", REFUSED, REFUSED, "segment routing SIDs (RFC 9602)"),
    ("4000::1", REFUSED, REFUSED, "unassigned, reserved"),
    ("2620:4f:8000::1", OK, OK, "global unicast"),
    # -- IPv4 -------------------------------------------------------------------------------
    ("0.0.0.0", REFUSED, REFUSED, "unspecified"),
    ("0.1.2.3", REFUSED, REFUSED, "this network"),
    ("10.0.0.1", REFUSED, OK, "private (RFC 1918)"),
    ("100.64.0.1", REFUSED, OK, "shared address space (RFC 6598)"),
    ("100.100.100.200", REFUSED, REFUSED, "the Alibaba metadata address"),
    ("127.0.0.1", REFUSED, OK, "loopback"),
    ("169.254.169.254", REFUSED, REFUSED, "the cloud metadata address"),
    ("169.254.1.1", REFUSED, REFUSED, "link-local"),
    ("172.16.0.1", REFUSED, OK, "private"),
    ("192.0.0.1", REFUSED, OK, "IETF protocol assignments"),
    ("192.0.2.1", REFUSED, OK, "documentation TEST-NET-1"),
    ("192.168.1.1", REFUSED, OK, "private"),
    ("198.18.0.1", REFUSED, OK, "benchmarking"),
    ("198.51.100.1", REFUSED, OK, "documentation TEST-NET-2"),
    ("203.0.113.1", REFUSED, OK, "documentation TEST-NET-3"),
    ("224.0.0.1", REFUSED, REFUSED, "multicast"),
    ("240.0.0.1", REFUSED, REFUSED, "reserved"),
    ("255.255.255.255", REFUSED, REFUSED, "limited broadcast"),
    ("8.8.8.8", OK, OK, "global unicast"),
]


def _literal(address: str) -> str:
    return f"http://[{address}]/" if ":" in address else f"http://{address}/"


def _verdict(url: str, allow_private: bool) -> str | None:
    try:
        check_bot_url(url, allow_private=allow_private)
    except BotUrlError:
        return REFUSED
    return OK


@pytest.mark.parametrize(("address", "strict", "local", "what"), SPECIAL, ids=[row[0] for row in SPECIAL])
def test_every_special_range_as_a_literal_url(address, strict, local, what):
    url = _literal(address.replace("%", "%25"))
    assert _verdict(url, False) == strict, what
    assert _verdict(url, True) == local, what


@pytest.mark.parametrize(("address", "strict", "local", "what"), SPECIAL, ids=[row[0] for row in SPECIAL])
def test_every_special_range_behind_a_host_name(address, strict, local, what, monkeypatch):
    """The same verdicts when a name resolves to the address (a registration, and every
    connection: arena.bot_transport calls checked_addresses), next to a public address."""
    real = socket.getaddrinfo

    def resolve(host, port, *args, **kwargs):
        if host != "bot.attacker.test":
            return real(host, port, *args, **kwargs)
        out = []
        for a in ("93.184.215.14", address.split("%")[0]):
            family = socket.AF_INET6 if ":" in a else socket.AF_INET
            out.append((family, socket.SOCK_STREAM, 6, "", (a, port)))
        return out

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    for allow_private, expected in ((False, strict), (True, local)):
        try:
            checked_addresses("bot.attacker.test", 80, allow_private=allow_private)
            verdict = OK
        except BotUrlError as exc:
            assert "bot.attacker.test (" in str(exc)
            verdict = REFUSED
        assert verdict == expected, (what, allow_private)


def test_the_reported_address_says_why():
    with pytest.raises(BotUrlError, match=r"fec0::1 is a deprecated site-local address .*bot URLs must be public$"):
        check_bot_url("http://[fec0::1]/", allow_private=True)


def test_registering_the_reported_url_is_a_422_naming_the_field(make_app, accounts):
    """The attack through the API, with the strict setting a server facing contestants has."""
    client = make_app(allow_private=False).test_client()
    accounts.client = client
    eve = accounts.contestant("eve")
    for url in ("http://[fec0::1]/", "http://[3fff::1]:8080/bot", "http://[::8.8.8.8]/", "http://192.88.99.1/"):
        r = client.post("/api/v1/bots", json={"name": "b", "url": url, "rulesets": ["jdf"]}, headers=eve)
        assert r.status_code == 422 and "json.url" in r.json["message"], (url, r.json)
