"""Par: what a seat's cards were worth, the luck taken out of its score (docs/ranking.md).

The **par** of a seat in one game of a match (one entry of ``match_results.games``: a
Million Doubt game, a whole Trump Millionaire game of deals, a whole JDF match of games) is
the rule set's weight (:data:`WEIGHTS`) times the sum, over every deal chance drew in it, of
the deal's **luck** for that seat: how much
more the fixed :data:`BASELINE` scores with that seat's hand than with the other hands of the
same deal, in the same position::

    luck(seat s, deal) = V_s(position, hands) - mean over the rotations j of V_s(position, hands rotated by j)

``V_s`` is the baseline's mean score for seat ``s`` over ``rollouts`` seeded rollouts (the
baseline plays every seat), ``position`` what the deal starts from, ``hands rotated by j``
gives seat ``s`` the hand dealt to seat ``s + j``. A deal whose start chance alone decided
(a Million Doubt game; a Trump Millionaire game's first deal; a JDF set's first game) is
rotated with its first leader, so its luck is ``V_s - mean_t V_t`` (one set of rollouts).
A deal started from a position earlier play made (a Millionaire with its exchange, rate and
lead, TM-3; previous places with the exchange, the daihinmin's lead and the daifugo's fall,
JDF-4/JDF-11) keeps that position in every rotation: the position is the same for every
hand compared, so the par never credits or blames it. The adjusted score is
``score - par``.

Every deal's luck has mean zero given everything before the deal (its hands are a uniform
shuffle, and the rotations of a shuffle are as likely as the shuffle itself), whatever the
position and whatever the bots did: the par's expectation is zero for every seat and every
bot, so adjusted scores estimate the same means as raw ones (docs/ranking.md, "Why it is
unbiased"). Trump Millionaire deals after a void deal, TM-6, count too (their hands were
dealt).

Rollout ``r`` of rotation ``j`` of deal ``k`` of the game seeded ``S`` is seeded
``derive_seed(S, "par", k, r)`` (the same for every rotation: common random numbers): a par
is reproducible from the seeds, with no clock. Pure: the engine, :mod:`arena.seeds`, the
search bot's rollout policy.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import engine
from arena.rulesets import ARENA_RULESETS, Deal, arena_ruleset
from arena.seeds import derive_seed
from bots_sdk.samples.search import Rollout
from engine.actions import (
    PASS,
    THROUGH,
    DiscardAction,
    ExchangeAction,
    GiveAction,
    PenaltyAction,
    PlayAction,
    RateAction,
)
from engine.cards import JOKER, format_cards
from engine.game import Game

#: The fixed baseline of every par (its name is recorded in the logs, ``par.baseline``):
#: in each rollout each seat plays, by a seeded coin, the search bot's rollout policy
#: (``heuristic``'s rules on the engine state, bots_sdk.samples.search.Rollout) or the
#: ``greedy`` rules (:func:`greedy_action`).
BASELINE = "mix-v1"
#: Baselines this module can compute (a log names one of them).
BASELINES = ("mix-v1", "rollout-v1")
#: Decimals the pars are rounded to (stored, logged, compared by the verifier).
PAR_DECIMALS = 4
#: Most rollouts a par may be computed with (``ARENA_PAR_ROLLOUTS``'s bound, and what the
#: verifier accepts from a log: a downloaded log cannot make it work without end).
MAX_ROLLOUTS = 1024
#: Safety stop of one rollout (a deal/game ends long before).
MAX_ROLLOUT_ACTIONS = 2000
#: The par's weight per rule set (``ArenaRuleSet.par_weight``): the stored par is ``weight x``
#: the sum of the deals' luck, so the adjusted score is ``score - weight x luck``, a control
#: variate with its coefficient fixed in advance (unbiased for any fixed weight, as the luck has
#: mean zero). Each is the optimal ``Cov(score, luck) / Var(luck)`` estimated on a calibration
#: pool of seeded games apart from the bench's, rounded (docs/ranking.md, "The weight").
#: Recorded in the log (``par.weight``); a log without it was computed with weight 1.
WEIGHTS: Mapping[str, float] = MappingProxyType({name: rs.par_weight for name, rs in ARENA_RULESETS.items()})


class ParError(ValueError):
    """A game whose par cannot be computed: no seed (fixed hands), an engine log that does
    not replay, an unknown baseline, no rollouts. The message says why."""


def _capture(g: Any) -> Deal:
    """The deal ``g`` has just dealt (no action of it taken yet): the rule set's ``par_deal``."""
    return arena_ruleset(g.ruleset).par_deal(g)


