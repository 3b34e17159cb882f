"""Live views through Redis pub/sub: the worker publishes, the pages stream them.

**Matches.** :meth:`LivePublisher.step` (the runner's ``on_step``, wired by
:func:`arena.delivery.play_and_store`) publishes after every decision, on
``arena:live:match:<id>:public`` :func:`public_view` (a spectator's table, C-11: no hand, no
face-down identity, public events only, MD-8 / TM-2 / TM-3 / JDF-2 / JDF-4), on
``arena:live:match:<id>:full`` :func:`full_view` (plus every hand, for organizers) and on
``arena:live:match:<id>:player:<p>`` :func:`seat_view` (what player ``p``'s bot itself sees:
the spectator's table with its own hand, its own face-down cards and the events shown to its
seat, for the bot's owner); a final ``{"type": "end"}`` on each. Who may watch which:
:func:`arena.access.live_view_for` and :func:`arena.access.live_players_for`.
**Tournaments.** :func:`publish_tournament_event` / :func:`announce` (when
:func:`live_enabled`) put :data:`TOURNAMENT_EVENTS` on ``arena:live:tournament:<id>``.
Readers: :func:`subscribe`, :func:`subscribe_tournament`. Publishing never raises nor fails a
match (a Redis error: a warning); callers publish after their commit. Design: docs/ui.md, "Live".

Match message shape (JSON)::

    {"type": "step", "match_id", "game", "step", "unit", "seat" (who acted), "player" (its player index),
     "seats" (player index of each seat in this game, or null), "kind", "elapsed_ms",
     "bank_after_ms" (that seat's bank, milliseconds), "fault", "hand_sizes", "field", "revolution", "jback",
     "suit_lock", "number_lock", "direction", "to_act", "decision", "still_in", "over",
     "match_totals" (each player's score summed over the match's games ended so far, by player
     index, or null when the seats are not known), "events": [...],
     "hands"?: [[card, ...] per seat] (full channel; a player's channel: its own seat's hand,
     null for every other seat), "own_seat"? (a player's channel: the seat it plays now)}

Tournament message shape (JSON)::

    {"type": "tournament", "tournament_id", "event": "claimed" | "finished" | "failed" | "queued"
     | "waiting" (a start waiting for offline entrants took its roll call) | "started" (it ended
     its wait and started), "match_ids": [id, ...]}
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

import redis

import engine
from arena.config import Settings
from engine.cards import format_cards, sort_key

log = logging.getLogger(__name__)

#: A seat number no seat has: Game views for it are the spectator's (public) views.
SPECTATOR = -1
#: A channel nobody listened to is skipped for this long, seconds (:meth:`LivePublisher.step`).
QUIET_S = 1.0
#: Redis socket timeouts of the publisher, seconds (a slow Redis must not slow a match).
PUBLISH_TIMEOUT_S = 0.25
#: Longest wait for Redis to confirm a reader's subscription, seconds (:class:`Subscription`).
SUBSCRIBE_TIMEOUT_S = 5.0


#: Tournament events (:func:`publish_tournament_event`).
TOURNAMENT_EVENTS = ("claimed", "finished", "failed", "queued", "waiting", "started")
#: Keys an event of the spectator's view never keeps (the hands at a Million Doubt game's
#: end are in the post-game log, not in a live view of a running tournament).
PRIVATE_EVENT_KEYS = ("hand", "hands")


def channel(match_id: int | str, full: bool) -> str:
    """The pub/sub channel of a match's public or full live view."""
    return f"arena:live:match:{match_id}:{'full' if full else 'public'}"


def player_channel(match_id: int | str, player: int) -> str:
    """The pub/sub channel of what player ``player`` (its index in the match, ``match_seats.seat``)
    sees of a match (:func:`seat_view`)."""
    return f"arena:live:match:{match_id}:player:{int(player)}"


def tournament_channel(tournament_id: int | str) -> str:
    """The pub/sub channel of a tournament's events."""
    return f"arena:live:tournament:{tournament_id}"


def _table(g: Any, seat: int | None) -> dict[str, Any]:
    d = g.decision()
    return {
        "unit": g.unit_index,
        "hand_sizes": [len(h) for h in g.hands],
        "field": [p.view(seat) for p in g.field],
        "revolution": g.revolution,
        "jback": g.jback,
        "suit_lock": sorted("SHDC"[s] for s in g.lock),
        "number_lock": g.nlock,
        "direction": g.direction,
        "to_act": d.seat if d else None,
        "decision": d.kind if d else None,
        "still_in": list(g.still_in),
        "over": g.over,
    }


