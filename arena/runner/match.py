"""Play ONE match between players under the time rules, and replay its log.

Pure (the engine, the players of :mod:`arena.runner.players`, a monotonic clock; no database,
no Celery): the Celery task, the bot check and ``arena play`` all play a :class:`Match`
(configured by :class:`MatchConfig`, observed through :class:`Observers`); :func:`run_match`
is the one-call form. One engine unit per game spec ``{"seed": int, "seats": [player index of
seat 0, ...]}`` or ``{"setup": {...}, "seats": [...]}`` (:func:`engine.from_setup`).
``million_doubt`` plays ``games`` games between 2 players (by default game ``i`` dealt from
``arena.seeds.game_seed(seed, i)``, seats swapped on odd ``i``); ``trump_millionaire`` one game
of deals to the target (4 players); ``jdf`` one match of ``sets`` x ``games_per_set`` games.

Per decision (:class:`arena.runner.gameplay.GamePlay`, TIME-1..3, FAULT-1..3): the request
(:func:`bots_sdk.protocol.build_request`) is sent with the seat's remaining bank as the
deadline; banks reset when ``unit_index`` changes and at each Million Doubt game. Only the
bot's own time is taken from its bank: the part of an answer's time the arena was unavailable
on the bot's path (:attr:`Outcome.arena_ms`) is not; a request the arena itself failed
(:attr:`Outcome.arena`, a player raising :class:`~arena.runner.players.ArenaFailure`, or
:attr:`Observers.health` judging a time-out or connection error to be the worker's own failure)
is no fault: it is recorded in the game's ``arena_faults`` and the decision asked again with
the bank it had, up to :data:`~arena.runner.gameplay.MAX_ARENA_RETRIES` times; then, or when
the health says stop, the match stops (:class:`~arena.runner.gameplay.ArenaUnavailable`:
nothing of it is scored; its caller plays it again). Fault kinds: ``timeout``,
``connection_error``, ``http_status``, ``body_too_large``, ``invalid_json``,
``invalid_action``, ``bot_error`` (FAULT-2: the engine's ``g.forfeit``), each recorded with its
code and parameters (:mod:`arena.faults`: where it arose says what it was; the English
``detail`` is rendered from them) and sent to the bot in its ``match_end`` notice
(``your_faults``); ``max_faults`` faults forfeit the rest of the match (FAULT-3, reason
``max_faults``); a :class:`~arena.runner.players.WithdrawnPlayer` (a deleted bot) forfeits
every game, sent no request or notice (reason ``withdrawn``), and so does a player from the
decision where :attr:`Observers.withdrawn` first says its bot was deleted.

The log (:meth:`Match.play`'s return) is an :class:`arena.matchlog.MatchLog` (its records list
its fields); requests are stored as SHA-256 and size unless ``log_requests``
(:func:`arena.runner.replay.replay` rebuilds and checks them). Exchanges carry ``slot_wait_ms`` (when 1 ms or more) and
``slot_bypassed``; per-player totals are :attr:`Match.slot_totals`. ``fairness`` says where
``seed`` comes from (:func:`arena.runner.replay.check_fairness`). Design: docs/fairness.md.

A person at a table (docs/tables.md) plays under time rules of its own
(:attr:`MatchConfig.player_time_rules`, the log's ``player_time_rules``) and, being a
:class:`~arena.runner.players.CheckedPlayer`, may try answers first: the runner hands it the
engine's check of the pending decision, so a refused try is explained (its rule id) and the
seat asked on, its clock running; only the answer it gives is the exchange.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import engine
from arena.matchlog import (
    LOG_FORMAT,
    LOG_VERSION,
    Exchange,
    FairnessRecord,
    FaultRecord,
    GameRecord,
    MatchLog,
    MatchResult,
    PlayerRecord,
    TimeRulesRecord,
)
from arena.runner.gameplay import GamePlay
from arena.runner.players import (
    Player,
    PlayerSpec,
    PlayerWithdrawn,
    SlotUse,
    WithdrawnPlayer,
    make_player,
)
from arena.runner.redact import URL_BLANK, blank_urls
from arena.seeds import game_seed
from bots_sdk import protocol
from engine.timebank import TimeRules

#: FAULT-3 default.
DEFAULT_MAX_FAULTS = 3
#: Forfeit reason of a withdrawn player's seats (a deleted bot), asked nothing.
WITHDRAWN = "withdrawn"
#: Forfeits the runner applies without an exchange (FAULT-3, withdrawn): replay expects none.
BARRED_REASONS = frozenset({"max_faults", WITHDRAWN})
#: What a ``match_end`` notice tells a bot of each of its own faults (docs/protocol.md).
NOTICE_FAULT_KEYS = ("game", "n", "kind", "code", "params", "rule", "detail")
_ACTION_KEYS = ("type", "cards", "face_down", "jokers", "accept", "rate")

#: A game spec: ``{"seed": int, "seats": [...]}`` or ``{"setup": {...}, "seats": [...]}``.
GameSpec = Mapping[str, Any]


class MatchError(ValueError):
    """Bad match parameters (players, game specs); the message names the problem."""


class ArenaHealth(Protocol):
    """The worker's view of its own health during a match (:attr:`Observers.health`;
    ``arena.delivery`` builds it from the match's lease and the worker's links)."""

    def abort(self) -> str:
        """Why the match must stop now ("" : it goes on), asked before every request: the
        worker lost the match's lease (another delivery took it over)."""
        ...

    def fault(self, started: float, ended: float) -> str:
        """Why a request that got no answer (a time-out, a connection error), sent at
        ``started`` and over at ``ended`` (monotonic seconds), failed for the worker's own
        failure: its heartbeat failed or went stale meanwhile, or it cannot reach Redis or the
        database now. "" : the worker was well: the fault is the bot's."""
        ...

    def wait(self) -> bool:
        """Block until the worker is well again (then True), or give up (False: the match
        stops)."""
        ...


