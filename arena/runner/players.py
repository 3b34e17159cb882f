"""Players of a match: the :class:`Player` protocol and its in-process, HTTP and withdrawn kinds.

Every player takes the same serialized decision request (protocol v1 JSON bytes) and returns
an :class:`Outcome`; the runner (:mod:`arena.runner.match`) does the time accounting
(TIME-1..3) and faults (FAULT-1..3) for all. A request's wait for a slot (:class:`SlotUse`)
comes back with its outcome or notice; these players take no slot (:data:`NO_SLOT`),
:class:`arena.runner.capped.CappedHttpPlayer` does. :class:`HttpPlayer`: one pooled
keep-alive connection through :class:`arena.bot_transport.PinnedTransport` (SSRF policy), no
redirects, proxies or cookies, each decision cut off at the seat's bank, the body capped at
``max_body_bytes`` (docs/operations.md, "SSRF").

Fault kinds (RULES FAULT-1; the runner adds ``invalid_action``):

=================== ==================================================================
``timeout``         no complete answer within the bank (TIME-3)
``connection_error`` refused, reset or closed connection, DNS failure
``http_status``     an answer whose status is not 200 (redirects included)
``body_too_large``  an answer body over ``max_body_bytes``, in more than
                    :data:`MAX_BODY_PIECES` pieces, or over :data:`WIRE_SLACK_BYTES`
                    more than that on the wire (headers, ``1xx`` answers, chunk framing)
``invalid_json``    an answer body that is not a strict UTF-8 JSON object
                    (:func:`arena.safejson.parse_answer`)
``bot_error``       in-process bots only: the bot raised an exception (a server answers 500)
=================== ==================================================================
"""

from __future__ import annotations

import errno
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, runtime_checkable

import httpx

from arena.bot_transport import WATCHDOG, PinnedTransport
from arena.config import allow_private_from_env
from arena.faults import Fault, FaultCode, fault
from arena.runner.answers import safe_text
from arena.safejson import parse_answer
from bots_sdk import protocol
from bots_sdk.bot import Bot, Request

#: Largest answer body read from a bot, bytes (larger is the fault ``body_too_large``).
MAX_BODY_BYTES = 64 * 1024
#: Most bytes read from a bot's connection for one answer beyond its body cap: the status
#: line and headers (an answer needs well under 1 KiB), ``1xx`` answers and chunk framing
#: (about 8 bytes a chunk). More is the fault ``body_too_large``
#: (:class:`arena.bot_transport.WireMeter`): a bot streaming ``100 Continue`` or chunk
#: extensions for its whole bank kept a core busy.
WIRE_SLACK_BYTES = 32 * 1024
#: Most pieces (HTTP chunks, or reads of a body that drips) of one answer body; more is the
#: fault ``body_too_large``. Each piece costs the worker about 20 microseconds under the
#: interpreter lock: 64 KiB of one-byte chunks took 1.3 s of CPU per answer and slowed
#: every other match of the process 5-fold, while an answer sent at once arrives in a few.
MAX_BODY_PIECES = 1024
#: How much of a faulty answer the log keeps, characters.
RECEIVED_LOG_CHARS = 500
#: Time allowed for a notice (match start/end), seconds; its errors are ignored.
NOTICE_TIMEOUT_S = 2.0


class SlotUse(NamedTuple):
    """A request's wait for a slot of its endpoint's cap (:mod:`arena.runner.semaphore`):
    ``wait_s`` seconds waited, ``bypassed`` True when it was sent without a slot."""

    wait_s: float = 0.0
    bypassed: bool = False


#: The figures of a request that takes no slot.
NO_SLOT = SlotUse()


class Outcome(NamedTuple):
    """What came back from one decision request.

    Attributes:
        action: the parsed JSON object, or None on a fault.
        fault: None, or a fault kind (module docstring).
        reason: the fault's code and parameters (:class:`arena.faults.Fault`; None when no
            fault); :attr:`detail` is its English text.
        received: the raw answer text, truncated to :data:`RECEIVED_LOG_CHARS` (for the log).
        elapsed_ms: milliseconds from sending the request to the complete answer (TIME-2).
        status: HTTP status, None for in-process bots or when no answer came.
        slot: the request's wait for a slot before it was sent (not part of ``elapsed_ms``).
        arena: why the request failed for the arena's own failure (its network, its relay,
            a gateway), not the bot's: the runner charges nothing and asks again
            (docs/protocol.md, "Whose fault is a wait"); "" when it was not the arena's.
        arena_ms: milliseconds of ``elapsed_ms`` the arena was unavailable on the bot's path
            (a gateway dead or stalled, the relay down): never taken from the bank.
    """

    action: dict[str, Any] | None
    fault: str | None
    reason: Fault | None
    received: str
    elapsed_ms: int
    status: int | None
    slot: SlotUse = NO_SLOT
    arena: str = ""
    arena_ms: int = 0

    @property
    def detail(self) -> str:
        """The fault's English text ('' when none)."""
        return "" if self.reason is None else self.reason.text()


