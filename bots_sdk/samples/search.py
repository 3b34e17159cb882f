"""``search``: determinized Monte Carlo search over the rules engine, for every rule set.

For each decision with more than one candidate answer the bot repeatedly samples a world the
seat cannot tell from the real one (:func:`bots_sdk.samples.worlds.sample_world`: the hidden
cards dealt at random, consistent with what the request shows), plays every candidate in that
world and finishes the deal/game with a fast default policy (:class:`Rollout`), then answers
the candidate with the best mean score for its seat (Million Doubt: the game's points; Trump
Millionaire: the deal's points; JDF: the game's rank points). All candidates share each world
(common random numbers); the ``heuristic`` answer is always a candidate and is kept unless
another one is ahead of it by more than ``margin`` standard errors of the paired differences.

Budget: ``budget_ms`` per decision (default 100), and never more than ``bank_fraction`` of the
time bank the request reports (``time.remaining_ms``, TIME-1). The clock is checked between
rollouts; the best answer so far is returned when it runs out. A decision with one legal
answer is answered at once. Given ``seed`` the bot is deterministic apart from the clock
(``max_rollouts`` bounds the search by count instead, for reproducible tests).

A request the bot cannot rebuild (see docs/search-bot.md) is answered as ``heuristic`` would.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any

from bots_sdk.bot import Request, rank
from bots_sdk.md import face_down_variants
from bots_sdk.samples.heuristic import HeuristicBot
from bots_sdk.samples.worlds import Unsupported, sample_world
from engine.actions import (
    DOUBT,
    PASS,
    THROUGH,
    DiscardAction,
    ExchangeAction,
    GiveAction,
    PenaltyAction,
    PlayAction,
    RateAction,
)
from engine.cards import JOKER, R2, R3, R8
from engine.game import Game

#: Most candidate answers searched per decision (the heuristic's answer is always one).
MAX_CANDIDATES = 8
#: Every this many worlds, candidates clearly behind the heuristic's answer are dropped.
PRUNE_EVERY = 4
#: Most actions of one rollout (a safety bound; a deal/game ends long before).
MAX_ROLLOUT_ACTIONS = 600


def _score(g: Game, seat: int) -> float:
    """The seat's score of the finished unit: MD game points, TM deal points, JDF rank points."""
    r: Any = g.unit_result()
    if r is None:
        return 0.0
    return float(r["scores"].get(str(seat), 0))


