"""The ladder's match source: matchmaking, tick by tick (docs/ladder.md, "Matchmaking").

Every tick (``ARENA_LADDER_TICK_S``, Celery beat) the ladder's use case
(:func:`arena.usecases.ladders.tick`) reads who can play now (entries that are active, whose
bot is ready and reachable: an HTTP bot whose last probe passed, a bot that dials out with a
connection), turns each into a :class:`Candidate` and asks :func:`form_tables` for the tables
of the tick's new sets. Pure: no database; the random draws come from the caller's ``rng``.

The rules :func:`form_tables` applies, in this order:

* **never two bots of one owner at one table** (Halite II's rule; house entries have no owner);
* a **pair cap**: a pair that has met :attr:`LadderConfig.pair_free_sets` sets meets at most
  :attr:`LadderConfig.pair_sets_per_hour` sets an hour, in a field of at least
  :attr:`LadderConfig.pair_cap_field` bots that can play now (in a smaller one the cap would
  spread each entry over all of its few opponents, whatever their ratings);
* **placement first**: provisional entries (fewer than :attr:`LadderConfig.placement_sets`
  rated sets) are seated first; then (:attr:`LadderConfig.order_first`) the entries least sure
  of their place in the table (:func:`order_sureness`: the closest neighbour in ``mu`` for
  their sigmas), then by the time since their last set (longest first), ties by a random draw;
* each table around its first entrant by **rating proximity with bounded jitter**: with
  :attr:`LadderConfig.sigma_proximity` the cost of seating ``c`` with ``m`` is
  ``|mu_m - mu_c| / sqrt(sigma_m^2 + sigma_c^2) + u`` (in sigmas: an uncertain entry meets
  farther opponents), else ``|mu_m - mu_c + u|``, with ``u`` uniform in ``[-jitter, jitter]``,
  plus :attr:`LadderConfig.rematch_penalty` per set the pair met in the last hour (a settled
  entry's sets spread over both of its neighbours); the cheapest candidate joins, one seat at
  a time;
* a table that cannot be completed with bots is filled with **house entries** (each at most
  once per table) when :attr:`LadderConfig.fill_with_house_bots`, else left for a later tick;
* an entrant sits at as many tables as its ``free`` (what its concurrent-set and hourly limits
  leave), at most :attr:`LadderConfig.max_sets_per_tick` tables in all.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from arena.schedule import HOUSE_BOTS, ScheduledMatch
from arena.sources.base import SET, WAIT, Field, Next, StoredGames
from arena.status import TournamentFormat

#: A pair of entry ids, the smaller first.
Pair = tuple[int, int]


class ConfigError(ValueError):
    """A ladder configuration out of its ranges; ``key`` names the offending key."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key