def default_game_specs(ruleset: str, seed: int, games: int = 1) -> list[dict[str, Any]]:
    """Game specs of a match (module docstring): in Million Doubt a fresh deal per game, the
    seats swapped on odd games."""
    rs = engine.get_ruleset(ruleset)
    if rs.games_per_match_option:
        return [{"seed": game_seed(seed, i), "seats": [0, 1] if i % 2 == 0 else [1, 0]} for i in range(games)]
    return [{"seed": game_seed(seed, 0), "seats": list(range(rs.seats))}]


def normal_action(action: Mapping[str, Any]) -> dict[str, Any]:
    """The ACT keys of an answer, in the engine's order (what the engine log records)."""
    return {k: action[k] for k in _ACTION_KEYS if k in action}


def _game_wins(result: Mapping[str, Any], seats: Sequence[int]) -> dict[int, int]:
    """Player index -> 1 if it won (MD) / took first place (TM, JDF; ties share) in this game."""
    ranks = result.get("ranks") or {}
    return {player: 1 if ranks.get(str(seat)) == 1 else 0 for seat, player in enumerate(seats)}


def _game_scores(result: Mapping[str, Any], seats: Sequence[int]) -> dict[int, int]:
    scores = result.get("scores") or {}
    return {p: int(scores.get(str(s), 0)) for s, p in enumerate(seats)}


def summarize(
    ruleset: str, n_players: int, games: Sequence[GameRecord], faults_by_player: Sequence[int]
) -> MatchResult:
    """The match result from its games' results (also used by replay)."""
    scores = [0] * n_players
    wins = [0] * n_players
    for gm in games:
        for p, v in _game_scores(gm["result"], gm["seats"]).items():
            scores[p] += v
        for p, v in _game_wins(gm["result"], gm["seats"]).items():
            wins[p] += v
    ranks: list[int] | None = None
    if not engine.get_ruleset(ruleset).games_per_match_option and len(games) == 1:
        # one engine game is the whole match (TM, JDF): its final ranks are the match's places
        r = games[0]["result"]["ranks"]
        ranks = [0] * n_players
        for s, p in enumerate(games[0]["seats"]):
            ranks[p] = int(r[str(s)])
    return {"scores": scores, "wins": wins, "faults": list(faults_by_player), "games": len(games), "ranks": ranks}