class ArenaFailure(RuntimeError):
    """The arena itself failed on a decision's path (its relay, a gateway, the worker's own
    network or heartbeat) and no answer came: not the bot's fault (FAULT-1 counts only the
    bot's own failures). A player may raise it from ``decide``; the runner then asks the
    decision again, charging nothing (:class:`arena.runner.match.Match`), and gives up the
    match (:class:`arena.runner.gameplay.ArenaUnavailable`) when the arena stays down."""


class PlayerWithdrawn(Exception):
    """Raised by a player's ``decide`` or ``notify`` instead of sending, when the check its
    request made on the way (:class:`arena.runner.capped.SlotCap`'s gate, read with the slot)
    says its bot was deleted: the runner bars the player as withdrawn (FAULT-3), as if
    :attr:`arena.runner.match.Observers.withdrawn` had said so before the request."""


#: errno values of a request that failed on the worker's own side: no route, no network, no
#: local address (a link that went down under the worker). Not the bot's.
LOCAL_NETWORK_ERRNOS = frozenset({errno.ENETUNREACH, errno.ENETDOWN, errno.EADDRNOTAVAIL})


def local_network_error(exc: BaseException | None) -> str:
    """The worker's own network failure behind ``exc`` (its chain of causes is searched for
    an :class:`OSError` of :data:`LOCAL_NETWORK_ERRNOS`): its description, or ""."""
    seen = 0
    while exc is not None and seen < 16:
        if isinstance(exc, OSError) and exc.errno in LOCAL_NETWORK_ERRNOS:
            return f"the worker's own network failed ({errno.errorcode.get(exc.errno or 0, '?')}: {exc.strerror})"
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return ""


@runtime_checkable
class Player(Protocol):
    """What the match runner asks of a seat's player.

    Attributes:
        kind: ``"local"``, ``"http"``, ``"connect"``, ``"person"`` or ``"withdrawn"`` (the
            log's ``players[].kind``).
        name: display name in the log and the notices.
        url: the endpoint, or None (not a remote bot).
    """

    kind: str
    name: str
    url: str | None

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        """Send one decision request, wait at most ``timeout_s`` seconds; never raises."""
        ...

    def notify(self, body: bytes) -> SlotUse:
        """Send a notice (match start/end); its errors are ignored; never raises."""
        ...

    def close(self) -> None:
        """Give back what the player holds (connections)."""
        ...


#: The engine's refusal of an answer: ``(reason, rule id)`` (C-12; ``ACT``: malformed).
Refusal = tuple[str, str]
#: What a :class:`CheckedPlayer` is given to try an answer: the refusal, or None if accepted.
AnswerCheck = Callable[[Any], Refusal | None]


@runtime_checkable
class CheckedPlayer(Protocol):
    """A player that may try answers before it gives one: a person at a table
    (:mod:`arena.runner.person`). The runner calls :meth:`decide_checked` instead of
    :meth:`Player.decide`, with ``check``, the engine's judgement of an answer to the pending
    decision (nothing applied); a refused try is the person's to correct within the bank. Its
    outcome is judged as any other (TIME-2, FAULT-1)."""

    def decide_checked(self, body: bytes, timeout_s: float, check: AnswerCheck) -> Outcome:
        """As :meth:`Player.decide`; ``check`` may be called any number of times."""
        ...


def _truncate(text: str | bytes, limit: int = RECEIVED_LOG_CHARS) -> str:
    # what a fault keeps of a bot's text is strict UTF-8 (arena.runner.answers.safe_text)
    return safe_text(text, limit)


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000))


