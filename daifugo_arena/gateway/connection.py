"""One authenticated bot connection (:class:`Connection`) and its two tasks: the reader, which
matches each answer frame to a request in flight by its id (:func:`read_answers`), and the
writer, which sends the frames of its outbox (:func:`write_frames`)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from arena import relay
from arena.faults import Fault, FaultCode, fault
from arena.usecases.bots import Credentials
from bots_sdk import wire
from daifugo_arena.gateway.frames import FLOOD_BURST, FLOOD_RATE, BotSocket

#: Most frames waiting in a connection's outbox; more is a slow reader.
OUTBOX_FRAMES = 1024
#: Seconds an id stays known after its request expired (a late answer is ignored, not a fault).
LATE_S = 60.0
#: Most characters of a bad frame kept in its fault.
RECEIVED_CHARS = 500

#: Where an answer list item goes: ``(request id, item, the request's deadline in Unix seconds)``
#: (:meth:`daifugo_arena.gateway.answers.Answers.queue`).
QueueAnswer = Callable[[str, bytes, float], None]


class Connection:
    """One authenticated bot connection held by this gateway."""

    def __init__(self, ws: ServerConnection, creds: Credentials, gateway_id: str, secret: str = ""):
        self.ws = ws
        self.creds = creds
        #: the signing secret the connection proved (it is closed once that one is no longer valid)
        self.secret = secret
        self.bot_id = creds.bot_id
        self.id = secrets.token_hex(6)
        self.since = time.time()
        self.member = relay.member(gateway_id, self.id, self.since)
        #: request id -> (deadline, Unix seconds; the envelope as popped)
        self.pending: dict[str, tuple[float, bytes]] = {}
        #: request id -> when it is forgotten (expired requests, notices)
        self.late: dict[str, float] = {}
        self.outbox: asyncio.Queue[str] = asyncio.Queue(OUTBOX_FRAMES)
        #: the fault its requests in flight get when it closes: (kind, why, received)
        self.violation: tuple[str, Fault, str] | None = None
        #: a probe of it runs (:meth:`daifugo_arena.gateway.liveness.Liveness.probe`), or ran since it
        #: was last heard from
        self.probed = False
        #: when its bot's connections on the other gateways were last looked up, Unix seconds
        self.looked = 0.0
        #: the ping time last written to its bot's story (Unix seconds), and when it was written
        self.ping_written: tuple[float | None, float] = (None, 0.0)

    def offend(self, kind: str, why: Fault, received: str = "") -> None:
        if self.violation is None:
            self.violation = (kind, why, received[:RECEIVED_CHARS])

    def heard(self) -> float:
        """When the bot was last heard from on this connection, Unix seconds."""
        heard = self.ws.heard if isinstance(self.ws, BotSocket) else time.monotonic()
        return time.time() - (time.monotonic() - heard)

    def drop_slow(self) -> None:
        """A slow reader: its requests get ``timeout``, the connection is dropped."""
        self.offend("timeout", fault(FaultCode.SLOW_READER))
        transport = self.ws.transport
        if transport is not None:
            transport.abort()


async def read_answers(conn: Connection, queue_answer: QueueAnswer) -> None:
    """Route each answer frame by its id (:func:`bots_sdk.wire.answer_id`), unparsed: the
    frame goes to the worker as the bot sent it (:func:`arena.relay.answer_item`), which parses
    it strictly. The work per frame is linear in its size with a small constant, never a JSON
    parse. Returns once the connection was closed for a frame out of the protocol."""
    ws = conn.ws
    try:
        async for msg in ws:
            if isinstance(msg, bytes):
                conn.offend("invalid_json", fault(FaultCode.BINARY_FRAME))
                await ws.close(wire.CLOSE_NOT_JSON, "binary frames are not part of the protocol")
                return
            rid = wire.answer_id(msg)
            if rid is None and not msg.lstrip().startswith("{"):
                conn.offend("invalid_json", fault(FaultCode.FRAME_NOT_OBJECT), msg)
                await ws.close(wire.CLOSE_NOT_JSON, "a frame is not a JSON object")
                return
            entry = conn.pending.pop(rid, None) if rid is not None else None
            if rid is None or entry is None:
                if rid is not None and conn.late.pop(rid, None) is not None:
                    continue  # a late answer (or one to a notice): ignored, once
                what = "answer to an unknown request id" if rid is not None else "answer without a request id"
                code = FaultCode.UNKNOWN_REQUEST_ID if rid is not None else FaultCode.NO_REQUEST_ID
                conn.offend("invalid_json", fault(code), msg)
                await ws.close(wire.CLOSE_PROTOCOL, what)
                return
            queue_answer(rid, relay.answer_item(msg), entry[0])
    except ConnectionClosed as exc:
        if exc.sent is not None and exc.sent.code == wire.CLOSE_TOO_BIG:
            conn.offend("body_too_large", fault(FaultCode.FRAME_OVER, n=wire.MAX_FRAME_BYTES))
        if isinstance(ws, BotSocket) and ws.flood is not None:
            conn.offend("connection_error", fault(FaultCode.FLOOD, burst=FLOOD_BURST, rate=f"{FLOOD_RATE:g}"))
        raise


async def write_frames(conn: Connection, send_timeout_s: float) -> None:
    """Send the frames of ``conn``'s outbox, each within ``send_timeout_s`` (more: a slow reader)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(None) as send_deadline:  # one timer, not a task per frame
            while True:
                frame = await conn.outbox.get()
                send_deadline.reschedule(loop.time() + send_timeout_s)
                await conn.ws.send(frame)
                send_deadline.reschedule(None)
    except TimeoutError:
        conn.drop_slow()
    except ConnectionClosed:
        return
