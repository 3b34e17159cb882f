"""Live views for the pages (server-sent events relayed from Redis, :mod:`arena.live`).

``GET /ui/matches/<id>/live``: one ``data: <json>`` event per decision, ``: keep-alive``
comments, one ``end`` event when the match is over (at once when it is not playing), one
``error`` event when Redis is down. The channel is chosen by :func:`arena.access.live_view_for`
only: organizers the full one, other readers of the match the PUBLIC one (C-11), the owner of
a seated bot that seat's own view (its hand; :func:`live_player`), everyone else 403 (a
sign-in page when signed out). ``GET /ui/tournaments/<id>/live``: the tournament's
events as ``data: {"type": "tournament", "event"}`` (plus ``match_ids`` for viewers who see
every match), ``end`` once it is no longer running. ``GET /ui/tournaments/<id>/live.html``: the
parts of the tournament page that change. No database connection is held while streaming.

Places (a stream holds a server thread; beyond a cap, 429 with a message saying which):

* per process (threads are a process's own): :data:`STREAMS_PER_PROCESS` places for viewers
  other than organizers, :data:`STREAMS_RESERVED` of them for viewers with a stake only
  (contestants with a bot in the match or the tournament), plus :data:`STREAMS_ORGANIZERS`
  places only organizers take: whichever process the kernel hands an organizer's request
  to, a place is there that nobody else can take;
* across every server process (leases in the broker's Redis, :class:`arena.leases.LeaseSet`):
  :data:`STREAMS_PER_ACCOUNT` per account (``arena:live:streams:<account>``) and
  :data:`STREAMS_WITHOUT_STAKE` for all viewers without a stake together
  (``arena:live:places:without-stake``): accounts signed up just to watch share that many,
  however many processes serve the site. Redis unreachable: the per-process caps only.

A stream ends after :data:`MAX_STREAM_S` seconds; a viewer that left is noticed within
:data:`IDLE_S` seconds. Design: docs/ui.md, "Live", and docs/operations.md, "Hostile input
and outages".
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import redis
from flask import Response, abort, current_app, render_template, request, stream_with_context
from flask_babel import gettext as _
from sqlalchemy import select

from api.database import db, settings
from api.ui import access
from api.ui.board import board_view, phase
from api.ui.views import bp, deny, match_or_404, tournament_or_404
from arena import access as policy
from arena import live
from arena.db.models import Match, Tournament
from arena.leases import LeaseSet
from arena.status import MatchStatus, TournamentStatus

#: Match statuses in which a match may still be played (its live view is open).
LIVE_STATUSES = (MatchStatus.QUEUED, MatchStatus.RUNNING, MatchStatus.PENDING)
#: Seconds without a message before a keep-alive (and a status check), both streams.
IDLE_S = 5.0
#: Longest life of one stream, seconds (then the browser reconnects).
MAX_STREAM_S = 300.0
#: Open streams per server process of viewers other than organizers (of gunicorn's 16
#: threads per worker: with the organizers' places, 6 stay free for everything else).
STREAMS_PER_PROCESS = 8
#: Of those, places only viewers with a stake take: contestants with a bot in the match or
#: the tournament (organizers too, once their own places are taken). Any signed-in account
#: may watch a tournament's events, so accounts signed up just for it could otherwise fill a
#: process (two, at 5 each).
STREAMS_RESERVED = 4
#: Places per server process that only organizers take (nobody else can: issue 29, two
#: throwaway accounts and one participant had locked the organizer out of every live view).
STREAMS_ORGANIZERS = 2
#: Open streams per account, across every server process.
STREAMS_PER_ACCOUNT = 5
#: Open streams of all viewers without a stake together, across every server process.
STREAMS_WITHOUT_STAKE = 4
#: The Redis lease set of :data:`STREAMS_WITHOUT_STAKE`.
WITHOUT_STAKE_KEY = "arena:live:places:without-stake"
SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}

_process_streams = threading.BoundedSemaphore(STREAMS_PER_PROCESS - STREAMS_RESERVED)  # anyone's
_reserved_streams = threading.BoundedSemaphore(STREAMS_RESERVED)  # viewers with a stake only
_organizer_streams = threading.BoundedSemaphore(STREAMS_ORGANIZERS)  # organizers only
_open_lock = threading.Lock()
_open = 0

#: Who a viewer is, for the places it may take.
ORGANIZER, STAKE, WITHOUT_STAKE = "organizer", "stake", "without-stake"


def open_streams() -> int:
    """Streams open in this process now (for tests and monitoring)."""
    return _open


def _count(delta: int) -> None:
    global _open
    with _open_lock:
        _open += delta


class StreamSlot:
    """A place among the open streams (module docstring): taken by :meth:`take` when the
    stream is asked for (429 when none is left), given back by :meth:`release` when it
    ends. ``viewer``: :data:`ORGANIZER`, :data:`STAKE` or :data:`WITHOUT_STAKE`. Redis
    unreachable: only the per-process caps apply."""

    def __init__(self, url: str, account_id: int | None, viewer: str = WITHOUT_STAKE):
        self.url, self.account_id, self.viewer = url, account_id, viewer
        self.token = uuid.uuid4().hex
        self._process: threading.BoundedSemaphore | None = None
        self._leases: list[LeaseSet] = []
        self._lock = threading.Lock()  # release() may run twice at once (the events' end, the close)

    def _pools(self) -> list[threading.BoundedSemaphore]:
        """The process's places this viewer may take, in the order it takes them."""
        if self.viewer == ORGANIZER:
            return [_organizer_streams, _reserved_streams, _process_streams]
        if self.viewer == STAKE:
            return [_process_streams, _reserved_streams]
        return [_process_streams]

    def _site_caps(self) -> list[tuple[LeaseSet, str]]:
        """The caps counted across processes (Redis lease sets), each with its refusal."""
        client = live.redis_client(self.url)
        caps = []
        if self.account_id is not None:
            caps.append(
                (
                    LeaseSet(client, f"arena:live:streams:{self.account_id}", STREAMS_PER_ACCOUNT),
                    _("You have %(n)s live views open already: close one first.", n=STREAMS_PER_ACCOUNT),
                )
            )
        if self.viewer == WITHOUT_STAKE:
            caps.append(
                (
                    LeaseSet(client, WITHOUT_STAKE_KEY, STREAMS_WITHOUT_STAKE),
                    _("Too many live views are open on this site; try again in a minute."),
                )
            )
        return caps

    def take(self) -> None:
        """Take the slot, or abort with 429 (a message saying which cap): a place of this
        process among those the viewer may take, then the leases counted across processes."""
        for places in self._pools():
            if places.acquire(blocking=False):
                self._process = places
                break
        else:
            abort(429, _("Too many live views are open on this server; try again in a minute."))
        _count(1)
        try:
            caps = self._site_caps()
            for leases, refusal in caps:
                if not leases.take(self.token, MAX_STREAM_S + 30):
                    self.release()
                    abort(429, refusal)
                self._leases.append(leases)
        except redis.RedisError:
            return  # the per-process caps only (the leases taken end by themselves)

    def release(self) -> None:
        """Give the slot back (idempotent, thread-safe; never raises)."""
        with self._lock:
            process, leases = self._process, self._leases
            self._process, self._leases = None, []
        if process is not None:
            process.release()
            _count(-1)
        for lease in leases:
            try:
                lease.release(self.token)
            except redis.RedisError:
                pass  # the lease ends by itself