@dataclass(frozen=True)
class LadderConfig:
    """A ladder's matchmaking and health knobs (``ladders.config``), fixed at its creation.

    Attributes:
        placement_sets: rated sets below which an entry is provisional (placed first; the
            table shows "provisional").
        jitter: bound of the random shift of the rating proximity: in sigmas with
            ``sigma_proximity``, else in rating points (mu).
        rematch_penalty: cost added per set a pair met in the last hour.
        pair_free_sets: sets a pair meets before the hourly pair cap applies.
        pair_sets_per_hour: most sets an hour of a pair that has met ``pair_free_sets``.
        pair_cap_field: bots that can play now (house entries aside) from which the pair cap
            applies; below it a pair is never capped (docs/ladder.md, "The tick").
        max_sets_per_tick: most sets one tick forms.
        behind_s: a tick forms nothing while the ladder's oldest queued set has waited longer
            than this many seconds (the workers are behind).
        fill_with_house_bots: complete a table with house entries when too few bots can play.
        order_first: after the provisional entries, seat first the entries least sure of their
            place in the table (:func:`order_sureness`), before the longest idle.
        sigma_proximity: measure rating proximity in sigmas,
            ``|mu_a - mu_b| / sqrt(sigma_a^2 + sigma_b^2)``, instead of rating points.
        house_bots: the sample bots of its house entries (:data:`arena.schedule.HOUSE_BOTS`).
        fault_sets: stored sets, among its last ``fault_window``, in which an entry's bot
            reached the ladder's ``max_faults`` (it forfeited, FAULT-3) after which the entry is
            paused by the health rule (a bot that forfeits the sets it would rather not play,
            one in a while, is paused as surely as a dead one).
        fault_window: the entry's last stored sets the health rule looks at (at most 30).
        par_wait_s: longest wait, seconds, of a stored set for its pars before it is rated
            on raw scores (docs/ladder.md, "Ratings").
        max_entries_per_account: most entries (active or paused) of one account.
        max_concurrent: most sets at once an owner may declare for an entry.
        max_sets_per_hour: most sets an hour an owner may declare for an entry.
    """

    placement_sets: int = 10
    jitter: float = 0.5
    rematch_penalty: float = 1.0
    pair_free_sets: int = 6
    pair_sets_per_hour: int = 2
    pair_cap_field: int = 24
    max_sets_per_tick: int = 200
    behind_s: int = 120
    fill_with_house_bots: bool = True
    order_first: bool = True
    sigma_proximity: bool = True
    house_bots: tuple[str, ...] = ("heuristic", "greedy", "random")
    fault_sets: int = 2
    fault_window: int = 6
    par_wait_s: int = 300
    max_entries_per_account: int = 3
    max_concurrent: int = 4
    max_sets_per_hour: int = 120

    #: (smallest, largest) of each number.
    RANGES: ClassVar[dict[str, tuple[float, float]]] = {
        "placement_sets": (0, 1000),
        "jitter": (0.0, 50.0),
        "rematch_penalty": (0.0, 100.0),
        "pair_free_sets": (0, 100000),
        "pair_sets_per_hour": (1, 1000),
        "pair_cap_field": (0, 100000),
        "max_sets_per_tick": (1, 10000),
        "behind_s": (1, 86400),
        "fault_sets": (1, 30),
        "fault_window": (1, 30),
        "par_wait_s": (0, 86400),
        "max_entries_per_account": (1, 100),
        "max_concurrent": (1, 64),
        "max_sets_per_hour": (1, 3600),
    }

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["house_bots"] = list(self.house_bots)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> LadderConfig:
        """A configuration from JSON (missing keys take their defaults).

        Raises:
            ConfigError: an unknown key, a value of the wrong type or out of its range.
        """
        data = dict(data or {})
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known:
                raise ConfigError(key, "unknown key")
        out: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in data:
                continue
            value = data[f.name]
            if f.name == "house_bots":
                if not isinstance(value, list | tuple) or any(v not in HOUSE_BOTS for v in value):
                    raise ConfigError(f.name, f"a list of {', '.join(HOUSE_BOTS)}")
                if len(set(value)) != len(value):
                    raise ConfigError(f.name, "must not repeat")
                out[f.name] = tuple(value)
                continue
            if isinstance(f.default, bool):
                if not isinstance(value, bool):
                    raise ConfigError(f.name, "true or false")
                out[f.name] = value
                continue
            low, high = cls.RANGES[f.name]
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or (f.type in ("int", int) and not float(value).is_integer()):
                raise ConfigError(f.name, "a number" if f.name == "jitter" else "a whole number")
            if not math.isfinite(value) or not low <= value <= high:
                raise ConfigError(f.name, f"from {low:g} to {high:g}")
            out[f.name] = float(value) if isinstance(f.default, float) else int(value)
        return cls(**out)


@dataclass(frozen=True)
class Candidate:
    """An entry that can play now. ``owner_id`` None for a house entry; ``free``: sets it may
    start this tick (what its concurrent-set and hourly limits leave); ``sets``: its rated
    sets; ``idle_s``: seconds since its last set was formed (None: never)."""

    entry_id: int
    owner_id: int | None
    mu: float
    sigma: float
    sets: int = 0
    free: int = 1
    idle_s: float | None = None

    @property
    def house(self) -> bool:
        return self.owner_id is None


def pair(a: int, b: int) -> Pair:
    """The pair of entries ``a`` and ``b``, the smaller id first."""
    return (a, b) if a < b else (b, a)


@dataclass
class _Tick:
    cfg: LadderConfig
    seats: int
    recent: Mapping[Pair, int]
    met: Mapping[Pair, int]
    rng: random.Random
    capped: bool = True
    free: dict[int, int] = field(default_factory=dict)
    #: :meth:`allowed` of each pair asked so far (a tick's rules do not change within it).
    seen: dict[Pair, bool] = field(default_factory=dict)

    def allowed(self, a: Candidate, b: Candidate) -> bool:
        p = pair(a.entry_id, b.entry_id)
        ok = self.seen.get(p)
        if ok is None:
            ok = self.seen[p] = (a.owner_id is None or a.owner_id != b.owner_id) and (
                not self.capped
                or self.met.get(p, 0) < self.cfg.pair_free_sets
                or self.recent.get(p, 0) < self.cfg.pair_sets_per_hour
            )
        return ok

    def cost(self, m: Candidate, c: Candidate) -> float:
        u = self.rng.uniform(-self.cfg.jitter, self.cfg.jitter) if self.cfg.jitter else 0.0
        rematch = self.cfg.rematch_penalty * self.recent.get(pair(m.entry_id, c.entry_id), 0)
        if self.cfg.sigma_proximity:
            return gap_in_sigmas(m, c) + u + rematch
        return abs(m.mu - c.mu + u) + rematch

    def complete(self, table: list[Candidate], pool: Sequence[Candidate]) -> None:
        """Add the cheapest allowed candidate of ``pool`` until the table is full or none fits."""
        seated = {m.entry_id for m in table}
        fits = [
            c
            for c in pool
            if c.entry_id not in seated and self.free.get(c.entry_id, 0) >= 1 and all(self.allowed(m, c) for m in table)
        ]
        while len(table) < self.seats and fits:
            best: tuple[float, Candidate] | None = None
            for c in fits:
                cost = sum(self.cost(m, c) for m in table)
                if best is None or cost < best[0]:
                    best = (cost, c)
            assert best is not None
            joined = best[1]
            table.append(joined)
            fits = [c for c in fits if c is not joined and self.allowed(joined, c)]


