"""Live match views through Redis pub/sub: the worker publishes, the pages stream them.

After every decision of a match the runner (``run_match(on_step=...)``, wired by
:func:`arena.core.runner.service.play_and_store`) calls :meth:`LivePublisher.step`, which
publishes two JSON messages:

- channel ``arena:live:match:<id>:public``: :func:`public_view`, the table as a spectator
  sees it: hand sizes, the field with every unrevealed face-down card as a count only,
  flags, whose turn, the acting seat's time bank, and the events since the previous step as
  ``engine.Game.history`` gives them to a viewer who is no seat (public versions of private
  events: no hand, no face-down identity, no set-aside or blind card, C-11 / MD-8);
- channel ``arena:live:match:<id>:full``: :func:`full_view`, the same plus every hand, the
  field and events in the full (log) view, for organizers.

A final ``{"type": "end"}`` message is published on both when the match is over.

Publishing never fails a match: a Redis error disables the publisher for the rest of the
match (one warning in the worker log); the match log stays the record. Readers subscribe with
:func:`subscribe`.

Message shape (JSON)::

    {"type": "step", "match_id", "game", "step", "unit", "seat" (who acted), "player" (its player index), "kind",
     "elapsed_ms", "bank_after_ms" (that seat's bank, milliseconds), "fault", "hand_sizes", "field", "revolution", "jback",
     "suit_lock", "number_lock", "direction", "to_act", "decision", "still_in", "over",
     "events": [...], "hands"?: [[card, ...] per seat] (full channel only)}
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import redis

from engine.cards import format_cards, sort_key

log = logging.getLogger(__name__)

#: A seat number no seat has: Game views for it are the spectator's (public) views.
SPECTATOR = -1
#: Redis socket timeouts of the publisher, seconds (a slow Redis must not slow a match).
PUBLISH_TIMEOUT_S = 0.25


def channel(match_id: int | str, full: bool) -> str:
    """The pub/sub channel of a match's public or full live view."""
    return f"arena:live:match:{match_id}:{'full' if full else 'public'}"


def _table(g: Any, seat: int | None) -> dict[str, Any]:
    d = g.decision()
    return {
        "unit": g.unit_index,
        "hand_sizes": [len(h) for h in g.hands],
        "field": [p.view(seat) for p in g.field],
        "revolution": g.revolution, "jback": g.jback,
        "suit_lock": sorted("SHDC"[s] for s in g.lock), "number_lock": g.nlock,
        "direction": g.direction,
        "to_act": d.seat if d else None, "decision": d.kind if d else None,
        "still_in": list(g.still_in), "over": g.over,
    }


def public_view(g: Any, events_from: int) -> dict[str, Any]:
    """The spectator's view of engine game ``g`` and its events since index ``events_from``."""
    return {**_table(g, SPECTATOR), "events": g.history(SPECTATOR, events_from)}


def full_view(g: Any, events_from: int) -> dict[str, Any]:
    """Everything: every hand, face-down cards named, all events since ``events_from``."""
    return {**_table(g, None), "events": g.history(None, events_from),
            "hands": [format_cards(sorted(h, key=sort_key)) for h in g.hands]}


class LivePublisher:
    """Publishes one match's live views to Redis at ``url`` (module docstring)."""

    def __init__(self, url: str, match_id: int | str):
        self.match_id = match_id
        self._events_seen: dict[int, int] = {}
        try:
            self._redis: redis.Redis | None = redis.Redis.from_url(
                url, socket_connect_timeout=PUBLISH_TIMEOUT_S, socket_timeout=PUBLISH_TIMEOUT_S)
        except (ValueError, redis.RedisError) as exc:
            log.warning("live: no publisher for match %s (%s)", match_id, exc)
            self._redis = None

    def _publish(self, full: bool, message: dict[str, Any]) -> None:
        if self._redis is None:
            return
        try:
            self._redis.publish(channel(self.match_id, full), json.dumps(message, separators=(",", ":")))
        except redis.RedisError as exc:
            log.warning("live: publishing match %s stopped (%s)", self.match_id, exc)
            self._redis = None

    def step(self, game_index: int, g: Any, exchange: dict[str, Any]) -> None:
        """Publish the views after one decision (``exchange``: the runner's record of it)."""
        if self._redis is None:
            return
        start = self._events_seen.get(game_index, 0)
        self._events_seen[game_index] = len(g.events)
        head = {"type": "step", "match_id": self.match_id, "game": game_index, "step": exchange.get("n"),
                "seat": exchange.get("seat"), "player": exchange.get("player"), "kind": exchange.get("kind"),
                "elapsed_ms": exchange.get("elapsed_ms"), "bank_after_ms": exchange.get("bank_after_ms"),
                "fault": exchange.get("fault")}
        self._publish(False, {**head, **public_view(g, start)})
        self._publish(True, {**head, **full_view(g, start)})

    def end(self) -> None:
        """Publish the end of the match on both channels and close the connection."""
        for full in (False, True):
            self._publish(full, {"type": "end", "match_id": self.match_id})
        if self._redis is not None:
            self._redis.close()


def subscribe(url: str, match_id: int | str, *, full: bool, idle_s: float = 15.0) -> Iterator[str | None]:
    """Messages (JSON text) of a match's live channel as they come; ``None`` after ``idle_s``
    seconds without one (a keep-alive point for the reader). Ends after the ``end`` message.

    Raises:
        redis.RedisError: Redis cannot be reached.
    """
    client = redis.Redis.from_url(url, socket_connect_timeout=2.0)
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(channel(match_id, full))
    try:
        while True:
            msg = pubsub.get_message(timeout=idle_s)
            if msg is None:
                yield None
                continue
            data = msg.get("data")
            text = data.decode() if isinstance(data, bytes) else str(data)
            yield text
            if text.startswith('{"type":"end"'):
                return
    finally:
        pubsub.close()
        client.close()
