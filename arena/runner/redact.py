"""URL redaction of a match log kept without URLs (tournament logs: C-11).

A competitor must not learn an opponent's endpoint: :func:`blank_urls` replaces every
spelling of the players' URLs and hosts in the faults' texts by :data:`URL_BLANK`, and IP
addresses in the arena's own error texts by ``<address>``. Pure (standard library).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from arena.matchlog import FaultRecord

#: What replaces a bot's URL in the fault details of a log kept without URLs.
URL_BLANK = "<bot url>"


#: IP address literals in an error text (IPv4 dotted quads, IPv6 with at least two colons).
_ADDRESS = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b|\[?\b[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}\b\]?")


def _url_needles(url: str) -> list[str]:
    """Every spelling of a bot URL's endpoint an error text may carry: the URL as typed, its
    host and port as typed and normalised (lower case, no trailing dot, IDNA), the host alone."""
    out = [url, url.rstrip("/")]
    netloc = url.split("://", 1)[-1].split("/", 1)[0]
    out.append(netloc)
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        port = parts.port
    except ValueError:
        return [n for n in out if n]
    spellings = {host}
    try:
        spellings.add(host.encode("idna").decode("ascii"))
    except UnicodeError:
        pass
    for h in spellings:
        if h:
            out.append(h)
            if port is not None:
                out.append(f"{h}:{port}")
    return [n for n in out if n]


def blank_urls(faults: Iterable[FaultRecord], urls: Iterable[str | None]) -> None:
    """Replace every one of ``urls`` and its host (every spelling, any case) in the faults'
    ``detail``, text ``params`` and ``received`` by :data:`URL_BLANK`, in place, and IP
    addresses in the arena's own error texts (``detail``, ``params``) too: the address a host resolved to identifies the
    bot's server as well as its name (C-11). None entries are skipped."""
    needles: list[str] = []
    for url in urls:
        if url:
            needles.extend(_url_needles(url))
    needles = sorted(set(needles), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(n) for n in needles), re.IGNORECASE) if needles else None

    def blank(text: str) -> str:
        return _ADDRESS.sub("<address>", pattern.sub(URL_BLANK, text) if pattern is not None else text)

    for f in faults:
        received = f["received"]
        f["detail"], f["received"] = blank(f["detail"]), pattern.sub(URL_BLANK, received) if pattern else received
        if "params" in f:  # the words of an exception (a connection error) may name the host too
            f["params"] = {k: blank(v) if isinstance(v, str) else v for k, v in f["params"].items()}