def gap_in_sigmas(a: Candidate, b: Candidate) -> float:
    """``|mu_a - mu_b| / sqrt(sigma_a^2 + sigma_b^2)``: how far apart two entries are for their
    uncertainties."""
    return abs(a.mu - b.mu) / max(math.hypot(a.sigma, b.sigma), 1e-9)


def order_sureness(bots: Sequence[Candidate]) -> dict[int, float]:
    """Per entry, how sure its place in the table is: the smallest :func:`gap_in_sigmas` to its
    neighbours in the order of ``mu`` (inf for a lone entry)."""
    ranked = sorted(bots, key=lambda c: c.mu)
    out = {c.entry_id: math.inf for c in ranked}
    for a, b in itertools.pairwise(ranked):
        z = gap_in_sigmas(a, b)
        out[a.entry_id] = min(out[a.entry_id], z)
        out[b.entry_id] = min(out[b.entry_id], z)
    return out


def priority(c: Candidate, cfg: LadderConfig, sure: Mapping[int, float] | None = None) -> tuple[bool, float, float]:
    """The order entrants are seated in (smaller first): provisional first, then (when
    :attr:`LadderConfig.order_first`) the least sure of its place (``sure``, from
    :func:`order_sureness`), then the longest idle."""
    return (
        c.sets >= cfg.placement_sets,
        (sure or {}).get(c.entry_id, 0.0),
        -(c.idle_s if c.idle_s is not None else math.inf),
    )


def form_tables(
    candidates: Sequence[Candidate],
    seats: int,
    cfg: LadderConfig,
    *,
    recent: Mapping[Pair, int],
    met: Mapping[Pair, int],
    rng: random.Random,
    house: Sequence[Candidate] = (),
    anchors: Collection[int] | None = None,
) -> list[tuple[int, ...]]:
    """The tables of this tick's new sets, each a tuple of ``seats`` entry ids in a random
    seat order (module docstring). ``recent``: sets per pair formed in the last hour;
    ``met``: rated sets per pair in all; ``house``: the ladder's house entries (used only to
    fill tables when :attr:`LadderConfig.fill_with_house_bots`); ``anchors``: the entries a
    table may start from (a refill: the entries a done set freed; the others may join them),
    None for all."""
    bots = [c for c in candidates if not c.house and c.free > 0]
    field_size = sum(not c.house for c in candidates)
    t = _Tick(cfg, seats, recent, met, rng, field_size >= cfg.pair_cap_field, {c.entry_id: c.free for c in bots})
    for h in house:
        t.free[h.entry_id] = 1 << 30
    ties = {c.entry_id: rng.random() for c in bots}
    sure = order_sureness(bots) if cfg.order_first else {}
    order = sorted(bots, key=lambda c: (*priority(c, cfg, sure), ties[c.entry_id]))
    tables: list[tuple[int, ...]] = []
    for anchor in order:
        if anchors is not None and anchor.entry_id not in anchors:
            continue
        while t.free[anchor.entry_id] > 0 and len(tables) < cfg.max_sets_per_tick:
            table = [anchor]
            t.complete(table, bots)
            if len(table) < seats and cfg.fill_with_house_bots:
                t.complete(table, house)
            if len(table) < seats:
                break
            for m in table:
                t.free[m.entry_id] -= 1
            ids = [m.entry_id for m in table]
            rng.shuffle(ids)
            tables.append(tuple(ids))
    return tables


class LadderSource:
    """A ladder's tournament (format ``ladder``): no schedule; its sets come from the ticks
    (:func:`form_tables`), and a round end never finishes it."""

    format: ClassVar[TournamentFormat] = TournamentFormat.LADDER
    unit: ClassVar[str] = SET

    def first_round(self, f: Field) -> list[ScheduledMatch]:
        return []

    def next_round(self, f: Field, first_index: int, stored: Callable[[], StoredGames], failed: bool) -> Next:
        return WAIT

    def total(self, f: Field) -> int | None:
        return None