@dataclass(frozen=True)
class MatchConfig:
    """What a match plays.

    Attributes:
        ruleset, options: the rule set and its options (engine options, validated).
        seed: match seed (games are seeded from it by :func:`arena.seeds.game_seed`).
        games: Million Doubt game count when ``game_specs`` is not given.
        game_specs: explicit ``[{"seed", "seats"}]`` (one engine game each).
        time_rules: TIME-1 values (None: 60 s / +10 s / 60 s cap).
        max_faults: FAULT-3 limit per player in this match.
        match_id: the protocol's ``match_id`` (None: a random one).
        log_requests: also store every request body (large) in the log.
        notices: send match_start / match_end notices.
        fairness: ``{"tournament_id", "match_index", "attempt", "commitment"}`` of a
            tournament match, stored as the log's ``fairness`` (``seed`` must then be the
            attempt seed, :func:`arena.seeds.attempt_seed`).
        record_urls: store the players' URLs in the log; when False, ``players[].url`` is
            None and the URLs are blanked out of fault details (tournament logs: a
            competitor must not learn an opponent's endpoint; :mod:`arena.runner.redact`).
        player_time_rules: TIME-1 values of some players (player index -> rules; a person
            at a table), the others playing ``time_rules``; recorded in the log's
            ``player_time_rules`` (``{"<index>": {"initial_ms", "increment_ms", "cap_ms"}}``).
    """

    ruleset: str
    options: Mapping[str, Any] | None = None
    seed: int = 0
    games: int = 1
    game_specs: Sequence[GameSpec] | None = None
    time_rules: TimeRules | None = None
    max_faults: int = DEFAULT_MAX_FAULTS
    match_id: str | None = None
    log_requests: bool = False
    notices: bool = True
    fairness: FairnessRecord | Mapping[str, Any] | None = None
    record_urls: bool = True
    player_time_rules: Mapping[int, TimeRules] | None = None


@dataclass(frozen=True)
class Observers:
    """Progress callbacks of a match, and the question it asks before each request (each
    must not raise).

    Attributes:
        on_decision: given each exchange record once complete.
        on_game_end: given each game record once complete.
        on_step: after every decision, ``(game index, the engine game, the exchange)``
            (the live view, :mod:`arena.live`).
        withdrawn: given a player index before each decision request to that player and
            before the notices: True once the player was withdrawn while the match plays
            (its bot deleted, :mod:`arena.withdrawals`). Its seats then forfeit every
            decision from this one without a request (reason ``withdrawn``, FAULT-3) and it
            gets no end notice.
        health: the worker's own health (:class:`ArenaHealth`), asked before each request
            and about each request that got no answer; None: the arena is taken to be well
            (a local run), only the players' own judgement (:attr:`Outcome.arena`) counts.
    """

    on_decision: Callable[[Exchange], None] | None = None
    on_game_end: Callable[[GameRecord], None] | None = None
    on_step: Callable[[int, engine.Game, Exchange], None] | None = None
    withdrawn: Callable[[int], bool] | None = None
    health: ArenaHealth | None = None


@dataclass
class SlotTotals:
    """One player's waits for slots of its endpoint's cap over a match, notices included:
    ``wait_s`` (sum, seconds), ``max_wait_s`` (longest one), ``bypassed`` (requests sent
    without a slot)."""

    wait_s: float = 0.0
    max_wait_s: float = 0.0
    bypassed: int = 0

    def add(self, slot: SlotUse) -> None:
        """Count one request's :class:`SlotUse`."""
        self.wait_s += slot.wait_s
        self.max_wait_s = max(self.max_wait_s, slot.wait_s)
        if slot.bypassed:
            self.bypassed += 1


def _check_specs(specs: Sequence[GameSpec], n_seats: int, n_players: int) -> None:
    if not specs:
        raise MatchError("a match needs at least one game")
    for i, spec in enumerate(specs):
        seats = spec.get("seats")
        if (
            not isinstance(seats, list)
            or len(seats) != n_seats
            or any(not isinstance(p, int) or not 0 <= p < n_players for p in seats)
        ):
            raise MatchError(f"game spec {i}: 'seats' must list {n_seats} player indices 0..{n_players - 1}")
        if spec.get("setup") is None and not isinstance(spec.get("seed"), int):
            raise MatchError(f"game spec {i}: 'seed' must be an integer")
    used = sorted({p for s in specs for p in s["seats"]})
    if used != list(range(n_players)):
        raise MatchError(f"every player must sit in some game (players {n_players}, seated {used})")