def public_view(g: Any, events_from: int) -> dict[str, Any]:
    """The spectator's view of engine game ``g`` and its events since index ``events_from``."""
    events = [{k: v for k, v in e.items() if k not in PRIVATE_EVENT_KEYS} for e in g.history(SPECTATOR, events_from)]
    return {**_table(g, SPECTATOR), "events": events}


def seat_view(g: Any, seat: int, events_from: int) -> dict[str, Any]:
    """What the bot in ``seat`` of engine game ``g`` sees itself (its observation, C-11): the
    spectator's table with the face-down cards it played named, the events shown to its seat
    since ``events_from`` (cards given to it, its own exchange...), and its own hand; every other
    seat's hand is null. Nothing another seat holds that this seat may not see."""
    events = [{k: v for k, v in e.items() if k != "hands"} for e in g.history(seat, events_from)]
    hands: list[list[str] | None] = [None] * len(g.hands)
    hands[seat] = format_cards(sorted(g.hands[seat], key=sort_key))
    return {**_table(g, seat), "events": events, "hands": hands, "own_seat": seat}


def full_view(g: Any, events_from: int) -> dict[str, Any]:
    """Everything: every hand, face-down cards named, all events since ``events_from``."""
    return {
        **_table(g, None),
        "events": g.history(None, events_from),
        "hands": [format_cards(sorted(h, key=sort_key)) for h in g.hands],
    }