class Rollout:
    """The default policy of the rollouts: fast rules on the engine state (no requests).

    Plays: a finishing play if any (JDF: a clean one, JDF-10); in JDF, cards that would foul
    a finish are spent while at most two other cards are left; a lead of the weakest rank
    with all its copies; a follow with the weakest play holding no joker or 2 (3 in
    revolution), else such a play only when a hand is small, else a pass; ``pass_rate`` of
    follows pass anyway. Million Doubt: no face-down play; a doubt with probability
    ``doubt_rate`` (``finish_doubt_rate`` on a claimed last card); the penalty gives the field
    but jokers, 2s and 8s (everything when it bursts the receiver). Gives and discards: the
    weakest cards, keeping one.

    Actions go to the engine as typed actions (:mod:`engine.actions`) through
    :meth:`Game.push`, its trusted path: the face-up plays are the engine's own
    (:meth:`Game.face_up_plays`), taken as generated; the other handlers still validate.
    Rollouts run on copies that keep no log (``Game.copy(log=False)``).
    """

    def __init__(self, rng: random.Random, pass_rate: float = 0.05, doubt_rate: float = 0.2):
        self.rng = rng
        self.pass_rate = pass_rate
        self.doubt_rate = doubt_rate
        self.finish_doubt_rate = 0.6

    def run(self, g: Game) -> int:
        """Play ``g`` to the end of its unit; returns the number of actions taken."""
        n = 0
        while not g.over and n < MAX_ROLLOUT_ACTIONS:
            d = g.decision()
            if d is None:
                break
            g.push(d.seat, self.act(g, d.seat, d.kind, d.info)[1])
            n += 1
        return n

    def act(self, g: Any, seat: int, kind: str, info: dict[str, Any]) -> tuple[str, Any]:  # noqa: C901 - one rule a kind
        """The policy's ``(action type, typed action)`` for ``seat``'s decision ``kind``."""
        if kind == "play":
            return self._play(g, seat, info)
        if kind == "doubt":
            last = g.pending[0].seat if g.pending else 1 - seat
            p = self.finish_doubt_rate if not g.hands[last] else self.doubt_rate
            if len(g.hands[seat]) + g.field_size() >= g.BURST:
                p /= 4
            return ("doubt", DOUBT) if self.rng.random() < p else ("through", THROUGH)
        if kind == "penalty":
            pool = [c for rec in g.field for c in rec.cards]
            receiver = 1 - seat
            if len(g.hands[receiver]) + len(pool) >= g.BURST:
                give = pool
            else:
                give = [c for c in pool if c != JOKER and c >> 2 not in (R2, R8)]
                if len(give) < info.get("min", 0):
                    give = sorted(pool)[: info["min"]]
            return "penalty", PenaltyAction(give)
        if kind in ("give", "discard"):
            hand = sorted(g.hands[seat])
            n = info["count"] if "count" in info else min(info.get("max", 0), len(hand) - 1)
            cards = hand[: max(0, n)]
            return (kind, GiveAction(cards)) if kind == "give" else (kind, DiscardAction(cards))
        if kind == "exchange":
            hand = g.hands[seat]
            return "exchange", ExchangeAction(sum(min(c >> 2, 12) for c in hand) / max(1, len(hand)) < 5.5)
        if kind == "rate":
            choices = sorted(info.get("choices") or [1])
            strong = sum(1 for c in g.hands[seat] if c >> 2 >= 10)
            return "rate", RateAction(choices[-1] if strong >= 4 else choices[0])
        raise ValueError(f"unknown decision kind {kind!r}")

    def _play(self, g: Any, seat: int, info: dict[str, Any]) -> tuple[str, Any]:  # noqa: C901 - the play rules in one place
        if info.get("stuck"):
            return _PASS
        ref = g.ref
        if g.ruleset == "million_doubt" and ref is not None and (ref.joker or ref.joker_pair):
            return _PASS
        plays = g.face_up_plays(seat)
        if not plays:
            return _PASS
        lead = not g.field
        hand = g.hands[seat]
        rev = g.reversed_order
        jdf = g.ruleset == "jdf"
        power = R3 if rev else R2
        foul_rank = R3 if g.revolution else R2
        spend = False
        if jdf:
            bad = sum(1 for c in hand if _foul_card(c, foul_rank))
            spend = bad > 0 and len(hand) - bad <= 2
        best = None
        best_key: tuple[int, ...] = ()
        for cards, declared in plays:
            if len(cards) == len(hand):
                if not jdf or not _jdf_foul(cards, foul_rank):
                    return "play", PlayAction(cards, [], declared)
            nat = [c >> 2 for c in cards if c != JOKER]
            if declared:
                nat += declared
            if nat:
                r = min(nat) if not rev else max(nat)
                value = 12 - r if rev else r
            else:
                value = 99
            is_power = JOKER in cards or any(c >> 2 == power for c in cards if c != JOKER)
            if spend and len(cards) < len(hand) and _jdf_foul(cards, foul_rank):
                key: tuple[int, ...] = (-1, value, 0)
            else:
                key = (is_power, value, -len(cards)) if lead else (is_power, value, len(cards))
            if best is None or key < best_key:
                best, best_key = (cards, declared), key
        assert best is not None
        if lead or best_key[0] == -1:
            return "play", PlayAction(best[0], [], best[1])
        small = (
            len(hand) <= 4
            or min((len(h) for s, h in enumerate(g.hands) if s != seat and g.still_in[s]), default=0) <= 2
        )
        if best_key[0] and not small:
            return _PASS
        if self.rng.random() < self.pass_rate and not small:
            return _PASS
        return "play", PlayAction(best[0], [], best[1])