class Match:
    """One match between ``players`` (index = player index in the game specs) under
    ``config``; :meth:`play` plays it once and returns its log (module docstring).

    Its state is its members: :attr:`players`, :attr:`specs`, :attr:`names`,
    :attr:`faults_by_player`, :attr:`barred` (player index -> the forfeit reason of every game
    it sits in from now on), :attr:`slot_totals` (per player, filled while playing) and
    :attr:`log`.

    Raises:
        MatchError: wrong number of players, bad seats in a spec.
        engine.OptionsError: bad rule set or options.
        ValueError: a player spec that is no player (:func:`~arena.runner.players.make_player`).
    Bots never make :meth:`play` raise: their failures are faults in the log.
    """

    def __init__(self, players: Sequence[PlayerSpec], config: MatchConfig, observers: Observers | None = None):
        self.config = config
        self.observers = observers or Observers()
        self.options = engine.make_options(config.ruleset, config.options)
        self.rules = config.time_rules or TimeRules()
        self.player_rules = {int(i): r for i, r in (config.player_time_rules or {}).items()}
        self.match_id = config.match_id or uuid.uuid4().hex
        self.players: list[Player] = [make_player(p) for p in players]
        # a person's player tries answers on the engine first (CheckedPlayer), others answer once
        self.checked = [getattr(p, "decide_checked", None) for p in self.players]
        specs = config.game_specs
        if specs is None:
            specs = default_game_specs(config.ruleset, config.seed, config.games)
        self.specs: list[dict[str, Any]] = [dict(s) for s in specs]
        _check_specs(self.specs, engine.SEATS[config.ruleset], len(self.players))
        self.faults_by_player = [0] * len(self.players)
        self.barred: dict[int, str] = {
            i: WITHDRAWN for i, p in enumerate(self.players) if p.kind == WithdrawnPlayer.kind
        }
        # a player named by its URL (no name given) is not named by it in a log kept without URLs
        self.names = [
            URL_BLANK if not config.record_urls and p.url and p.name == p.url else p.name for p in self.players
        ]
        self.slot_totals = [SlotTotals() for _ in self.players]
        self.log = self._new_log()

    def _new_log(self) -> MatchLog:
        cfg, rules = self.config, self.rules
        players: list[PlayerRecord] = [
            {"index": i, "name": self.names[i], "kind": p.kind, "url": p.url if cfg.record_urls else None}
            for i, p in enumerate(self.players)
        ]
        log: MatchLog = {
            "format": LOG_FORMAT,
            "version": LOG_VERSION,
            "protocol": protocol.PROTOCOL_VERSION,
            "match_id": self.match_id,
            "ruleset": cfg.ruleset,
            "options": self.options.to_dict(),
            "time_rules": _rules_record(rules),
            "seed": cfg.seed,
            "max_faults": cfg.max_faults,
            "players": players,
            "games": [],
            "faults": [],
            "result": None,
            "started_at": time.time(),
            "finished_at": None,
        }
        if self.player_rules:  # after ``time_rules``, only in logs that have them
            items = list(log.items())
            at = [k for k, _ in items].index("seed")
            record = {str(i): _rules_record(r) for i, r in sorted(self.player_rules.items())}
            items.insert(at, ("player_time_rules", record))
            log = dict(items)  # type: ignore[assignment]
        if cfg.fairness is None:
            return log
        # ``fairness`` sits after ``max_faults`` (the key order of every stored log)
        items = list(log.items())
        at = [k for k, _ in items].index("players")
        items.insert(at, ("fairness", dict(cfg.fairness)))
        return dict(items)  # type: ignore[return-value]

    def rules_of(self, player: int) -> TimeRules:
        """The TIME-1 values player ``player`` plays under (its own, or the match's)."""
        return self.player_rules.get(player, self.rules)

    def withdraw_if_deleted(self, player: int) -> bool:
        """True when ``player`` is barred as withdrawn, asking :attr:`Observers.withdrawn` first
        (a player withdrawn now is barred from here on: :attr:`barred`)."""
        if player in self.barred:
            return self.barred[player] == WITHDRAWN
        ask = self.observers.withdrawn
        if ask is not None and ask(player):
            self.barred[player] = WITHDRAWN
            return True
        return False

    def bar_withdrawn(self, player: int) -> None:
        """Bar ``player`` as withdrawn from here on (its request found its bot deleted:
        :class:`~arena.runner.players.PlayerWithdrawn`)."""
        self.barred[player] = WITHDRAWN

    def play(self) -> MatchLog:
        """Play every game, send the notices; returns :attr:`log`, complete."""
        log = self.log
        if self.config.notices:
            self._notify_start()
        for gi, spec in enumerate(self.specs):
            record = GamePlay(self, gi, spec).run()
            if not self.config.record_urls:
                blank_urls(record["faults"], (p.url for p in self.players))
            log["games"].append(record)
            log["faults"].extend(record["faults"])
            if self.observers.on_game_end:
                self.observers.on_game_end(record)
        result = summarize(self.config.ruleset, len(self.players), log["games"], self.faults_by_player)
        log["result"] = result
        log["finished_at"] = time.time()
        if self.config.notices:
            self._notify_end(result, log["faults"])
        return log

    def _notify(self, i: int, notice: Mapping[str, Any]) -> None:
        try:
            self.slot_totals[i].add(self.players[i].notify(protocol.dumps(notice)))
        except PlayerWithdrawn:  # found with the notice's slot: nothing was sent
            self.bar_withdrawn(i)

    def _notify_start(self) -> None:
        for i in range(len(self.players)):
            if i in self.barred or self.withdraw_if_deleted(i):
                continue
            notice = protocol.match_start_notice(
                match_id=self.match_id,
                ruleset=self.config.ruleset,
                options=self.options.to_dict(),
                time_rules=self.rules,
                players=self.names,
                you=i,
                games=len(self.specs),
            )
            self._notify(i, notice)

    def _notify_end(self, result: MatchResult, faults: Sequence[FaultRecord]) -> None:
        for i in range(len(self.players)):
            if self.withdraw_if_deleted(i):
                continue
            notice = protocol.match_end_notice(
                match_id=self.match_id,
                ruleset=self.config.ruleset,
                players=self.names,
                you=i,
                scores=result["scores"],
                wins=result["wins"],
                faults=result["faults"],
                your_faults=[
                    {k: v for k, v in f.items() if k in NOTICE_FAULT_KEYS} for f in faults if f["player"] == i
                ],
            )
            self._notify(i, notice)


