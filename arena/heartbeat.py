"""A worker's heartbeat while it plays a match: the lease renewals (:class:`LeaseKeeper`) and
its judgement of its own health (:class:`WorkerHealth`: docs/protocol.md, "Whose fault is a
wait").
"""

from __future__ import annotations

import logging
import threading
import time

import redis
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from arena import lifecycle
from arena.config import Settings
from arena.runner.claims import Claim, EndpointClaims

log = logging.getLogger("arena.tasks")


class LeaseKeeper:
    """A daemon thread renewing a claimed match's lease every ``lease_s / 6`` seconds while
    the match is played (:func:`arena.lifecycle.renew_lease`). A renewal that fails for
    a database error is tried again at the next tick; a lost lease (the reaper gave the
    match to another delivery after it expired) is logged and the renewals stop: the result
    is still stored once, by whichever delivery stores first."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        match_id: int,
        owner: str,
        lease_s: float,
        claims: tuple[EndpointClaims, Claim] | None = None,
    ):
        self.factory, self.match_id, self.owner, self.lease_s = factory, match_id, owner, lease_s
        self.claims = claims  # the match's endpoint claims, renewed with its lease
        self._claims_lock = threading.Lock()
        self.renewals = 0
        self.lost = False
        #: seconds between two renewals (the worker's heartbeat)
        self.interval = max(0.2, lease_s / 6)
        #: when the last renewal succeeded (the claim counts), and the last one failed (None:
        #: never), monotonic seconds
        self.ok_at = time.monotonic()
        self.failed_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-{match_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def release_claims(self) -> None:
        """Give the match's endpoint claims back now (its bots are not needed any more: the
        store, and its retries, need no bot)."""
        with self._claims_lock:
            claims, self.claims = self.claims, None
            if claims is not None:
                claims[0].release(claims[1])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def healthy(self) -> bool:
        """Whether the heartbeat is well: the last renewal succeeded, and not too long ago."""
        fresh = time.monotonic() - self.ok_at <= 2 * self.interval + 1.0
        return fresh and (self.failed_at is None or self.ok_at > self.failed_at)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._claims_lock:  # never renewed after their release (a renewal re-adds)
                if self.claims is not None:
                    try:
                        self.claims[0].renew(self.claims[1])
                    except Exception as exc:  # Redis unreachable: the lease itself still counts
                        log.warning("match %s: endpoint claims not renewed (%s)", self.match_id, type(exc).__name__)
            try:
                with self.factory() as session:
                    ok = lifecycle.renew_lease(session, self.match_id, self.owner, self.lease_s)
            except DBAPIError as exc:
                self.failed_at = time.monotonic()
                log.warning("match %s: lease not renewed (%s)", self.match_id, type(exc).__name__)
                continue
            self.ok_at = time.monotonic()
            if not ok:
                if not self._stop.is_set():
                    self.lost = True
                    log.warning("match %s: lease lost (expired and taken over, or the match ended)", self.match_id)
                return
            self.renewals += 1


#: Seconds a probe of the worker's own link to Redis may take.
PROBE_TIMEOUT_S = 2.0


#: Seconds between two looks at the worker's health while a match waits for it.
HEALTH_POLL_S = 0.5


class WorkerHealth:
    """The worker's judgement of its own health while it plays a match: the runner's
    :class:`arena.runner.match.ArenaHealth` (docs/protocol.md, "Whose fault is a wait").

    * :meth:`abort`: the match's lease was lost (another delivery plays it): stop now.
    * :meth:`fault`: a request without an answer was the worker's failure, not the bot's,
      when the heartbeat (the lease renewals, :class:`LeaseKeeper`: the database) failed
      during it or went stale, or Redis cannot be reached now (a probe): a worker cut off
      from the network never blames its bots for it.
    * :meth:`wait`: until the heartbeat and the probe are well again, at most ``wait_s``
      seconds (two leases by default: by then another worker has the match).
    """

    def __init__(self, settings: Settings, keeper: LeaseKeeper | None, wait_s: float | None = None):
        self.keeper = keeper
        self.wait_s = float(2 * settings.lease_s if wait_s is None else wait_s)
        self._probe: redis.Redis | None = None
        if settings.shared_redis:
            self._probe = redis.Redis.from_url(
                settings.broker_url, socket_timeout=PROBE_TIMEOUT_S, socket_connect_timeout=PROBE_TIMEOUT_S
            )

    def abort(self) -> str:
        if self.keeper is not None and self.keeper.lost:
            return "this worker lost the match's lease: another delivery plays the match"
        return ""

    def probe(self) -> str:
        """Why this worker cannot reach Redis now, or ""."""
        if self._probe is None:
            return ""
        try:
            self._probe.ping()
        except (redis.RedisError, OSError) as exc:
            return f"this worker cannot reach Redis ({type(exc).__name__})"
        return ""

    def fault(self, started: float, ended: float) -> str:
        keeper = self.keeper
        if keeper is not None:
            if keeper.failed_at is not None and keeper.failed_at >= started - keeper.interval:
                return "this worker's heartbeat failed during the request (it could not reach the database)"
            if ended - keeper.ok_at > 2 * keeper.interval + 1.0:
                return "this worker's heartbeat was stale during the request"
        return self.probe()

    def wait(self) -> bool:
        deadline = time.monotonic() + self.wait_s
        while not self.abort():
            if (self.keeper is None or self.keeper.healthy()) and not self.probe():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(HEALTH_POLL_S)
        return False

    def close(self) -> None:
        if self._probe is not None:
            self._probe.close()