def _stream(events: Iterator[str], slot: StreamSlot | None) -> Response:
    """The SSE response. The slot is given back (:meth:`StreamSlot.release`, idempotent) by
    whichever comes first: the events end (the last one sent, an error, or the generator
    closed), or the server closes the response (the viewer left, even before the first
    event, when a generator's ``finally`` never runs). Both are needed: werkzeug's server
    skips the close when the viewer's reset reaches it while it drains the socket."""
    if slot is None:
        return Response(stream_with_context(events), mimetype="text/event-stream", headers=SSE_HEADERS)

    def released_at_the_end() -> Iterator[str]:
        try:
            yield from events
        finally:
            slot.release()

    resp = Response(stream_with_context(released_at_the_end()), mimetype="text/event-stream", headers=SSE_HEADERS)
    resp.call_on_close(slot.release)
    return resp


def _slot(t: Tournament) -> StreamSlot:
    """The viewer's place among the open streams of tournament ``t`` or one of its matches
    (429 when none is left): organizers take their own places first, a viewer with a stake
    (the owner of a bot in ``t``) may take a reserved one (module docstring)."""
    account = access.viewer()
    if policy.is_organizer(account):
        viewer = ORGANIZER
    elif account is not None and policy.owns_participant(db(), account, t.id):
        viewer = STAKE
    else:
        viewer = WITHOUT_STAKE
    slot = StreamSlot(settings().broker_url, account.id if account is not None else None, viewer)
    slot.take()
    return slot


