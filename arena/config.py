"""Settings for Daifugo Arena, read only from environment variables (``ARENA_*``).

:meth:`Settings.from_env` reads ``ARENA_DATA_DIR``, ``ARENA_DATABASE_URL``, ``ARENA_BROKER_URL``,
``ARENA_ALLOW_PRIVATE_BOT_URLS``, ``ARENA_CELERY_EAGER``, ``ARENA_COOKIE_SECURE``,
``ARENA_BOT_MAX_CONCURRENCY``, ``ARENA_BOT_SLOT_WAIT_S``, ``ARENA_VISIBILITY_TIMEOUT_S``,
``ARENA_RATE_LIMITS``, ``ARENA_PROXY_HOPS``, ``ARENA_LEASE_S``, ``ARENA_REAPER_INTERVAL_S``,
``ARENA_LOST_AFTER_S``, ``ARENA_BOT_MAX_MATCHES``, ``ARENA_CHECK_TIME_LIMIT_S``,
``ARENA_CHECK_SECONDS_PER_HOUR``, ``ARENA_STORE_RETRY_S``, ``ARENA_SPOOL_TTL_S``,
``ARENA_GATEWAY_URL``, ``ARENA_GATEWAY_RECONNECT_S``, ``ARENA_GATEWAY_MAX_PER_BOT``,
``ARENA_GATEWAY_MAX_PER_ACCOUNT``, ``ARENA_MAX_BOTS_PER_ACCOUNT``, ``ARENA_PAR_ROLLOUTS``,
``ARENA_LADDER_TICK_S``, ``ARENA_LADDER_PROBE_S``, ``ARENA_LADDER_FIT_S``, ``ARENA_TABLES_MAX``,
``ARENA_TABLES_PER_ACCOUNT`` and ``ARENA_PEOPLE_IN_BOT_RATINGS``; their
meaning is on :class:`Settings`' attributes, their defaults in docs/operations.md, "Settings".

Booleans accept ``1/true/yes/on`` and ``0/false/no/off`` (any case); integers must be
positive whole numbers (``ARENA_PAR_ROLLOUTS`` may be 0); anything else raises :class:`ConfigError` naming the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_BROKER_URL = "redis://127.0.0.1:6379/0"
#: The project folder (the one holding pyproject.toml) when running from a checkout.
PROJECT_DIR = Path(__file__).resolve().parent.parent


def _default_data_dir() -> Path:
    """``<checkout>/data`` when running from a checkout (an editable install), else the
    user's data folder (``$XDG_DATA_HOME/daifugo-arena``, ``~/.local/share/daifugo-arena``):
    never inside an installed package, where a new virtualenv would lose the keys."""
    if (PROJECT_DIR / "pyproject.toml").is_file():
        return PROJECT_DIR / "data"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "daifugo-arena"


#: The data folder when ``ARENA_DATA_DIR`` is unset (:func:`_default_data_dir`).
DEFAULT_DATA_DIR = _default_data_dir()

#: Seconds a request waits for a bot that dials out to (re)connect (ARENA_GATEWAY_RECONNECT_S).
DEFAULT_GATEWAY_RECONNECT_S = 15
#: Most connections of one bot (ARENA_GATEWAY_MAX_PER_BOT) and of one account (..._PER_ACCOUNT).
DEFAULT_GATEWAY_MAX_PER_BOT = 8
DEFAULT_GATEWAY_MAX_PER_ACCOUNT = 32
#: Most bots one account holds, deleted ones not counted (ARENA_MAX_BOTS_PER_ACCOUNT).
DEFAULT_MAX_BOTS_PER_ACCOUNT = 50
#: Seconds between two ladder ticks (ARENA_LADDER_TICK_S), between two health probes of an HTTP
#: bot entered in a ladder (ARENA_LADDER_PROBE_S) and between two batch fits of a ladder's
#: official table (ARENA_LADDER_FIT_S).
DEFAULT_LADDER_TICK_S = 60
DEFAULT_LADDER_PROBE_S = 300
DEFAULT_LADDER_FIT_S = 600

#: Most tables playing or waiting for people at once on the site (ARENA_TABLES_MAX; each playing
#: table holds a worker thread) and per account (ARENA_TABLES_PER_ACCOUNT), docs/tables.md.
DEFAULT_TABLES_MAX = 16
DEFAULT_TABLES_PER_ACCOUNT = 2
DEFAULT_TABLES_PER_CLIENT = 4

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ValueError):
    """An environment variable has a value that cannot be used; the message names it."""


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name} must be a boolean (1/0, true/false, yes/no, on/off), got {raw!r}")


def _positive_int(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}")
    return value


def _count(env: Mapping[str, str], name: str, default: int, most: int) -> int:
    """A whole number from 0 to ``most`` (``default`` when unset or empty)."""
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if not 0 <= value <= most:
        raise ConfigError(f"{name} must be a whole number from 0 to {most}, got {raw!r}")
    return value


def people_in_bot_ratings_from_env(env: Mapping[str, str] | None = None) -> bool:
    """``ARENA_PEOPLE_IN_BOT_RATINGS`` of ``env`` (default ``os.environ``); false when unset.

    Raises:
        ConfigError: not a boolean word.
    """
    return _bool(os.environ if env is None else env, "ARENA_PEOPLE_IN_BOT_RATINGS", False)


def allow_private_from_env(env: Mapping[str, str] | None = None) -> bool:
    """``ARENA_ALLOW_PRIVATE_BOT_URLS`` of ``env`` (default ``os.environ``); false when unset.

    Raises:
        ConfigError: not a boolean word.
    """
    return _bool(os.environ if env is None else env, "ARENA_ALLOW_PRIVATE_BOT_URLS", False)


#: Defaults of ``ARENA_LEASE_S`` (a match's lease, renewed every sixth of it),
#: ``ARENA_REAPER_INTERVAL_S`` (how often the reaper runs) and ``ARENA_LOST_AFTER_S`` (how
#: long a queued match may be missing from the broker before it is sent again), seconds.
#: A SIGKILLed worker's match is playing again within lease + interval + a pick-up (~45 s).
DEFAULT_LEASE_S = 30
DEFAULT_REAPER_INTERVAL_S = 10
DEFAULT_LOST_AFTER_S = 60
#: Defaults of ``ARENA_STORE_RETRY_S`` (how long a worker keeps trying to store a played
#: match's result through a database outage) and ``ARENA_SPOOL_TTL_S`` (how long the result
#: waits in the Redis spool, arena.spool, for the reaper to store it), seconds.
DEFAULT_STORE_RETRY_S = 600
DEFAULT_SPOOL_TTL_S = 3 * 24 * 3600
#: Default of ``ARENA_BOT_MAX_CONCURRENCY``.
DEFAULT_BOT_MAX_CONCURRENCY = 4
#: Default of ``ARENA_BOT_SLOT_WAIT_S`` (seconds).
DEFAULT_BOT_SLOT_WAIT_S = 120
#: ``ARENA_BOT_MAX_MATCHES`` defaults to this many times ``ARENA_BOT_MAX_CONCURRENCY``.
BOT_MATCHES_PER_SLOT = 16
#: Defaults of ``ARENA_CHECK_TIME_LIMIT_S`` and ``ARENA_CHECK_SECONDS_PER_HOUR`` (seconds).
DEFAULT_CHECK_TIME_LIMIT_S = 180
DEFAULT_CHECK_SECONDS_PER_HOUR = 900
#: Default and most of ``ARENA_PAR_ROLLOUTS``: rollouts of the par's baseline per deal
#: (arena.par, docs/ranking.md); 0 turns the pars off.
DEFAULT_PAR_ROLLOUTS = 16
MAX_PAR_ROLLOUTS = 1024


@dataclass(frozen=True)
class Settings:
    """Process-wide settings. Build with :meth:`from_env`; immutable afterwards.

    Attributes:
        data_dir: absolute path of the data folder (``ARENA_DATA_DIR``).
        database_url: SQLAlchemy URL (``ARENA_DATABASE_URL``).
        broker_url: Celery broker/result backend URL (``ARENA_BROKER_URL``).
        allow_private_bot_urls: accept bot URLs on loopback/private networks.
        celery_eager: run tasks in-process instead of on a worker.
        bot_max_concurrency: most simultaneous decision requests to one bot
            (``ARENA_BOT_MAX_CONCURRENCY``; arena.runner.semaphore).
        bot_slot_wait_s: longest wait of a request for a slot of its endpoint's cap,
            seconds (``ARENA_BOT_SLOT_WAIT_S``; arena.runner.semaphore).
        visibility_timeout_s: broker visibility timeout in seconds, or None to compute it
            (``ARENA_VISIBILITY_TIMEOUT_S``; worker.celery_app.visibility_timeout).
        cookie_secure: the ``Secure`` flag of the web session cookie (``ARENA_COOKIE_SECURE``).
        rate_limits: per-client rate limits of the API (``ARENA_RATE_LIMITS``, api.ratelimit).
        proxy_hops: trusted reverse proxies in front of the API (``ARENA_PROXY_HOPS``): the
            client address for the rate limits is taken from ``X-Forwarded-For`` that deep.
        rate_limit_prefix: prefix of the rate-limit keys in Redis (tests isolate with it).
        lease_s: a playing match's lease, seconds (``ARENA_LEASE_S``; renewed every
            ``lease_s / 6``; an expired lease is re-enqueued by the reaper).
        reaper_interval_s: seconds between two reaper runs (``ARENA_REAPER_INTERVAL_S``).
        bot_max_matches: most matches claimed at once seating one bot endpoint
            (``ARENA_BOT_MAX_MATCHES``; default :data:`BOT_MATCHES_PER_SLOT` x
            ``bot_max_concurrency``; arena.runner.claims).
        check_time_limit_s: longest run of one bot check, seconds (``ARENA_CHECK_TIME_LIMIT_S``).
        check_seconds_per_hour: most check seconds per account in any hour
            (``ARENA_CHECK_SECONDS_PER_HOUR``; arena.lifecycle.begin_check).
        lost_after_s: seconds a queued match may be missing from the broker before the
            reaper sends it again (``ARENA_LOST_AFTER_S``).
        store_retry_s: seconds a worker keeps trying to store a played match's result while
            the database fails (``ARENA_STORE_RETRY_S``; arena.delivery).
        spool_ttl_s: seconds a played result is kept in the Redis spool while it cannot be
            stored (``ARENA_SPOOL_TTL_S``; arena.spool).
        gateway_url: the public ``ws(s)://`` URL bots that dial out connect to, e.g.
            ``wss://arena.example/v1/bots`` (``ARENA_GATEWAY_URL``; shown on the pages, used by the
            check's authentication probe); "" when no gateway runs.
        gateway_reconnect_s: longest wait of a request to a bot that dials out while it has no
            connection, seconds, never beyond the seat's bank (``ARENA_GATEWAY_RECONNECT_S``;
            arena.runner.connected).
        gateway_max_per_bot: most connections of one bot at once (``ARENA_GATEWAY_MAX_PER_BOT``).
        gateway_max_per_account: most connections of one account's bots at once
            (``ARENA_GATEWAY_MAX_PER_ACCOUNT``).
        max_bots_per_account: most bots one account holds, deleted ones not counted
            (``ARENA_MAX_BOTS_PER_ACCOUNT``; a registration beyond it is refused, 409).
        par_rollouts: rollouts of the par's baseline per deal (``ARENA_PAR_ROLLOUTS``, 0 to
            :data:`MAX_PAR_ROLLOUTS`; 0: no pars; arena.par, arena.usecases.pars).
        ladder_tick_s: seconds between two ladder ticks (``ARENA_LADDER_TICK_S``; Celery beat
            runs them: arena.usecases.ladders.tick).
        ladder_probe_s: seconds between two health probes of an HTTP bot's ladder entry
            (``ARENA_LADDER_PROBE_S``).
        ladder_fit_s: seconds between two batch fits of each ladder's official table
            (``ARENA_LADDER_FIT_S``; arena.usecases.ladders.fit).
        tables_max: most tables (people playing, docs/tables.md) open or playing at once on
            the site (``ARENA_TABLES_MAX``; one more is refused, 429).
        tables_per_account: most tables one account has open or playing at once, as a person
            or as the organizer of a class (``ARENA_TABLES_PER_ACCOUNT``; 429).
        tables_per_client: most tables opened from one client (arena.clients.client_key of its
            address) open or playing at once, whatever its accounts (``ARENA_TABLES_PER_CLIENT``;
            429): the site's tables are a shared pool.
        people_in_bot_ratings: the tables' games count in the bots' ratings and leaderboard
            too (``ARENA_PEOPLE_IN_BOT_RATINGS``, off: people have a pool of their own).
    """

    data_dir: Path
    database_url: str
    broker_url: str
    allow_private_bot_urls: bool = False
    celery_eager: bool = False
    bot_max_concurrency: int = DEFAULT_BOT_MAX_CONCURRENCY
    visibility_timeout_s: int | None = None
    cookie_secure: bool = True
    rate_limits: bool = True
    proxy_hops: int = 0
    rate_limit_prefix: str = "arena-rl"
    bot_slot_wait_s: int = DEFAULT_BOT_SLOT_WAIT_S
    lease_s: int = DEFAULT_LEASE_S
    reaper_interval_s: int = DEFAULT_REAPER_INTERVAL_S
    lost_after_s: int = DEFAULT_LOST_AFTER_S
    bot_max_matches: int = BOT_MATCHES_PER_SLOT * DEFAULT_BOT_MAX_CONCURRENCY
    check_time_limit_s: int = DEFAULT_CHECK_TIME_LIMIT_S
    check_seconds_per_hour: int = DEFAULT_CHECK_SECONDS_PER_HOUR
    store_retry_s: int = DEFAULT_STORE_RETRY_S
    spool_ttl_s: int = DEFAULT_SPOOL_TTL_S
    gateway_url: str = ""
    gateway_reconnect_s: int = DEFAULT_GATEWAY_RECONNECT_S
    gateway_max_per_bot: int = DEFAULT_GATEWAY_MAX_PER_BOT
    gateway_max_per_account: int = DEFAULT_GATEWAY_MAX_PER_ACCOUNT
    max_bots_per_account: int = DEFAULT_MAX_BOTS_PER_ACCOUNT
    par_rollouts: int = DEFAULT_PAR_ROLLOUTS
    ladder_tick_s: int = DEFAULT_LADDER_TICK_S
    ladder_probe_s: int = DEFAULT_LADDER_PROBE_S
    ladder_fit_s: int = DEFAULT_LADDER_FIT_S
    tables_max: int = DEFAULT_TABLES_MAX
    tables_per_account: int = DEFAULT_TABLES_PER_ACCOUNT
    tables_per_client: int = DEFAULT_TABLES_PER_CLIENT
    people_in_bot_ratings: bool = False

    @property
    def shared_redis(self) -> bool:
        """Whether the processes meet in a Redis, the broker's (live views, the per-bot caps,
        the result spool, the relay's health): a Redis broker, not eager mode (a quick local
        run has no Redis)."""
        return self.broker_url.startswith("redis") and not self.celery_eager

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read settings from ``env`` (default ``os.environ``).

        Raises:
            ConfigError: a boolean variable holds something else than a boolean word, or an
                integer variable something else than a positive integer.
        """
        env = os.environ if env is None else env
        data_dir = Path(env.get("ARENA_DATA_DIR") or DEFAULT_DATA_DIR).expanduser().resolve()
        database_url = env.get("ARENA_DATABASE_URL") or f"sqlite:///{data_dir / 'arena.db'}"
        concurrency = _positive_int(env, "ARENA_BOT_MAX_CONCURRENCY", None) or DEFAULT_BOT_MAX_CONCURRENCY
        return cls(
            data_dir=data_dir,
            database_url=database_url,
            broker_url=env.get("ARENA_BROKER_URL") or DEFAULT_BROKER_URL,
            allow_private_bot_urls=_bool(env, "ARENA_ALLOW_PRIVATE_BOT_URLS", False),
            celery_eager=_bool(env, "ARENA_CELERY_EAGER", False),
            bot_max_concurrency=concurrency,
            visibility_timeout_s=_positive_int(env, "ARENA_VISIBILITY_TIMEOUT_S", None),
            cookie_secure=_bool(env, "ARENA_COOKIE_SECURE", True),
            rate_limits=_bool(env, "ARENA_RATE_LIMITS", True),
            proxy_hops=_positive_int(env, "ARENA_PROXY_HOPS", None) or 0,
            bot_slot_wait_s=_positive_int(env, "ARENA_BOT_SLOT_WAIT_S", None) or DEFAULT_BOT_SLOT_WAIT_S,
            lease_s=_positive_int(env, "ARENA_LEASE_S", DEFAULT_LEASE_S) or DEFAULT_LEASE_S,
            reaper_interval_s=_positive_int(env, "ARENA_REAPER_INTERVAL_S", DEFAULT_REAPER_INTERVAL_S)
            or DEFAULT_REAPER_INTERVAL_S,
            lost_after_s=_positive_int(env, "ARENA_LOST_AFTER_S", DEFAULT_LOST_AFTER_S) or DEFAULT_LOST_AFTER_S,
            bot_max_matches=_positive_int(env, "ARENA_BOT_MAX_MATCHES", None) or BOT_MATCHES_PER_SLOT * concurrency,
            check_time_limit_s=_positive_int(env, "ARENA_CHECK_TIME_LIMIT_S", None) or DEFAULT_CHECK_TIME_LIMIT_S,
            check_seconds_per_hour=_positive_int(env, "ARENA_CHECK_SECONDS_PER_HOUR", None)
            or DEFAULT_CHECK_SECONDS_PER_HOUR,
            store_retry_s=_positive_int(env, "ARENA_STORE_RETRY_S", DEFAULT_STORE_RETRY_S) or DEFAULT_STORE_RETRY_S,
            spool_ttl_s=_positive_int(env, "ARENA_SPOOL_TTL_S", DEFAULT_SPOOL_TTL_S) or DEFAULT_SPOOL_TTL_S,
            gateway_url=env.get("ARENA_GATEWAY_URL", "").strip(),
            gateway_reconnect_s=_positive_int(env, "ARENA_GATEWAY_RECONNECT_S", None) or DEFAULT_GATEWAY_RECONNECT_S,
            gateway_max_per_bot=_positive_int(env, "ARENA_GATEWAY_MAX_PER_BOT", None) or DEFAULT_GATEWAY_MAX_PER_BOT,
            gateway_max_per_account=_positive_int(env, "ARENA_GATEWAY_MAX_PER_ACCOUNT", None)
            or DEFAULT_GATEWAY_MAX_PER_ACCOUNT,
            max_bots_per_account=_positive_int(env, "ARENA_MAX_BOTS_PER_ACCOUNT", None) or DEFAULT_MAX_BOTS_PER_ACCOUNT,
            par_rollouts=_count(env, "ARENA_PAR_ROLLOUTS", DEFAULT_PAR_ROLLOUTS, MAX_PAR_ROLLOUTS),
            ladder_tick_s=_positive_int(env, "ARENA_LADDER_TICK_S", None) or DEFAULT_LADDER_TICK_S,
            ladder_probe_s=_positive_int(env, "ARENA_LADDER_PROBE_S", None) or DEFAULT_LADDER_PROBE_S,
            ladder_fit_s=_positive_int(env, "ARENA_LADDER_FIT_S", None) or DEFAULT_LADDER_FIT_S,
            tables_max=_positive_int(env, "ARENA_TABLES_MAX", None) or DEFAULT_TABLES_MAX,
            tables_per_account=_positive_int(env, "ARENA_TABLES_PER_ACCOUNT", None) or DEFAULT_TABLES_PER_ACCOUNT,
            tables_per_client=_positive_int(env, "ARENA_TABLES_PER_CLIENT", None) or DEFAULT_TABLES_PER_CLIENT,
            people_in_bot_ratings=people_in_bot_ratings_from_env(env),
        )