class LivePublisher:
    """Publishes one match's live views to Redis at ``url`` (module docstring); ``seats``:
    the player index of each seat, per game of the match (the match's game specs)."""

    def __init__(self, url: str, match_id: int | str, seats: list[list[int]] | None = None):
        self.match_id = match_id
        self.seats = seats
        # per channel ("public", "full", or a player's index) and game: events already published
        self._events_seen: dict[tuple[str | int, int], int] = {}
        # per channel: monotonic time before which nobody was listening (skip building it)
        self._quiet_until: dict[str | int, float] = {}
        # players of the match (their channels get the end too)
        self._players = len(seats[0]) if seats else 0
        # each player's score over the games ended so far (a viewer who joins late gets them)
        self._totals: list[int] | None = [0] * len(seats[0]) if seats else None
        self._totalled: set[int] = set()
        # the last decision (game index, engine game, exchange) and the channels that skipped it
        self._last: tuple[int, Any, Mapping[str, Any]] | None = None
        self._skipped: set[str | int] = set()
        try:
            self._redis: redis.Redis | None = redis.Redis.from_url(
                url, socket_connect_timeout=PUBLISH_TIMEOUT_S, socket_timeout=PUBLISH_TIMEOUT_S
            )
        except (ValueError, redis.RedisError) as exc:
            log.warning("live: no publisher for match %s (%s)", match_id, exc)
            self._redis = None

    def _publish(self, full: bool, message: dict[str, Any]) -> None:
        self._publish_to(channel(self.match_id, full), message)

    def _publish_to(self, name: str, message: dict[str, Any]) -> None:
        if self._redis is None:
            return
        try:
            self._redis.publish(name, json.dumps(message, separators=(",", ":")))
        except redis.RedisError as exc:
            log.warning("live: publishing match %s stopped (%s)", self.match_id, exc)
            self._redis = None

    def step(self, game_index: int, g: Any, exchange: Mapping[str, Any]) -> None:
        """Publish the views after one decision (``exchange``: the runner's record of it).

        Every channel goes in one Redis round trip. A channel whose last message reached no
        subscriber is neither built nor sent for :data:`QUIET_S` seconds (most matches are
        watched by no one, and a worker plays many at once). What a channel skipped is never
        lost: a viewer who opens the live view in that time gets every event since the last
        message sent on it with the first decision after that time, at the latest with the
        last state of the game when the next game starts, or of the match before its end
        (:meth:`end`)."""
        if self._redis is None:
            return
        if self._last is not None and self._last[0] != game_index:
            self._flush()  # the previous game's end, on the channels that skipped it
        self._add_game_scores(game_index, g)
        self._last = (game_index, g, exchange)
        now = time.monotonic()
        self._players = max(self._players, len(g.hands))
        keys: list[str | int] = ["public", "full", *range(self._players)]  # a player's channel: its index
        channels = [key for key in keys if now >= self._quiet_until.get(key, 0.0)]
        self._skipped.update(key for key in keys if key not in channels)
        if not channels:
            return
        received = self._send(game_index, g, exchange, channels)
        for key, count in zip(channels, received):
            if not count:
                self._quiet_until[key] = now + QUIET_S

    def _flush(self) -> None:
        """Publish the last decision's views on every channel that skipped it (quiet)."""
        if self._last is None or not self._skipped or self._redis is None:
            return
        channels = sorted(self._skipped, key=str)
        self._send(*self._last, channels)

    def _send(self, game_index: int, g: Any, exchange: Mapping[str, Any], channels: list[str | int]) -> list[int]:
        """Publish the views of ``channels`` after a decision, in one round trip; the count
        of subscribers each reached (none when Redis failed: publishing stops)."""
        assert self._redis is not None
        head = {
            "type": "step",
            "match_id": self.match_id,
            "game": game_index,
            "step": exchange.get("n"),
            "seat": exchange.get("seat"),
            "player": exchange.get("player"),
            "seats": self.seats[game_index] if self.seats and game_index < len(self.seats) else None,
            "kind": exchange.get("kind"),
            "elapsed_ms": exchange.get("elapsed_ms"),
            "bank_after_ms": exchange.get("bank_after_ms"),
            "fault": exchange.get("fault"),
            "match_totals": list(self._totals) if self._totals is not None else None,
        }
        pipe = self._redis.pipeline(transaction=False)
        for key in channels:
            self._skipped.discard(key)
            start = self._events_seen.get((key, game_index), 0)
            self._events_seen[(key, game_index)] = len(g.events)
            if isinstance(key, str):
                view = full_view(g, start) if key == "full" else public_view(g, start)
                name = channel(self.match_id, key == "full")
            else:
                view = seat_view(g, self._seat_of(game_index, key), start)
                name = player_channel(self.match_id, key)
            pipe.publish(name, json.dumps({**head, **view}, separators=(",", ":")))
        try:
            return [int(n) for n in pipe.execute()]
        except redis.RedisError as exc:
            log.warning("live: publishing match %s stopped (%s)", self.match_id, exc)
            self._redis = None
            return []

    def _seat_of(self, game_index: int, player: int) -> int:
        """The seat player ``player`` holds in game ``game_index`` (its index when the seats
        are not known: seat = player)."""
        if self.seats and game_index < len(self.seats) and player in self.seats[game_index]:
            return self.seats[game_index].index(player)
        return player

    def _add_game_scores(self, game_index: int, g: Any) -> None:
        """Once game ``game_index`` is over, add its scores (``Game.result()``, by seat) to the
        players' match totals, as the match result sums them (``arena.runner.match``)."""
        if self._totals is None or game_index in self._totalled or not g.over or self.seats is None:
            return
        result = g.result()
        if result is None or game_index >= len(self.seats):
            return
        self._totalled.add(game_index)
        for seat, player in enumerate(self.seats[game_index]):
            if player < len(self._totals):
                self._totals[player] += int(result["scores"].get(str(seat), 0))

    def end(self) -> None:
        """Publish the end of the match on every channel and close the connection; first, the
        last decision's views on every channel that skipped it (:meth:`step`): a viewer
        never sees the end without what happened after it subscribed."""
        self._flush()
        for full in (False, True):
            self._publish(full, {"type": "end", "match_id": self.match_id})
        # seats unknown and no step published: every player index a rule set has
        for player in range(self._players or max(engine.SEATS.values())):
            self._publish_to(player_channel(self.match_id, player), {"type": "end", "match_id": self.match_id})
        if self._redis is not None:
            self._redis.close()


def publish_tournament_event(url: str, tournament_id: int, event: str, match_ids: list[int]) -> bool:
    """Publish a tournament event (module docstring) to Redis at ``url``; call it after the
    commit that made it true. Never raises: returns False (and logs a warning) when Redis
    cannot be reached or ``url`` is no Redis URL.

    Raises:
        ValueError: ``event`` is not one of :data:`TOURNAMENT_EVENTS` (a programming error).
    """
    if event not in TOURNAMENT_EVENTS:
        raise ValueError(f"unknown tournament event {event!r}")
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return False
    message = {
        "type": "tournament",
        "tournament_id": tournament_id,
        "event": event,
        "match_ids": [int(m) for m in match_ids],
    }
    try:
        client = _tournament_client(url)
        client.publish(tournament_channel(tournament_id), json.dumps(message, separators=(",", ":")))
        return True
    except (ValueError, redis.RedisError) as exc:
        log.warning("live: tournament %s event %s not published (%s)", tournament_id, event, exc)
        return False