def _rules_record(rules: TimeRules) -> TimeRulesRecord:
    return {"initial_ms": rules.initial_ms, "increment_ms": rules.increment_ms, "cap_ms": rules.cap_ms}


_CONFIG_FIELDS = frozenset(f.name for f in dataclasses.fields(MatchConfig)) - {"ruleset", "options"}
_OBSERVER_FIELDS = frozenset(f.name for f in dataclasses.fields(Observers))


def run_match(
    players: Sequence[PlayerSpec], ruleset: str, options: Mapping[str, Any] | None = None, **settings: Any
) -> MatchLog:
    """Play one match and return its log: ``Match(players, MatchConfig(ruleset, options,
    ...), Observers(...)).play()``, ``settings`` being the other fields of
    :class:`MatchConfig` and those of :class:`Observers` by name.

    Raises:
        TypeError: a setting that is neither; else as :class:`Match`.
    """
    unknown = settings.keys() - _CONFIG_FIELDS - _OBSERVER_FIELDS
    if unknown:
        raise TypeError(f"run_match() got unexpected keyword arguments {sorted(unknown)}")
    config = MatchConfig(ruleset, options, **{k: v for k, v in settings.items() if k in _CONFIG_FIELDS})
    observers = Observers(**{k: v for k, v in settings.items() if k in _OBSERVER_FIELDS})
    return Match(players, config, observers).play()


__all__ = [
    "Match",
    "MatchConfig",
    "Observers",
    "SlotTotals",
    "run_match",
    "default_game_specs",
    "summarize",
    "MatchError",
    "ArenaHealth",
    "DEFAULT_MAX_FAULTS",
    "BARRED_REASONS",
    "WITHDRAWN",
]