def chance_deals(
    ruleset: str, options: Mapping[str, Any] | None, seed: int, actions: Sequence[Mapping[str, Any]]
) -> list[Deal]:
    """Every deal of the engine game seeded ``seed`` (Million Doubt: the game; Trump
    Millionaire: each deal, void ones included; JDF: each game) as its recorded ``actions``
    (an engine log's) replay, in order.

    Raises:
        ParError: an action the engine refuses (the log is not this engine's).
    """
    try:
        g: Any = engine.new_game(ruleset, options, seed)
    except (engine.OptionsError, ValueError) as exc:
        raise ParError(f"the game cannot be dealt: {exc}") from None
    deals = [_capture(g)]
    start = g.unit_start
    for i, entry in enumerate(actions):
        try:
            if "forfeit" in entry:
                g.forfeit(entry["seat"], entry["forfeit"])
            else:
                g.apply(entry["seat"], entry["action"])
        except (engine.InvalidAction, KeyError, TypeError) as exc:
            raise ParError(f"engine action {i} does not replay: {exc}") from None
        if g.unit_start != start and not g.over:
            start = g.unit_start
            deals.append(_capture(g))
    return deals


def weight_of(ruleset: str) -> float:
    """The par's weight for ``ruleset`` (:data:`WEIGHTS`; 1 for a rule set it does not list)."""
    return WEIGHTS.get(ruleset, 1.0)


def greedy_action(g: Any, seat: int, kind: str, info: Mapping[str, Any]) -> tuple[str, Any]:
    """The ``greedy`` sample bot's rules on the engine state, as ``(action type, typed
    action)``: the weakest face-up play (pass only when none), ``through``, the whole field
    as penalty, the weakest cards as gives and discards (keeping one card), no exchange, the
    smallest rate."""
    if kind == "play":
        plays = [] if info.get("stuck") else g.face_up_plays(seat)
        if not plays:
            return "pass", PASS
        rev = g.reversed_order
        best, best_key = plays[0], (999, 0)
        for cards, declared in plays:
            nat = [c >> 2 for c in cards if c != JOKER] + list(declared or ())
            value = 99 if not nat else (12 - max(nat) if rev else min(nat))
            key = (value, len(cards))
            if key < best_key:
                best, best_key = (cards, declared), key
        return "play", PlayAction(best[0], [], best[1])
    if kind == "doubt":
        return "through", THROUGH
    if kind == "penalty":
        return "penalty", PenaltyAction([c for rec in g.field for c in rec.cards])
    if kind in ("give", "discard"):
        hand = sorted(g.hands[seat])
        lo = int(info.get("count", info.get("min", 0)))
        hi = int(info.get("count", info.get("max", 0)))
        cards = hand[: max(lo, min(hi, len(hand) - 1), 0)]
        return (kind, GiveAction(cards)) if kind == "give" else (kind, DiscardAction(cards))
    if kind == "exchange":
        return "exchange", ExchangeAction(False)
    if kind == "rate":
        return "rate", RateAction(min(info.get("choices") or [1]))
    raise ParError(f"unknown decision kind {kind!r}")


def _run(g: Any, seed: int, baseline: str) -> None:
    """Play ``g`` to its end with the baseline seeded ``seed``."""
    rng = random.Random(seed)
    policy = Rollout(rng)
    greedy = [False] * g.seats if baseline == "rollout-v1" else [rng.random() < 0.5 for _ in range(g.seats)]
    for _ in range(MAX_ROLLOUT_ACTIONS):
        d = g.decision()
        if d is None:
            return
        if greedy[d.seat]:
            kind, typed = greedy_action(g, d.seat, d.kind, d.info)
        else:
            kind, typed = policy.act(g, d.seat, d.kind, d.info)
        g.push(d.seat, typed)