_TOURNAMENT_CLIENTS: dict[str, redis.Redis] = {}


def live_enabled(settings: Settings) -> bool:
    """True when live views are published: a Redis broker, not eager mode (a quick local run
    has no Redis)."""
    return settings.shared_redis


def announce(settings: Settings, tournament_id: int, event: str, match_ids: list[int]) -> None:
    """Publish a tournament event (:func:`publish_tournament_event`) after the commit that
    made it true, when live views are on (:func:`live_enabled`); never raises for Redis."""
    if live_enabled(settings):
        publish_tournament_event(settings.broker_url, tournament_id, event, match_ids)


def _tournament_client(url: str) -> redis.Redis:
    if url not in _TOURNAMENT_CLIENTS:
        _TOURNAMENT_CLIENTS[url] = redis.Redis.from_url(
            url, socket_connect_timeout=PUBLISH_TIMEOUT_S, socket_timeout=PUBLISH_TIMEOUT_S
        )
    return _TOURNAMENT_CLIENTS[url]


class Subscription:
    """A subscription to one pub/sub channel, in effect once constructed: Redis has confirmed
    it, so every message published after the constructor returns is received (a caller can
    check the database *after* subscribing, or tell a page it is live, and miss nothing);
    iterate :meth:`messages`, then :meth:`close`.

    Raises (constructor):
        redis.RedisError: Redis cannot be reached, or does not confirm the subscription
            within :data:`SUBSCRIBE_TIMEOUT_S` seconds.
    """

    def __init__(self, url: str, name: str):
        self._client = redis.Redis.from_url(url, socket_connect_timeout=2.0)
        self._pubsub = self._client.pubsub()  # type: ignore[no-untyped-call]
        try:
            self._pubsub.subscribe(name)  # sent, not yet confirmed (redis-py does not wait)
            deadline = time.monotonic() + SUBSCRIBE_TIMEOUT_S
            while True:
                msg = self._pubsub.get_message(timeout=max(0.0, deadline - time.monotonic()))
                if msg is not None and msg.get("type") == "subscribe":
                    break
                if time.monotonic() >= deadline:
                    raise redis.TimeoutError(f"Redis did not confirm the subscription to {name}")
        except redis.RedisError:
            self.close()
            raise

    def messages(self, idle_s: float = 15.0, until_end: bool = True) -> Iterator[str | None]:
        """Messages (JSON text) as they come; ``None`` after ``idle_s`` seconds without one
        (a keep-alive point for the reader). With ``until_end``, ends after a message of
        type ``end``.

        Raises:
            redis.RedisError: the connection to Redis is lost.
        """
        while True:
            msg = self._pubsub.get_message(timeout=idle_s)
            if msg is None:
                yield None
                continue
            if msg.get("type") != "message":
                continue  # a (un)subscribe confirmation
            data = msg.get("data")
            text = data.decode() if isinstance(data, bytes) else str(data)
            yield text
            if until_end and text.startswith('{"type":"end"'):
                return

    def close(self) -> None:
        try:
            self._pubsub.close()
        finally:
            self._client.close()


def subscribe(url: str, match_id: int | str, *, full: bool, idle_s: float = 15.0) -> Iterator[str | None]:
    """Messages (JSON text) of a match's live channel as they come; ``None`` after ``idle_s``
    seconds without one (a keep-alive point for the reader). Ends after the ``end`` message.

    Raises:
        redis.RedisError: Redis cannot be reached.
    """
    sub = Subscription(url, channel(match_id, full))
    try:
        yield from sub.messages(idle_s)
    finally:
        sub.close()


def subscribe_tournament(url: str, tournament_id: int | str) -> Subscription:
    """An open :class:`Subscription` to a tournament's events (iterate with ``until_end=False``).

    Raises:
        redis.RedisError: Redis cannot be reached.
    """
    return Subscription(url, tournament_channel(tournament_id))


def redis_client(url: str) -> redis.Redis:
    """A pooled Redis client for ``url`` shared by the process (short timeouts: a slow Redis
    must not hold a page), for small bookkeeping such as the pages' stream caps."""
    return _tournament_client(url)