def can_watch_live(m, t) -> bool:
    """True when the viewer may open the live view of match ``m`` of tournament ``t`` now
    (it is playing or waiting to be played, and :func:`arena.access.live_view_for` allows it)."""
    return m.status in LIVE_STATUSES and policy.live_view_for(db(), access.viewer(), m, t) is not None


def live_view(m, t) -> str | None:
    """``"full"``, ``"public"`` or None: the viewer's live channel of match ``m``."""
    return policy.live_view_for(db(), access.viewer(), m, t)


@bp.app_context_processor
def _live_globals():
    return {
        "can_watch_live": can_watch_live,
        "live_view": live_view,
        "live_player": live_player,
        "live_players_of": lambda m, t: policy.live_players_for(db(), access.viewer(), m, t),
    }


def _sse(message: dict) -> str:
    return "data: " + json.dumps(message, separators=(",", ":")) + "\n\n"


def status_reader(model, key: int) -> Callable[[], str | None]:
    factory = current_app.extensions["arena"]["sessionmaker"]

    def read() -> str | None:
        with factory() as s:
            return s.scalar(select(model.status).where(model.id == key))

    return read


def _error(exc: Exception) -> str:
    return "event: error\ndata: " + json.dumps({"error": str(exc)[:200]}) + "\n\n"


def live_player(m, t) -> int | None:
    """The player whose own view (its hand: :func:`arena.live.seat_view`) the viewer watches
    of match ``m``: ``?player=N`` when it is one of the viewer's seats
    (:func:`arena.access.live_players_for`), else the first of them; None for the public or
    full channel, and with ``?view=public`` (an owner may watch as a spectator, e.g. on a
    projector)."""
    players = policy.live_players_for(db(), access.viewer(), m, t)
    if not players or request.args.get("view") == "public":
        return None
    asked = request.args.get("player", type=int)
    return asked if asked in players else players[0]


@bp.route("/matches/<int:match_id>/live")
def match_live(match_id: int):
    """The live stream of a match: the channel :func:`arena.access.live_view_for` gives the
    viewer (organizers: full; other readers: public), or, for the owner of a seated bot, that
    seat's own view (:func:`live_player`). Nothing in the request reaches another channel."""
    account = access.viewer()
    m, t = match_or_404(match_id)
    view = policy.live_view_for(db(), account, m, t)
    if view is None:
        deny(account, f"match {m.id}")
    full = view == "full"  # the policy's answer only: nothing in the request chooses the full channel
    player = None if full else live_player(m, t)
    name = live.channel(m.id, full) if player is None else live.player_channel(m.id, player)
    status, url, mid = m.status, settings().broker_url, m.id
    read_status = status_reader(Match, mid)
    slot = _slot(t) if status in LIVE_STATUSES else None
    db().close()  # hold no database connection while streaming

    def end(now: str | None) -> str:
        return _sse({"type": "end", "match_id": mid, "status": now})

    def events() -> Iterator[str]:
        if status not in LIVE_STATUSES:
            yield end(status)
            return
        try:
            sub = live.Subscription(url, name)
        except redis.RedisError as exc:
            yield _error(exc)
            return
        deadline = time.monotonic() + MAX_STREAM_S
        try:
            yield "retry: 2000\n: live\n\n"
            now = read_status()  # after subscribing: an end published before is not waited for
            if now not in LIVE_STATUSES:
                yield end(now)
                return
            for text in sub.messages(IDLE_S):
                if text is not None:
                    yield f"data: {text}\n\n"
                    if time.monotonic() > deadline:
                        return  # a busy stream ends too (its lease would end before it)
                    continue
                now = read_status()
                if now not in LIVE_STATUSES:
                    yield end(now)
                    return
                if time.monotonic() > deadline:
                    return  # the browser reconnects
                yield ": keep-alive\n\n"
        except redis.RedisError as exc:
            yield _error(exc)
        finally:
            sub.close()

    return _stream(events(), slot)