class LocalPlayer:
    """A :class:`Bot` in this process, through the same JSON path as over HTTP.

    The request bytes are parsed back to a dict, the bot called, its answer serialized and
    parsed again; the elapsed time is measured around all of it. An in-process bot cannot be
    interrupted: one that overruns its bank is faulted (``timeout``) once it returns.
    """

    kind = "local"

    def __init__(self, bot: Bot, name: str | None = None):
        self.bot = bot
        self.name: str = name or bot.name
        self.url: str | None = None

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        start = time.monotonic()
        try:
            action = self.bot.decide(Request(json.loads(body)))
        except Exception as e:  # the bot's bug: a fault, never a crash of the runner
            raised = fault(FaultCode.BOT_RAISED, exc=type(e).__name__, why=str(e))
            return Outcome(None, "bot_error", raised, "", _ms(time.monotonic() - start), None)
        try:
            raw = json.dumps(action).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as e:
            return Outcome(
                None,
                "invalid_json",
                fault(FaultCode.NOT_SERIALIZABLE, why=str(e)),
                _truncate(repr(action)),
                _ms(time.monotonic() - start),
                None,
            )
        obj, why = parse_answer(raw)
        elapsed = _ms(time.monotonic() - start)
        if obj is None:
            return Outcome(None, "invalid_json", why, _truncate(raw), elapsed, None)
        return Outcome(obj, None, None, "", elapsed, None)

    def notify(self, body: bytes) -> SlotUse:
        try:
            self.bot.notice(json.loads(body))
        except Exception:  # a notice error is never a fault (protocol: notices)
            pass
        return NO_SLOT

    def close(self) -> None:
        pass


_TLS_CONTEXT: ssl.SSLContext | None = None
_TLS_LOCK = threading.Lock()


def tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every bot client, built once under a lock (its cost:
    docs/design-notes.md, "Warm-up and pools").
    """
    global _TLS_CONTEXT
    if _TLS_CONTEXT is None:
        with _TLS_LOCK:
            if _TLS_CONTEXT is None:
                _TLS_CONTEXT = ssl.create_default_context()
    return _TLS_CONTEXT


#: Nagle off on the arena's side too: httpcore writes the headers and the body of a request
#: in two sends, and the second must not wait for the first one's ACK.
_SOCKET_OPTIONS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


#: What a request to a bot can raise that is the bot's (or its URL's) fault, not the arena's:
#: httpx's errors, socket errors, and ValueError for a host name that IDNA or the resolver
#: refuses (``http://xn--ls8h.la/``, ``http://a..b/``: idna.IDNAError, UnicodeError).
_CONNECTION_ERRORS = (httpx.HTTPError, OSError, ValueError)

#: Headers of every request to a bot (the protocol's own headers are added per request).
_BASE_HEADERS = {"User-Agent": "daifugo-arena/1", "Accept": "application/json"}


def _new_transport(allow_private: bool) -> PinnedTransport:
    """httpx's keep-alive connection pool for one bot: one connection, TCP_NODELAY, the
    shared verifying TLS context, no proxy (requests go straight to the transport, so the
    environment's proxy variables never apply), each connection to a checked address
    (:class:`~arena.bot_transport.PinnedTransport`)."""
    return PinnedTransport(
        allow_private=allow_private,
        ssl_context=tls_context(),
        socket_options=_SOCKET_OPTIONS,
        limits=httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=60),
    )


class HttpPlayer:
    """A bot endpoint called over HTTP (protocol v1), see the module docstring.

    Requests go straight to httpx's pooled transport (``httpx.HTTPTransport``: one keep-alive
    connection per bot, reused across decisions), not through ``httpx.Client``
    (docs/design-notes.md, "Warm-up and pools").

    Args:
        url: the bot URL (``http://`` or ``https://``).
        secret: signing secret (requests carry ``X-Arena-Timestamp`` / ``X-Arena-Signature``).
        name: display name (default: the URL).
        max_body_bytes: answer size cap (bytes).
        previous_secret: a rotated secret in its grace period: requests carry its signature too.
        allow_private: accept loopback/private bot addresses; None reads
            ``ARENA_ALLOW_PRIVATE_BOT_URLS`` from the environment (default false).

    A URL httpx cannot parse, or a host the SSRF policy refuses at connection time, makes the
    request the fault ``connection_error``.
    """

    kind = "http"

    def __init__(
        self,
        url: str,
        secret: str | None = None,
        name: str | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        *,
        allow_private: bool | None = None,
        previous_secret: str | None = None,
    ):
        self.url: str | None = url
        try:
            self._url: httpx.URL | None = httpx.URL(url)
        except (httpx.InvalidURL, TypeError):
            self._url = None
        self.secret = secret
        self.previous_secret = previous_secret
        self.name: str = name or url
        self.max_body_bytes = max_body_bytes
        self._sock: socket.socket | None = None
        self._fired = False
        self._exchange = 0  # number of the request in flight (or of the last one)
        self._active = False  # a request is in flight
        self.allow_private = allow_private_from_env() if allow_private is None else allow_private
        self.transport = _new_transport(self.allow_private)
        self._opened = False  # this attempt opened a new connection
        self._sent = False  # this attempt started sending its request
        #: Requests sent again on a fresh connection (:meth:`_send`), for tests and figures.
        self.resent = 0

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        if event == "connection.connect_tcp.started":
            self._opened = True
        elif event == "http11.send_request_headers.started":
            self._sent = True
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                self._sock = sock

    def _arm(self, deadline: float) -> int:
        """Start a request: the watchdog cuts it (only it) off at ``deadline`` (monotonic s)."""
        self._exchange += 1
        self._active = True
        n = self._exchange
        return WATCHDOG.arm(deadline, lambda: self._cut_exchange(n))

    def _disarm(self, handle: int) -> None:
        self._active = False
        WATCHDOG.disarm(handle)

    def _cut_exchange(self, n: int) -> None:
        # a deadline that fires as its request ends must not cut the player's next request
        if self._active and self._exchange == n:
            self._cut()

    def _cut(self) -> None:
        self._fired = True
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _post(
        self, body: bytes, timeout_s: float, headers: dict[str, str]
    ) -> tuple[int | None, bytes, str | None, Fault | None]:
        """POST and read the whole answer; returns (status, body, fault, reason).

        ``timeout_s`` bounds each connect, write and read (httpx); the watchdog bounds the
        whole exchange."""
        if self._url is None:
            raise httpx.UnsupportedProtocol(f"the bot URL {self.url!r} is not a valid URL")
        t = max(timeout_s, 0.001)
        request = httpx.Request(
            "POST",
            self._url,
            content=body,
            headers={**_BASE_HEADERS, **headers},
            extensions={"timeout": {"connect": t, "read": t, "write": t, "pool": t}, "trace": self._trace},
        )
        self.transport.backend.meter.start(self.max_body_bytes + WIRE_SLACK_BYTES)
        resp = self.transport.handle_request(request)
        try:
            status = resp.status_code
            chunks: list[bytes] = []
            size = 0
            stream = resp.stream
            assert isinstance(stream, httpx.SyncByteStream)
            for chunk in stream:
                size += len(chunk)
                if size > self.max_body_bytes:
                    return (
                        status,
                        b"".join(chunks)[:RECEIVED_LOG_CHARS],
                        "body_too_large",
                        fault(FaultCode.BODY_OVER, n=self.max_body_bytes),
                    )
                chunks.append(chunk)
                if len(chunks) > MAX_BODY_PIECES:
                    return (
                        status,
                        b"".join(chunks)[:RECEIVED_LOG_CHARS],
                        "body_too_large",
                        fault(FaultCode.BODY_PIECES, n=MAX_BODY_PIECES),
                    )
            return status, b"".join(chunks), None, None
        finally:
            resp.close()

    def _send(
        self, body: bytes, deadline: float, headers: dict[str, str]
    ) -> tuple[int | None, bytes, str | None, Fault | None]:
        """:meth:`_post` before ``deadline`` (monotonic s), and once more on a fresh connection
        when the bot had closed the pooled keep-alive connection this request went out on.

        HTTP/1.1 lets a server close an idle connection at any time (Node's server does after
        5 s). A connection closed well before is noticed by the pool, which opens a new one;
        one closed just as the request goes out fails before any byte of an answer. That
        request is sent again, once, on a new connection, if the deadline is not reached:
        no fault, and the time charged stays the real time from the first send
        (docs/protocol.md, "Transport"). Any other failure, a failure on a new connection, or
        one after an answer began, is raised as it is."""
        self._opened = self._sent = False
        try:
            return self._post(body, deadline - time.monotonic(), headers)
        except (httpx.TransportError, OSError) as e:
            meter = self.transport.backend.meter
            reused = self._sent and not self._opened
            if isinstance(e, httpx.TimeoutException) or not reused or meter.read or meter.over or self._fired:
                raise
            if deadline - time.monotonic() <= 0:
                raise
            self.resent += 1
            self._opened = self._sent = False
            return self._post(body, deadline - time.monotonic(), headers)

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        headers = protocol.sign(self.secret, body, previous=self.previous_secret)
        start = time.monotonic()
        deadline = start + max(timeout_s, 0.0)
        self._fired = False
        handle = self._arm(deadline)
        status: int | None = None
        raw = b""
        kind: str | None = None
        why: Fault | None = None
        arena = ""
        error: tuple[str, str] = ("", "")  # a connection error's exception name and words
        try:
            status, raw, kind, why = self._send(body, deadline, headers)
        except httpx.TimeoutException as e:
            kind, why = "timeout", fault(FaultCode.NO_COMPLETE_ANSWER, exc=type(e).__name__)
        except _CONNECTION_ERRORS as e:
            error = (type(e).__name__, str(e))
            kind, why = "connection_error", fault(FaultCode.CONNECTION_FAILED, exc=error[0], why=error[1])
            arena = local_network_error(e)
            if self.transport.backend.meter.over:
                kind, why = "body_too_large", fault(FaultCode.WIRE_OVER, n=self.max_body_bytes + WIRE_SLACK_BYTES)
        finally:
            self._disarm(handle)
        elapsed_s = time.monotonic() - start
        elapsed = _ms(elapsed_s)
        if kind is None and elapsed_s > timeout_s:
            kind, why = "timeout", fault(FaultCode.OVER_BANK, ms=elapsed)
        elif kind == "connection_error" and time.monotonic() >= deadline:
            kind, why = "timeout", fault(FaultCode.CUT_OFF, exc=error[0], why=error[1])
        if kind in ("timeout", "body_too_large") or self._fired:  # the connection is not reusable
            self._reset()
        if kind is None and status == 200:
            obj, why = parse_answer(raw)
            if obj is not None:
                return Outcome(obj, None, None, "", elapsed, status)
            kind = "invalid_json"
        elif kind is None:
            kind, why = "http_status", fault(FaultCode.HTTP_STATUS, status=status or 0)
        return Outcome(None, kind, why, _truncate(raw), elapsed, status, arena=arena)

    def _reset(self) -> None:
        """Drop pooled connections (after a cut-off or an oversized answer)."""
        self._cut()
        self._sock = None
        old = self.transport
        self.transport = _new_transport(self.allow_private)
        try:
            old.close()
        except Exception:
            pass

    def notify(self, body: bytes) -> SlotUse:
        """POST a notice; any error or status is ignored (never a fault)."""
        headers = protocol.sign(self.secret, body, previous=self.previous_secret)
        deadline = time.monotonic() + NOTICE_TIMEOUT_S
        handle = self._arm(deadline)
        try:
            self._send(body, deadline, headers)
        except _CONNECTION_ERRORS:
            self._reset()
        finally:
            self._disarm(handle)
        return NO_SLOT

    def close(self) -> None:
        self.transport.close()


class WithdrawnPlayer:
    """The seat of a bot that was withdrawn (deleted) before its match: the runner forfeits its
    games from the start (:mod:`arena.runner.match`, reason ``withdrawn``) and never
    calls it; it has no URL, so nothing can reach an endpoint that did not pass the check."""

    kind = "withdrawn"

    def __init__(self, name: str):
        self.name = name
        self.url: str | None = None

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        return Outcome(None, "connection_error", fault(FaultCode.WITHDRAWN), "", 0, None)

    def notify(self, body: bytes) -> SlotUse:
        return NO_SLOT

    def close(self) -> None:
        return None


#: What :func:`make_player` takes: a player, an in-process bot, or an ``http(s)://`` URL.
PlayerSpec = Player | Bot | str


def make_player(spec: PlayerSpec, secret: str | None = None, name: str | None = None) -> Player:
    """A player from a :class:`Bot` instance, an ``http(s)://`` URL, or an existing player.

    Raises:
        ValueError: none of these."""
    if isinstance(spec, Bot):
        return LocalPlayer(spec, name)
    if isinstance(spec, str):
        if spec.startswith(("http://", "https://")):
            return HttpPlayer(spec, secret, name)
        raise ValueError(f"a player is a Bot or an http(s):// URL, not {spec!r}")
    if isinstance(spec, Player):
        return spec
    raise ValueError(f"a player is a Bot or an http(s):// URL, not {spec!r}")