def _start(ruleset: str, options: Mapping[str, Any] | None, deal: Deal, rotation: int) -> Game:
    n = len(deal.hands)
    setup: dict[str, Any] = {
        "hands": {str(s): format_cards(deal.hands[(s + rotation) % n]) for s in range(n)},
        "leader": deal.leader,
        "set_aside": format_cards(deal.aside),
    }
    if deal.state is not None:
        setup["state"] = dict(deal.state)
    return engine.from_setup(ruleset, options, setup)


def _scores(g: Any, n: int, bonus: int) -> list[float]:
    """The finished deal's score per seat: MD-17 points, TM-7 points, JDF-13 rank points (and
    the set bonus of first place): the rule set's ``par_scores``."""
    return arena_ruleset(g.ruleset).par_scores(g, n, bonus)


def _values(
    ruleset: str, options: Mapping[str, Any] | None, deal: Deal, rotation: int, seed: int, rollouts: int, baseline: str
) -> list[float]:
    n = len(deal.hands)
    start = _start(ruleset, options, deal, rotation)
    total = [0.0] * n
    for r in range(rollouts):
        g = start.copy(log=False)
        _run(g, derive_seed(seed, r), baseline)
        for s, v in enumerate(_scores(g, n, deal.bonus)):
            total[s] += v
    return [t / rollouts for t in total]


def deal_luck(
    ruleset: str,
    options: Mapping[str, Any] | None,
    deal: Deal,
    seed: int,
    rollouts: int,
    baseline: str = BASELINE,
) -> list[float]:
    """The luck per seat of one deal (module docstring), from ``rollouts`` rollouts per
    rotation seeded from ``seed``; sums to zero over the seats."""
    n = len(deal.hands)
    v = _values(ruleset, options, deal, 0, seed, rollouts, baseline)
    if deal.state is None:
        mean = sum(v) / n
        return [x - mean for x in v]
    rotated = [v] + [_values(ruleset, options, deal, j, seed, rollouts, baseline) for j in range(1, n)]
    return [v[s] - sum(rotated[j][s] for j in range(n)) / n for s in range(n)]


def game_par(
    ruleset: str,
    options: Mapping[str, Any] | None,
    game_seed: int,
    seat_count: int,
    *,
    rollouts: int,
    actions: Sequence[Mapping[str, Any]] = (),
    baseline: str = BASELINE,
    weight: float = 1.0,
) -> list[float]:
    """The par per seat of the engine game seeded ``game_seed`` whose engine log recorded
    ``actions`` (module docstring): ``weight`` times the sum of its deals' luck, rounded to
    :data:`PAR_DECIMALS`; indexed by the game's seats (as its result), not by the match's
    players. Weight 0 plays no rollout (every par is 0; the actions are still replayed).

    Raises:
        ParError: ``rollouts`` below 1, an unknown baseline, a weight outside 0 to 1, a seat
            count that is not the rule set's, or actions the engine refuses.
    """
    if rollouts < 1:
        raise ParError("a par needs at least one rollout")
    if baseline not in BASELINES:
        raise ParError(f"unknown par baseline {baseline!r}; known: {', '.join(BASELINES)}")
    try:
        seats = engine.get_ruleset(ruleset).seats
    except engine.OptionsError as exc:
        raise ParError(str(exc)) from None
    if seats != seat_count:
        raise ParError(f"{ruleset} has {seats} seats, not {seat_count}")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1:
        raise ParError(f"the par weight must be a number from 0 to 1, not {weight!r}")
    total = [0.0] * seat_count
    deals = chance_deals(ruleset, options, game_seed, actions)
    if weight == 0:
        return total
    for k, deal in enumerate(deals):
        for s, x in enumerate(deal_luck(ruleset, options, deal, derive_seed(game_seed, "par", k), rollouts, baseline)):
            total[s] += x
    return [round(weight * x, PAR_DECIMALS) + 0.0 for x in total]