def _viewable_tournament(tournament_id: int) -> Tournament:
    account = access.viewer()
    t = tournament_or_404(tournament_id)
    if not policy.can_view_tournament(db(), account, t):
        deny(account, f"tournament {t.id}")
    return t


#: The phases in which a tournament page is live (:func:`api.ui.board.phase`).
LIVE_PHASES = ("running", "waiting")


def _phase_reader(tournament_id: int) -> Callable[[], str | None]:
    """Reads the tournament's phase (:func:`api.ui.board.phase`) with a session of its own."""
    factory = current_app.extensions["arena"]["sessionmaker"]

    def read() -> str | None:
        with factory() as s:
            row = s.execute(
                select(Tournament.status, Tournament.waiting_until).where(Tournament.id == tournament_id)
            ).first()
        if row is None:
            return None
        status, until = row
        return "waiting" if status == TournamentStatus.CREATED and until is not None else str(status)

    return read


@bp.route("/tournaments/<int:tournament_id>/live")
def tournament_live(tournament_id: int):
    """The tournament's events while it runs, or while its start waits for offline entrants
    (``waiting``, ``started``); ``end`` (with its status) once it does neither."""
    t = _viewable_tournament(tournament_id)
    with_ids = policy.sees_all_matches(db(), access.viewer(), t)
    now_phase, url, tid = phase(t), settings().broker_url, t.id
    read_phase = _phase_reader(tid)
    slot = _slot(t) if now_phase in LIVE_PHASES else None
    db().close()

    def end(now: str | None) -> str:
        return _sse({"type": "end", "tournament_id": tid, "status": now})

    def events() -> Iterator[str]:
        if now_phase not in LIVE_PHASES:
            yield end(now_phase)
            return
        try:
            sub = live.subscribe_tournament(url, tid)
        except redis.RedisError as exc:
            yield _error(exc)
            return
        deadline = time.monotonic() + MAX_STREAM_S
        try:
            yield "retry: 2000\n: live\n\n"
            for text in sub.messages(IDLE_S, until_end=False):
                if text is None:
                    current = read_phase()
                    if current != now_phase:  # started, finished, cancelled: the page reloads
                        yield end(current)
                        return
                    if time.monotonic() > deadline:
                        return  # the browser reconnects
                    yield ": keep-alive\n\n"
                    continue
                try:
                    msg = json.loads(text)
                except ValueError:
                    continue
                out = {"type": "tournament", "event": msg.get("event")}
                if with_ids:
                    out["match_ids"] = msg.get("match_ids") or []
                yield _sse(out)
                if time.monotonic() > deadline:
                    return  # a busy stream ends too (its lease would end before it)
                if msg.get("event") in ("finished", "failed", "started"):
                    current = read_phase()
                    if current != now_phase:
                        yield end(current)
                        return
        except redis.RedisError as exc:
            yield _error(exc)
        finally:
            sub.close()

    return _stream(events(), slot)


@bp.route("/tournaments/<int:tournament_id>/live.html")
def tournament_live_state(tournament_id: int):
    """The changing parts of the tournament page (module docstring), as the page renders them
    (``?page=N``: the page of its match table), all from one read of its matches
    (:func:`api.ui.board.board_view`)."""
    t = _viewable_tournament(tournament_id)
    view = board_view(t, access.viewer(), request.args.get("page", 1, type=int) or 1)
    html = render_template("_tournament_live.html", t=t, **view)
    return Response(html, mimetype="text/html", headers={"Cache-Control": "no-store"})
