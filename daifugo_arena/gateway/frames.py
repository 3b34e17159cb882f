"""The frame policy of a bot's socket (:class:`BotSocket`): what a connection may send beyond its
answers (pings, pongs, fragments: a token bucket), and before its welcome (a bounded number of
bytes). The gateway's table of what a connection does wrong: :mod:`daifugo_arena.gateway.server`."""

from __future__ import annotations

import time
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.frames import BINARY, CLOSE, PING, TEXT, Frame
from websockets.protocol import State

from bots_sdk import wire

#: Frames a connection may send beyond whole messages (pings, pongs, fragments of a message) at
#: once, refilled at :data:`FLOOD_RATE` a second; more is a flood.
FLOOD_BURST = 64
FLOOD_RATE = 16.0


class BotSocket(ServerConnection):
    """A bot's socket: counts the frames that are not whole messages (pings, pongs, fragments).

    A whole message must answer a request (one per request,
    :func:`daifugo_arena.gateway.connection.read_answers`), but each ping is answered by a pong the
    peer may never read: past :data:`FLOOD_BURST` such frames (refilled at :data:`FLOOD_RATE` a
    second) the connection is failed with 1008, no more of it is read, :attr:`flood` says why, and
    it is dropped ``close_timeout`` seconds later.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.tokens, self.refilled = float(FLOOD_BURST), time.monotonic()
        #: when the bot was last heard from (any frame, pongs included), monotonic seconds
        self.heard = time.monotonic()
        #: when the bot last pinged (the protocol's keep-alive), Unix seconds; None: never
        self.pinged: float | None = None
        #: the bot id its auth frame claimed (None: none yet, or not an integer)
        self.claimed: int | None = None
        #: the fault detail once flooded, else None
        self.flood: str | None = None
        #: the connection proved its bot (set by the gateway once welcomed)
        self.authenticated = False
        #: bytes read before that (:data:`bots_sdk.wire.MAX_PREAUTH_BYTES` at most)
        self.preauth_bytes = 0

    def data_received(self, data: bytes) -> None:
        if self.flood is not None:
            return  # failed: nothing more is read into the connection
        if not self.authenticated:
            self.preauth_bytes += len(data)
            if self.preauth_bytes > wire.MAX_PREAUTH_BYTES:  # a stranger: no more of it is parsed
                self._cut(
                    wire.CLOSE_TOO_BIG,
                    f"more than {wire.MAX_PREAUTH_BYTES} bytes before authentication",
                )
                return
        super().data_received(data)

    def _cut(self, code: int, reason: str) -> None:
        """Fail the connection with ``code`` (when open), read nothing more of it, drop it
        ``close_timeout`` seconds later."""
        self.flood = reason
        if self.protocol.state is State.OPEN:
            self.protocol.fail(code, reason)
            self.send_data()  # the close frame, then the end of the stream
        if self.transport is not None:
            self.transport.pause_reading()
            self.loop.call_later(self.close_timeout or 2.0, self.transport.abort)

    def process_event(self, event: Any) -> None:
        if self.flood is not None:
            return  # failed: nothing more is read into the connection
        super().process_event(event)
        self.heard = time.monotonic()
        if isinstance(event, Frame) and event.opcode is PING:
            self.pinged = time.time()
        if not isinstance(event, Frame) or event.opcode is CLOSE or (event.fin and event.opcode in (TEXT, BINARY)):
            return  # a whole message, or the close
        now = time.monotonic()
        self.tokens = min(float(FLOOD_BURST), self.tokens + (now - self.refilled) * FLOOD_RATE) - 1.0
        self.refilled = now
        if self.tokens >= 0:
            return
        self._cut(wire.CLOSE_PROTOCOL, "a flood of pings, pongs or fragments")
        self.flood = (
            f"the gateway closed the connection: a flood of frames (more than {FLOOD_BURST} pings, pongs or"
            f" fragments at once, {FLOOD_RATE:g} a second)"
        )