def match_pars(
    match_log: Mapping[str, Any], rollouts: int, baseline: str = BASELINE, weight: float | None = None
) -> list[list[float]]:
    """The par of every game of a match log (:class:`arena.matchlog.MatchLog`), per game per
    seat of the game (:func:`game_par`), with ``weight`` (None: the rule set's, :func:`weight_of`).

    Raises:
        ParError: a game has no seed (fixed hands) or does not replay; as :func:`game_par`.
    """
    out = []
    ruleset = str(match_log.get("ruleset"))
    w = weight_of(ruleset) if weight is None else weight
    for gm in match_log.get("games") or []:
        elog = gm.get("engine_log") or {}
        seed = gm.get("seed")
        if not isinstance(seed, int) or elog.get("setup") is not None:
            raise ParError(f"game {gm.get('index')} was not dealt from a seed: it has no par")
        out.append(
            game_par(
                ruleset,
                match_log.get("options"),
                seed,
                len(gm.get("seats") or []),
                rollouts=rollouts,
                actions=elog.get("actions") or [],
                baseline=baseline,
                weight=w,
            )
        )
    return out


def with_pars(
    match_log: Mapping[str, Any],
    pars: Sequence[Sequence[float]],
    rollouts: int,
    baseline: str = BASELINE,
    weight: float | None = None,
) -> dict[str, Any]:
    """A copy of ``match_log`` with the pars recorded: ``"par": [...]`` (per seat of the
    game) at the end of each game record, and ``"par": {"baseline", "rollouts", "weight"}``
    at the end of the log (what :func:`check_pars` recomputes them with; ``weight`` None:
    the rule set's, :func:`weight_of`)."""
    w = weight_of(str(match_log.get("ruleset"))) if weight is None else weight
    games = [{**gm, "par": [float(x) for x in p]} for gm, p in zip(match_log["games"], pars, strict=True)]
    record = {"baseline": baseline, "rollouts": int(rollouts), "weight": float(w)}
    return {**match_log, "games": games, "par": record}


def player_pars(game: Mapping[str, Any], par: Sequence[float]) -> list[float]:
    """A game's par (per seat of the game) per player of the match, as ``match_results.games``
    keeps it (Million Doubt swaps the seats every other game)."""
    out = [0.0] * len(par)
    for seat, player in enumerate(game["seats"]):
        out[player] = float(par[seat])
    return out


def check_pars(match_log: Mapping[str, Any]) -> int:
    """Recompute the pars a log records (its ``par`` record: baseline, rollouts and weight,
    1 when it has none, as in the logs written before weights) and compare them with each
    game's ``par``; returns how many games were checked (0: the log has no pars).

    Raises:
        ParError: the record is malformed, a game's par is missing, or differs from the one
            recomputed (the message names the game).
    """
    record = match_log.get("par")
    if record is None:
        if any("par" in gm for gm in match_log.get("games") or []):
            raise ParError("games carry a par but the log has no 'par' record")
        return 0
    if not isinstance(record, Mapping):
        raise ParError("the log's 'par' record must be an object {baseline, rollouts, weight}")
    rollouts, baseline, weight = record.get("rollouts"), record.get("baseline"), record.get("weight", 1.0)
    if not isinstance(rollouts, int) or isinstance(rollouts, bool) or not isinstance(baseline, str):
        raise ParError("the log's 'par' record needs an integer 'rollouts' and a 'baseline'")
    if not 1 <= rollouts <= MAX_ROLLOUTS:
        raise ParError(f"the log's par rollouts must be 1 to {MAX_ROLLOUTS}, not {rollouts}")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1:
        raise ParError(f"the log's par weight must be a number from 0 to 1, not {weight!r}")
    expected = match_pars(match_log, rollouts, baseline, float(weight))
    for gm, want in zip(match_log["games"], expected, strict=True):
        got = gm.get("par")
        if (
            not isinstance(got, list)
            or len(got) != len(want)
            or any(
                isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or abs(x - w) > 1e-9
                for x, w in zip(got, want)
            )
        ):
            raise ParError(f"game {gm.get('index')}: recorded par {got} differs from the recomputed {want}")
    return len(expected)