_PASS = ("pass", PASS)


def _foul_card(c: int, foul_rank: int) -> bool:
    return c == JOKER or c >> 2 == foul_rank or c >> 2 == R8 or c == 0  # 0: 3S


def _jdf_foul(cards: list[int], foul_rank: int) -> bool:
    """JDF-10 (approximation): a joker, a 2 (3 in revolution), 8s, or a lone 3S."""
    nat = [c for c in cards if c != JOKER]
    if len(nat) != len(cards) or any(c >> 2 == foul_rank for c in nat):
        return True
    if len(cards) == 1 and cards[0] == 0:  # 3S
        return True
    return bool(nat) and all(c >> 2 == R8 for c in nat)


def _mean_se(d: list[float]) -> tuple[float, float]:
    k = len(d)
    mean = sum(d) / k
    var = sum((x - mean) ** 2 for x in d) / (k - 1)
    return mean, math.sqrt(var / k)


def _upper(d: list[float]) -> float:
    """Mean plus two standard errors of the paired differences ``d`` (two or more)."""
    mean, se = _mean_se(d)
    return mean + 2 * se


def _key(action: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A hashable identity of an action (card order and list types aside)."""
    return tuple(
        sorted((k, tuple(sorted(v)) if isinstance(v, list) else v) for k, v in action.items() if k != "comment")
    )


class SearchBot(HeuristicBot):
    """See the module docstring.

    Args:
        seed: seeds the sampling and the rollouts (reproducible apart from the clock).
        budget_ms: search time per decision, in milliseconds.
        bank_fraction: at most this share of the reported time bank per decision.
        max_rollouts: stop after this many rollouts (None: the clock alone decides).
        margin: standard errors by which a candidate must beat the heuristic's answer.
        clock: a seconds clock (default :func:`time.perf_counter`).

    ``stats`` counts, since the bot was made: ``decisions``, ``searched`` (decisions searched),
    ``rollouts``, ``fallbacks`` (decisions answered as ``heuristic``, by reason) and
    ``last_rollouts`` (rollouts of the last decision).
    """

    name = "search"

    def __init__(
        self,
        seed: int | None = None,
        budget_ms: float = 100.0,
        bank_fraction: float = 0.05,
        max_rollouts: int | None = None,
        margin: float = 1.0,
        clock: Callable[[], float] = time.perf_counter,
    ):
        super().__init__(seed=seed)
        self.search_rng = random.Random(seed)
        self.budget_ms = float(budget_ms)
        self.bank_fraction = float(bank_fraction)
        self.max_rollouts = max_rollouts
        self.margin = margin
        self.clock = clock
        self.rollout = Rollout(self.search_rng)
        self.stats: dict[str, Any] = {"decisions": 0, "searched": 0, "rollouts": 0, "fallbacks": {}, "last_rollouts": 0}

    # -- entry point -----------------------------------------------------------------------
    def decide(self, request: Any) -> dict[str, Any]:
        """Answer ``request`` (dict or :class:`Request`) within the budget (module docstring)."""
        start = self.clock()
        req = request if isinstance(request, Request) else Request(request)
        self.stats["decisions"] += 1
        self.stats["last_rollouts"] = 0
        fallback = super().decide(req)  # the heuristic's answer, always a candidate
        cands = self._candidates(req, fallback)
        if len(cands) <= 1:
            return fallback
        budget_s = min(self.budget_ms, self.bank_fraction * max(0, req.remaining_ms)) / 1000.0
        deadline = start + budget_s
        try:
            return self._search(req, cands, deadline)
        except Unsupported as e:
            reason = str(e).split(":")[0][:60]
            self.stats["fallbacks"][reason] = self.stats["fallbacks"].get(reason, 0) + 1
            return fallback

    # -- candidates ----------------------------------------------------------------------------
    def _candidates(self, req: Request, fallback: dict[str, Any]) -> list[dict[str, Any]]:
        """The answers searched: the heuristic's first, then the listed / built ones."""
        out = [fallback]
        seen = {_key(fallback)}

        def add(a: dict[str, Any]) -> None:
            k = _key(a)
            if k not in seen and len(out) < MAX_CANDIDATES:
                seen.add(k)
                out.append(a)

        kind = req.kind
        if kind in ("play", "doubt", "exchange", "rate"):
            listed = list(req.legal_actions or [])
            if kind == "play":
                plays = req.plays()
                passes = [a for a in listed if a.get("type") == "pass"]
                for a in passes:
                    add(a)
                for a in plays:
                    add(a)
                if req.ruleset == "million_doubt" and plays:
                    for v in face_down_variants(plays[0], req.hand, k=1):
                        add(v)
            else:
                for a in listed:
                    add(a)
        else:
            ch = req.choice
            pool = sorted(ch.get("from", []), key=lambda c: (rank(c), c))
            lo, hi = int(ch.get("min", 0)), int(ch.get("max", 0))
            if kind != "penalty":
                hi = min(hi, max(lo, len(pool) - 1))  # keep a card (TM-5 may refuse emptying the hand)
            if lo == hi and kind == "give":
                for i in range(min(len(pool), 5)):  # JDF-4: vary which weak cards go
                    rest = [c for j, c in enumerate(pool) if j != i]
                    add({"type": kind, "cards": rest[:lo]})
            for n in sorted({lo, hi, (lo + hi) // 2}):
                add({"type": kind, "cards": pool[:n]})
        return out

    # -- the search --------------------------------------------------------------------------
    def _search(self, req: Request, cands: list[dict[str, Any]], deadline: float) -> dict[str, Any]:
        rng = self.search_rng
        n = len(cands)
        diffs: list[list[float]] = [[] for _ in range(n)]
        active = list(range(n))
        rollouts = worlds = 0
        limit = self.max_rollouts
        seat = req.seat
        while True:
            if self.clock() >= deadline or (limit is not None and rollouts + len(active) > limit):
                break
            world = sample_world(req, rng)
            scores = {}
            for i in active:
                if self.clock() >= deadline:
                    break  # out of time within a world: its partial scores are dropped
                g = world.copy(log=False)
                try:
                    g.apply(seat, cands[i])
                except Exception as e:  # a candidate this world refuses: not a real answer
                    raise Unsupported(f"candidate refused: {e}") from None
                self.rollout.run(g)
                scores[i] = _score(g, seat)
            rollouts += len(scores)
            if len(scores) < len(active):
                break
            worlds += 1
            for i in active:
                diffs[i].append(scores[i] - scores[0])
            if worlds % PRUNE_EVERY == 0:  # drop the candidates clearly behind the heuristic's
                active = [i for i in active if i == 0 or _upper(diffs[i]) >= 0]
        self.stats["rollouts"] += rollouts
        self.stats["last_rollouts"] = rollouts
        if rollouts:
            self.stats["searched"] += 1
        return cands[self._pick(diffs)]

    def _pick(self, diffs: list[list[float]]) -> int:
        """The candidate ahead of the heuristic's (index 0) by more than ``margin`` standard
        errors of the paired differences, the best such; else 0."""
        best, best_mean = 0, 0.0
        for i in range(1, len(diffs)):
            if len(diffs[i]) < 2:
                continue
            mean, se = _mean_se(diffs[i])
            if mean > best_mean and mean > self.margin * se:
                best, best_mean = i, mean
        return best


__all__ = ["SearchBot", "Rollout"]
