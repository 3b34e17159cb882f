"""The game state you push actions onto: the contract of every rule set and the shared trick
machinery.

:class:`Game` holds one **unit** of play: a Million Doubt game, a whole Trump Millionaire game
(a series of deals to the target score) or a whole JDF match (sets of games); a game built
from a scenario ``setup`` holds a single deal / game. :class:`Game` is an abstract base (as
python-chess declares its variant hooks on ``Board``): it implements the shared cards, forms,
comparison, locks, turn flow and effects (C-3..C-10) and declares, typed and documented, the
hooks a rule set implements (``_evaluate``, ``legal_actions``, ``result``, ``unit_result``,
``_forfeit``, the handler table ``HANDLERS``) or may override (``_set_leader``,
``_rank_restriction``, ``_finish_refused``, ``_extra_plays``, ``_obs_extra``, any handler).

The life of a state::

    g = new_game("million_doubt", seed=7)
    while not g.over:
        d = g.decision()                     # Decision(seat=1, kind="play", info={})
        action = next(g.legal_actions(d.seat))
        g.apply(d.seat, action)              # or raises InvalidAction, state unchanged
    g.result()                               # {"winner": 0, "scores": {"0": 5, "1": -5}, ...}
    replay(g.log())                          # same state, same result

Actions are the ACT dicts of docs/rules.md (``{"type": "play", "cards": ["5H"]}``...), on the wire
and in the log; :meth:`Game.apply` parses each once into a typed action
(:mod:`engine.actions`) that the handlers receive. Results
(:class:`Result`, :class:`DealResult`, :class:`GameResult`) key seats by strings (``"0"``..),
as the wire does, before and after JSON.
"""

from __future__ import annotations

import copy
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import (
    Any,
    ClassVar,
    Final,
    NamedTuple,
    NotRequired,
    TypedDict,
)

from engine._build import TYPING
from engine.actions import (
    ACTION_TYPE,
    DOUBT,
    PASS,
    THROUGH,
    DiscardAction,
    DoubtAction,
    GiveAction,
    PassAction,
    PenaltyAction,
    PlayAction,
    ThroughAction,
    TypedAction,
    to_wire,
)
from engine.cards import (
    CARD_CODES,
    JOKER,
    RANKS,
    CardError,
    format_card,
    format_cards,
    full_deck,
    parse_card,
    sort_key,
)
from engine.forms import Readings, readings, satisfies_lock
from engine.options import Options
from engine.plays import Play, face_up_plays
from engine.refusals import Params, Refusal
from engine.refusals import render as render_refusal

if TYPING:  # mypyc reads the class flags from mypy_extensions; nothing imports it at run time
    from mypy_extensions import mypyc_attr as mypyc_attr
else:
    from engine._build import mypyc_attr as mypyc_attr

SUIT_LETTERS: Final = "SHDC"
DECISIONS: Final = ("play", "doubt", "penalty", "exchange", "rate", "give", "discard")
ACTION_TYPES: Final = ("play", "pass", "doubt", "through", "penalty", "exchange", "rate", "give", "discard")
#: Which action types answer which decision (ACT).
ANSWERS: Final[dict[str, tuple[str, ...]]] = {
    "play": ("play", "pass"),
    "doubt": ("doubt", "through"),
    "penalty": ("penalty",),
    "exchange": ("exchange",),
    "rate": ("rate",),
    "give": ("give",),
    "discard": ("discard",),
}

#: An ACT action as on the wire and in the log (a JSON object).
Action = dict[str, Any]
#: The parser method of each action type (a method of :class:`Game` or of the rule set):
#: ``parser(game, seat, wire action) -> typed action`` (:mod:`engine.actions`); it raises
#: :class:`InvalidAction` naming the malformed field and changes nothing.
PARSERS: Final[dict[str, str]] = {
    "play": "_parse_play",
    "pass": "_parse_pass",
    "doubt": "_parse_doubt",
    "through": "_parse_through",
    "penalty": "_parse_penalty",
    "exchange": "_parse_exchange",
    "rate": "_parse_rate",
    "give": "_parse_give",
    "discard": "_parse_discard",
}
#: ``(parser, handler)`` of one action type, as functions of the class (see ``HANDLERS``).
Dispatch = tuple[Callable[[Any, int, Action], TypedAction], Callable[[Any, int, Any], None]]


class Result(TypedDict):
    """The result of a whole unit (:meth:`Game.result`); seats are string keys (``"0"``).

    Every rule set gives ``winner`` (MD: the winning seat; TM, JDF: the seat of place 1, the
    lowest on a tie), ``scores`` (MD-17 game score; TM: totals; JDF: match totals, or the
    game's points for a single game from a setup) and ``ranks`` (places 1.., equal totals
    share the place: TM-1, JDF-12/13, FAULT-2). Rule-set keys: MD ``burst`` and ``forfeit``
    (seat or None); TM ``totals``, ``deals`` (:class:`DealResult` list) and ``retired``;
    JDF ``totals`` and ``games`` (:class:`GameResult` list). Key order is fixed per rule set
    (the match logs store it).
    """

    winner: int | None
    scores: dict[str, int]
    ranks: dict[str, int]
    burst: NotRequired[int | None]
    forfeit: NotRequired[int | None]
    totals: NotRequired[dict[str, int]]
    deals: NotRequired[list[DealResult]]
    retired: NotRequired[list[int]]
    games: NotRequired[list[GameResult]]


class DealResult(TypedDict):
    """One Trump Millionaire deal (TM-7, TM-6 void deal): seats are string keys."""

    deal: int
    void: bool
    winner: int | None
    scores: dict[str, int]
    rate: int


class GameResult(TypedDict):
    """One JDF game (JDF-12, JDF-13): places, points (set bonus apart), who fouled, fell,
    retired; seats are string keys."""

    set: int
    game_in_set: int
    game: int
    ranks: dict[str, int]
    scores: dict[str, int]
    set_bonus: dict[str, int]
    fouls: list[int]
    fallen: int | None
    retired: list[int]


#: The result of the unit a scenario's ``over`` refers to (MD game, TM deal, JDF game).
UnitResult = Result | DealResult | GameResult


def seat_keys(values: Mapping[int, int] | Sequence[int]) -> dict[str, int]:
    """``{seat: v}`` or a per-seat list as the wire's string-keyed map ``{"0": v, ...}``."""
    if isinstance(values, Mapping):
        return {str(s): v for s, v in values.items()}
    return {str(s): v for s, v in enumerate(values)}


class InvalidAction(ValueError):
    """An action refused by the engine (C-12); the state is unchanged.

    Attributes:
        rule: the docs/rules.md id the action breaks (``"C-5"``, ``"MD-3"``, ``"ACT"`` for a
            malformed action).
        code: the refusal's :class:`engine.refusals.Refusal` code.
        params: its parameters (``str`` or ``int`` values: the template's fields).
        reason: the English explanation rendered from ``code`` and ``params``, without the
            rule id.

    ``str(e)`` is ``"<reason> [<rule>]"``. ``params`` may be given as a callable building
    them (called only when read: the legal-move search refuses often and reads none).
    """

    def __init__(self, rule: str, code: Refusal, params: Params | Callable[[], Params] | None = None):
        super().__init__(rule)
        self.rule = rule
        self.code = code
        self._params = params

    @property
    def params(self) -> dict[str, str | int]:
        """The parameters (built on first read when given as a callable)."""
        p = self._params
        if callable(p):
            p = self._params = p()
        return dict(p) if p is not None else {}

    @property
    def reason(self) -> str:
        """The English explanation: the code's template with :attr:`params`."""
        return render_refusal(self.code, self.params)

    def __str__(self) -> str:
        return f"{self.reason} [{self.rule}]"


class Decision(NamedTuple):
    """Who must act and what (ACT).

    Attributes:
        seat: the seat asked.
        kind: ``play``, ``doubt``, ``penalty``, ``exchange``, ``rate``, ``give`` or ``discard``.
        info: limits of the decision, JSON-ready: ``{"min": 1}`` (penalty after a caught last
            lie, MD-16), ``{"count": 2, "to": 3}`` (JDF give), ``{"max": 2, "to": 1}``
            (LR-5 give), ``{"max": 1}`` (LR-6 discard), ``{"choices": [1, 2, 3]}`` (rate),
            ``{"lead": True}`` (a play decision on an empty field), ``{"stuck": True}``
            (TM-6: the leader can only pass). Read-only: decisions may be shared.
    """

    seat: int
    kind: str
    info: dict[str, Any]


#: The play decisions of each seat, following and leading (shared: their ``info`` is read-only).
_FOLLOW: Final[tuple[Decision, ...]] = tuple(Decision(s, "play", {}) for s in range(8))
_LEAD: Final[tuple[Decision, ...]] = tuple(Decision(s, "play", {"lead": True}) for s in range(8))


class PlayRecord:
    """One play on the field: who made it and its cards (codes).

    ``face_down`` lists the face-down codes (``million_doubt``); ``revealed`` becomes True
    when a doubt turns the field face up (MD-8); ``declared`` the joker ranks (C-4).
    """

    __slots__ = ("seat", "cards", "face_down", "revealed", "declared")

    def __init__(self, seat: int, cards: list[int], face_down: list[int], declared: list[int] | None = None):
        self.seat = seat
        self.cards = cards
        self.face_down = face_down
        self.revealed = False
        self.declared = declared

    def copy(self) -> PlayRecord:
        """A copy (the card lists are shared: never changed in place)."""
        new = PlayRecord(self.seat, self.cards, self.face_down, self.declared)
        new.revealed = self.revealed
        return new

    def face_up(self) -> list[int]:
        """Face-up cards of the play (all of them once revealed)."""
        if not self.face_down or self.revealed:
            return self.cards
        rest = list(self.cards)
        for c in self.face_down:
            rest.remove(c)
        return rest

    def view(self, seat: int | None) -> dict[str, Any]:
        """JSON view of the play for ``seat`` (None: the full log view)."""
        d: dict[str, Any] = {"seat": self.seat}
        if self.face_down and not self.revealed and seat is not None and seat != self.seat:
            d["cards"] = format_cards(self.face_up())
            d["face_down"] = len(self.face_down)
        else:
            d["cards"] = format_cards(self.cards)
            if self.face_down:
                d["face_down"] = format_cards(self.face_down)
                if self.revealed:
                    d["revealed"] = True
        if self.declared:
            d["jokers"] = [RANKS[r] for r in self.declared]
        return d


def holds_all(hand: Sequence[int], cards: Sequence[int]) -> bool:
    """True if ``cards`` is a sub-multiset of ``hand`` (no change)."""
    if not cards:
        return True
    if len(cards) == 1:
        return cards[0] in hand
    if len(cards) > len(hand):
        return False
    rest = list(hand)
    for c in cards:
        if c in rest:
            rest.remove(c)
        else:
            return False
    return True


def remove_cards(hand: list[int], cards: Iterable[int]) -> None:
    """Remove ``cards`` from ``hand`` (one each; ValueError for a card not there)."""
    for c in cards:
        hand.remove(c)


#: One event: (full event, seats that see it or None for all, what the others see or None).
Event = tuple[dict[str, Any], tuple[int, ...] | None, dict[str, Any] | None]


@mypyc_attr(allow_interpreted_subclasses=True)
class Game(ABC):
    """The contract of every rule set; create one with :func:`engine.new_game` or
    :func:`engine.from_setup`.

    Public attributes (read-only by convention):
        ruleset (str), options (:class:`~engine.options.Options`), seats (int),
        hands (list of lists of card codes, per seat), over (bool: the whole unit ended),
        unit_over (bool: the current deal/game ended), still_in (list of bools: the seat is
        still in the current deal/game, C-7), field (:class:`PlayRecord` list of the trick),
        count (cards per play of the trick, MD-4/C-5; 0 on an empty field), revolution,
        jback (bool), direction (1 or -1), lock (tuple of suit indices, C-8), nlock (LR-3),
        last_player (seat or None), passed (list of bools, C-7), discards, outside (cards
        set aside, blind or undealt), actions and events (the log), logged (bool: the
        game keeps its log; False in a copy made with ``copy(log=False)``), unit_count
        (deals/games started, the first included).

    A rule set implements the abstract hooks and names its action handlers in ``HANDLERS``.
    """

    #: The rule-set id (docs/rules.md).
    ruleset: ClassVar[str] = ""
    #: The action handlers of the rule set: action type -> name of the handler method,
    #: ``handler(seat, typed action)``. :meth:`apply` parses the action (``PARSERS``) and
    #: calls the handler once the action answers the pending decision (ANSWERS); a handler
    #: validates fully before it changes anything. The names are looked up on each class
    #: when it is created, so a subclass that overrides a handler (or a parser) is dispatched
    #: to without listing it again; a name that is not a method raises ``TypeError`` then.
    HANDLERS: ClassVar[Mapping[str, str]] = {}
    #: Action type -> ``(parser, handler)`` of this class, built from ``HANDLERS``.
    _dispatch: ClassVar[dict[str, Dispatch]] = {}
    #: Whether a play may put cards face down (MD-2: only in Million Doubt).
    FACE_DOWN_PLAYS: ClassVar[bool] = False
    #: Whether :meth:`legal_actions` lists every legal action (False in Million Doubt: face-
    #: down plays are too many to list, MD-2).
    LISTS_EVERY_PLAY: ClassVar[bool] = True
    #: The rule ids of the count check and the comparison (C-5; MD-4 and MD-3 in Million Doubt).
    COUNT_RULE: ClassVar[str] = "C-5"
    #: ``HANDLERS`` sends plays to ``_do_play`` and passes to ``_do_pass`` (:meth:`push`
    #: then calls them directly).
    _plain_handlers: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Resolve ``HANDLERS`` and ``PARSERS`` on the new class (see ``HANDLERS``).

        Raises:
            TypeError: ``HANDLERS`` names an unknown action type, or a handler or parser
                that is not a method of the class.
        """
        super().__init_subclass__(**kwargs)
        dispatch: dict[str, Dispatch] = {}
        for kind, name in cls.HANDLERS.items():
            if kind not in PARSERS:
                raise TypeError(f"{cls.__name__}.HANDLERS: unknown action type {kind!r}")
            parser, handler = getattr(cls, PARSERS[kind], None), getattr(cls, name, None)
            if not callable(handler):
                raise TypeError(f"{cls.__name__}.HANDLERS[{kind!r}] = {name!r} is not a method of the class")
            if not callable(parser):
                raise TypeError(f"{cls.__name__} handles {kind!r} but has no parser {PARSERS[kind]!r}")
            dispatch[kind] = (parser, handler)
        cls._dispatch = dispatch
        cls._plain_handlers = cls.HANDLERS.get("play") == "_do_play" and cls.HANDLERS.get("pass") == "_do_pass"

    # -- construction -------------------------------------------------------------------
    def __init__(self, options: Options, seed: int | None, setup: dict[str, Any] | None, log: bool = True):
        self.options = options
        self.seats = options.seats
        self.seed = seed
        self.setup = copy.deepcopy(setup) if setup is not None else None
        self.single_unit = setup is not None
        self.rng = random.Random(seed if seed is not None else 0)
        self.logged = log
        self.actions: list[dict[str, Any]] = []
        self.events: list[Event] = []
        self.unit_start = 0  # index in events where the current deal/game starts
        self.unit_count = 0
        self._trusting = False  # push(): the play handler takes the play as generated
        self._plain = type(self)._plain_handlers
        self.over = False
        self.hands: list[list[int]] = [[] for _ in range(self.seats)]
        self.discards: list[int] = []
        self.outside: list[int] = []  # set aside, blind or undealt cards
        self.still_in = [True] * self.seats
        self.unit_over = False
        self.revolution = False
        self.direction = 1
        self._reset_trick_flags()
        self._decision: Decision | None = None

    def _setup_hands(self, setup: Mapping[str, Any], aside: Sequence[int] = ()) -> list[int]:
        """Take the hands of a scenario setup and its ``state`` flags (``revolution``,
        ``direction``: as if earlier tricks of the unit had set them); return the cards of
        the deck in no hand and not in ``aside`` (set aside / blind cards), in deck order."""
        self.hands = [list(setup["hands"][s]) for s in range(self.seats)]
        st = setup["state"]
        self.revolution = bool(st.get("revolution", False))
        self.direction = -1 if st.get("direction", 1) == -1 else 1
        rest = full_deck()
        for c in [c for h in self.hands for c in h] + list(aside):
            rest.remove(c)
        return rest

    def _reset_trick_flags(self) -> None:
        """Empty the field and reset what lasts one trick (C-7, C-8, LR-3, MD-12, LR-1)."""
        self.field: list[PlayRecord] = []
        self.count = 0
        self.ref: Readings | None = None
        self.prev_sig: tuple[int, ...] | None = None
        self.lock: tuple[int, ...] = ()
        self.nlock = False
        self.last_rank: int | None = None
        self.last_player: int | None = None
        self.passed = [False] * self.seats
        self.jback = False

    def _reset_deal_flags(self) -> None:
        """A new deal/game: the trick flags, and the revolution and direction (C-10, TM-4)."""
        self._reset_trick_flags()
        self.revolution = False
        self.direction = 1

    # -- events -------------------------------------------------------------------------
    def _event(
        self, ev: dict[str, Any], visible: tuple[int, ...] | None = None, public: dict[str, Any] | None = None
    ) -> None:
        """Record an event; ``visible`` limits it to some seats, others see ``public``."""
        if self.logged:
            self.events.append((ev, visible, public))

    def _hand_events(self) -> None:
        """Each seat sees its own new hand (C-11)."""
        if not self.logged:
            return
        for s in range(self.seats):
            self._event({"type": "hand", "seat": s, "cards": format_cards(self.hands[s])}, (s,))

    def _end_event(self, public: dict[str, Any]) -> None:
        """The end of a deal/game: ``public`` for the seats, plus the hands left for the
        post-game log only (C-11: with the cards played they would tell hidden cards)."""
        if not self.logged:
            return
        full = {**public, "hands": {str(s): format_cards(self.hands[s]) for s in range(self.seats)}}
        self._event(full, (), public)

    # -- shared effects of an accepted play (C-8, C-10, MD-12, LR-1) ----------------------
    def _toggle_revolution(self) -> None:
        """C-10: the revolution flag toggles (a second revolution restores the order)."""
        self.revolution = not self.revolution
        self._event({"type": "revolution", "on": self.revolution})

    def _toggle_jback(self) -> None:
        """MD-12 / LR-1: the J-back flag toggles until the trick clears."""
        self.jback = not self.jback
        self._event({"type": "jback", "on": self.jback})

    def _suit_lock(self, sig: tuple[int, ...], may_start: bool = True) -> None:
        """C-8: a play whose non-empty suit signature ``sig`` equals the previous play's
        starts the lock (unless ``may_start`` is False: a joker in ``jdf`` and
        ``trump_millionaire``); once started it keeps its suits until the trick clears."""
        if not self.lock and sig and sig == self.prev_sig and may_start:
            self.lock = sig
            self._event({"type": "lock", "suits": [SUIT_LETTERS[s] for s in sig]})
        self.prev_sig = sig

    # -- shared judging of a play (C-3, C-4, C-5, C-8) ------------------------------------
    def _read_play(
        self, cards: Sequence[int], nat: Sequence[int], jokers: int, wild: int, declared: list[int] | None
    ) -> Readings:
        """Every reading of a play (C-3; jokers at their ``declared`` ranks, C-4) of the
        trick's count (C-5 / MD-4), not yet compared with the field.

        Raises:
            InvalidAction: wrong count (``COUNT_RULE``), no legal form (C-3) or none with the
                declared joker ranks (C-4).
        """
        n = len(cards)
        if self.count and n != self.count:
            raise InvalidAction(self.COUNT_RULE, Refusal.TRICK_COUNT, {"count": self.count, "n": n})
        r = readings(nat, jokers, wild, declared)
        if r.empty():
            rule = "C-4" if declared else "C-3"
            code = Refusal.NO_FORM_DECLARED if declared else Refusal.NO_FORM
            raise InvalidAction(rule, code, lambda: {"cards": cards_text(cards)})
        return r

    def _check_lock(self, nat: Sequence[int], wild: int) -> None:
        """C-8: raise :class:`InvalidAction` when the suit lock is not matched by the play's
        natural cards and ``wild`` wild cards."""
        if self.lock and not satisfies_lock(self.lock, nat, wild):
            locked = "".join(SUIT_LETTERS[s] for s in self.lock)
            raise InvalidAction("C-8", Refusal.SUIT_LOCK, {"suits": locked})

    # -- basic queries ------------------------------------------------------------------
    @property
    def reversed_order(self) -> bool:
        """Effective order reversed (C-9): revolution XOR J-back."""
        return self.revolution != self.jback

    def decision(self) -> Decision | None:
        """The pending decision (seat and kind), or None when the unit is over."""
        return None if self.over else self._decision

    @property
    def unit_index(self) -> int:
        """Index of the current deal (TM) / game of the match (JDF); 0 in Million Doubt.

        Time banks are per game, per deal in Trump Millionaire (TIME-1): reset them when
        this changes.
        """
        return 0

    def field_size(self) -> int:
        """Number of cards on the field (0 when the trick has cleared)."""
        return sum(len(p.cards) for p in self.field)

    def _ask(self, seat: int, kind: str, **info: Any) -> None:
        self._decision = Decision(seat, kind, info)

    def _ask_play(self, seat: int) -> None:
        """Ask ``seat`` to follow in the trick (a shared decision: ``info`` is read-only)."""
        self._decision = _FOLLOW[seat]

    def _ask_lead(self, seat: int) -> None:
        """Ask ``seat`` to lead (C-6; a shared decision: ``info`` is read-only)."""
        self._decision = _LEAD[seat]

    # -- rotation -----------------------------------------------------------------------
    def _step(self, seat: int) -> int:
        return (seat + self.direction) % self.seats

    def _next_still_in(self, seat: int) -> int | None:
        """First other seat still in after ``seat`` in the current direction (C-7, LR-5), or
        None when no other seat is still in."""
        s = seat
        for _ in range(self.seats - 1):
            s = self._step(s)
            if self.still_in[s]:
                return s
        return None

    def _turn_after(self, seat: int) -> int | None:
        """Next seat to play after ``seat`` in this trick, or None if the trick clears.

        The turn goes in the current direction over seats still in that have not passed
        (C-7). Reaching the seat that made the last play while it is still in means every
        other seat has passed or lost its turn to a five-skip: the trick clears. When that
        seat is no longer still in, a seat passed over by a five-skip has not passed (LR-4,
        C-7): the turn goes on to it, and the trick clears only when every seat still in has
        passed.
        """
        s = seat
        last = self.last_player
        for _ in range(self.seats):
            s = self._step(s)
            if s == last and self.still_in[s]:
                return None
            if self.still_in[s] and not self.passed[s]:
                return s
        return None

    def _clear(self, leader_hint: int | None) -> None:
        """Clear the trick (C-7): discard the field, reset trick flags, set the leader.

        ``leader_hint`` is the seat that made the last play; if it is no longer in, the first
        seat still in after it leads.
        """
        for p in self.field:
            self.discards.extend(p.cards)
        if self.logged:
            self._event({"type": "clear"})
        self._reset_trick_flags()
        if leader_hint is None:
            return
        leader = leader_hint if self.still_in[leader_hint] else self._next_still_in(leader_hint)
        if leader is not None:
            self._set_leader(leader)

    def _set_leader(self, seat: int) -> None:
        """Hook: ask ``seat`` to lead (C-6); TM-6 and JDF-5 refine who actually leads."""
        self._ask_lead(seat)

    # -- action parsing (ACT): the wire dict -> a typed action --------------------------
    def _cards_field(self, action: Action, key: str = "cards", required: bool = True) -> list[int]:
        """The card codes of ``action[key]``; raises :class:`InvalidAction` (ACT, C-1)."""
        raw = action.get(key)
        if raw is None:
            if required:
                raise InvalidAction("ACT", Refusal.MISSING_FIELD, {"field": key})
            return []
        if type(raw) is not list:
            raise InvalidAction("ACT", Refusal.NOT_CARD_LIST, {"field": key})
        try:
            return [CARD_CODES[c] for c in raw]
        except (KeyError, TypeError):
            for c in raw:
                try:
                    parse_card(c)
                except CardError:
                    raise InvalidAction("C-1", Refusal.UNKNOWN_CARD, {"field": key, "card": repr(c)[:16]}) from None
            raise  # pragma: no cover

    def _declared(self, action: Action, jokers: int) -> list[int] | None:
        """The ``jokers`` field (C-4) as rank indices, or None when absent."""
        raw = action.get("jokers")
        if raw is None:
            return None
        if type(raw) is not list or not all(type(r) is str and len(r) == 1 and r in RANKS for r in raw):
            raise InvalidAction("C-4", Refusal.JOKER_RANKS, {"ranks": RANKS})
        if len(raw) != jokers:
            raise InvalidAction("C-4", Refusal.JOKER_COUNT, {"n": len(raw), "jokers": jokers})
        return [RANKS.index(r) for r in raw]

    def _parse_play(self, seat: int, action: Action) -> PlayAction:
        """The play of ``seat``: its cards (ACT, C-1), face-down cards (MD-2: a sub-multiset
        of the cards where ``FACE_DOWN_PLAYS``, refused elsewhere), held by the seat (C-3,
        C-12), then the ranks declared for its face-up jokers (C-4). Not judged yet."""
        cards = self._cards_field(action)
        if self.FACE_DOWN_PLAYS:
            face_down = self._cards_field(action, "face_down", required=False)
            if face_down and not holds_all(cards, face_down):
                raise InvalidAction("MD-2", Refusal.FACE_DOWN_NOT_IN_CARDS)
        elif action.get("face_down"):
            raise InvalidAction("MD-2", Refusal.FACE_DOWN_RULESET, {"ruleset": self.ruleset})
        else:
            face_down = []
        self._hand_check(seat, cards)
        up_jokers = cards.count(JOKER) - face_down.count(JOKER) if face_down else cards.count(JOKER)
        return PlayAction(cards, face_down, self._declared(action, up_jokers))

    def _check_face_down(self, seat: int, play: PlayAction) -> None:
        """What :meth:`_parse_play` checks of a typed play with face-down cards (MD-2, C-12,
        C-4), for :meth:`push`."""
        if not self.FACE_DOWN_PLAYS:
            raise InvalidAction("MD-2", Refusal.FACE_DOWN_RULESET, {"ruleset": self.ruleset})
        if not holds_all(play.cards, play.face_down):
            raise InvalidAction("MD-2", Refusal.FACE_DOWN_NOT_IN_CARDS)
        self._hand_check(seat, play.cards)
        up_jokers = play.cards.count(JOKER) - play.face_down.count(JOKER)
        if play.jokers is not None and len(play.jokers) != up_jokers:
            raise InvalidAction("C-4", Refusal.JOKER_COUNT, {"n": len(play.jokers), "jokers": up_jokers})

    def _parse_pass(self, seat: int, action: Action) -> PassAction:
        return PASS

    def _parse_doubt(self, seat: int, action: Action) -> DoubtAction:
        return DOUBT

    def _parse_through(self, seat: int, action: Action) -> ThroughAction:
        return THROUGH

    def _parse_penalty(self, seat: int, action: Action) -> PenaltyAction:
        return PenaltyAction(self._cards_field(action))

    def _parse_give(self, seat: int, action: Action) -> GiveAction:
        return GiveAction(self._cards_field(action))

    def _parse_discard(self, seat: int, action: Action) -> DiscardAction:
        return DiscardAction(self._cards_field(action))

    def _check_common(self, seat: Any, action: Any) -> str:
        if self.over:
            raise InvalidAction("C-12", Refusal.GAME_OVER)
        if type(seat) is not int or not 0 <= seat < self.seats:
            raise InvalidAction("C-12", Refusal.NO_SEAT, {"seat": repr(seat)[:16], "ruleset": self.ruleset})
        if type(action) is not dict:
            raise InvalidAction("ACT", Refusal.NOT_AN_OBJECT)
        t = action.get("type")
        d = self._decision
        if d is not None and seat == d.seat and t in ANSWERS[d.kind]:
            return t  # type: ignore[no-any-return]  # the common case, checked in one go
        if t is None:
            raise InvalidAction("ACT", Refusal.MISSING_FIELD, {"field": "type"})
        if t not in ACTION_TYPES:
            raise InvalidAction("ACT", Refusal.UNKNOWN_TYPE, {"type": repr(t)[:40]})
        if d is None:
            raise InvalidAction("C-12", Refusal.NO_DECISION)
        if seat != d.seat:
            raise InvalidAction("C-12", Refusal.NOT_ASKED, {"seat": seat, "asked": d.seat, "kind": d.kind})
        raise InvalidAction(
            "C-12", Refusal.NOT_AN_ANSWER, {"type": str(t), "kind": d.kind, "expected": " or ".join(ANSWERS[d.kind])}
        )

    # -- public API ---------------------------------------------------------------------
    def apply(self, seat: Any, action: Any) -> None:
        """Apply an ACT-shaped ``action`` (a dict) of ``seat`` (an int): parsed into a typed
        action (:mod:`engine.actions`), handled by the class's handler of its type
        (``HANDLERS``), logged as given (its known keys).

        Anything may be passed: a seat that is not an int seat of the game and an action that
        is not a well-formed ACT dict are refused like any illegal action, with the same rule
        id in the pure and the compiled build.

        Raises:
            InvalidAction: malformed, not asked, cards not held, or against a rule; its
                ``rule`` names the RULES id. The state is unchanged after a refusal.
        """
        t = self._check_common(seat, action)
        parse, handle = self._dispatch[t]
        handle(self, seat, parse(self, seat, action))  # handlers validate fully before mutating
        if self.logged:
            self.actions.append({"seat": seat, "action": _normal_action(action)})

    def push(self, seat: int, action: TypedAction) -> None:
        """Apply a typed action (:mod:`engine.actions`) that the engine itself generated for
        the pending decision of ``seat``: a play of :meth:`face_up_plays` (or of
        :meth:`legal_actions`, parsed), ``PASS``, ``DOUBT``... The trusted fast path of
        rollouts and self-play (as python-chess's ``Board.push``): no parsing, and a face-up
        play is not judged again (its reading is taken as the generator made it); the other
        handlers validate as in :meth:`apply`. Logged as :func:`engine.actions.to_wire`
        gives it.

        A face-up play that no generator of this state produced corrupts the state: push
        only what the engine listed now; anything from outside goes through :meth:`apply`.
        A play with face-down cards (MD-2) is not the generators': it is checked and judged
        in full (its cards must be the seat's, as in :meth:`apply`).

        Raises:
            InvalidAction: ``seat`` is not asked, or the action's type does not answer the
                decision (C-12); a handler's refusal (a pass by a leader, a give too large,
                a face-down play that no identity makes legal...). The state is unchanged.
            TypeError: ``action`` is not a typed action (a wire dict goes to :meth:`apply`).
        """
        d = self._decision
        t = ACTION_TYPE.get(type(action), "")
        if not t:
            raise TypeError(f"push takes a typed action (engine.actions), not {type(action).__name__}: see apply")
        if d is None or self.over or seat != d.seat or t not in ANSWERS[d.kind]:
            raise InvalidAction("C-12", Refusal.NOT_AN_ANSWER_TYPED, {"type": t, "seat": seat, "decision": str(d)})
        if isinstance(action, PlayAction):
            if action.face_down:
                self._check_face_down(seat, action)
                self._dispatch[t][1](self, seat, action)
                self._logged_push(seat, action)
                return
            self._trusting = True
            try:
                if self._plain:
                    self._do_play(seat, action)
                else:
                    self._dispatch[t][1](self, seat, action)
            finally:
                self._trusting = False
        elif self._plain and isinstance(action, PassAction):
            self._do_pass(seat, action)
        else:
            self._dispatch[t][1](self, seat, action)
        self._logged_push(seat, action)

    def _logged_push(self, seat: int, action: TypedAction) -> None:
        """Log an action :meth:`push` applied (as :func:`engine.actions.to_wire` gives it)."""
        if self.logged:
            self.actions.append({"seat": seat, "action": to_wire(action)})

    def check(self, seat: Any, action: Any) -> None:
        """Validate ``action`` without applying it; raises :class:`InvalidAction` (as
        :meth:`apply` would, rule id included).

        Plays are judged in place (nothing changes); other actions are tried on a copy.
        """
        t = self._check_common(seat, action)
        if t == "play":
            self._evaluate(seat, self._parse_play(seat, action))
        else:
            self.copy(log=False).apply(seat, action)

    def is_legal(self, seat: Any, action: Any) -> bool:
        """True if ``action`` would be accepted now (see :meth:`check`)."""
        try:
            self.check(seat, action)
        except InvalidAction:
            return False
        return True

    def copy(self, log: bool = True) -> Game:
        """An independent copy of the state: the same decisions, legal actions and results
        follow from the same actions, in the copy as in the original (RNG included).

        ``log=False`` makes a copy that keeps no log from here on (no events, no actions:
        :meth:`history`, :meth:`observation` and :meth:`log` raise ``RuntimeError``), for
        rollouts; it is faster to make and to play on.

        The engine's own operation (each class copies the attributes it declares,
        :meth:`_copy_to`); attributes a Python subclass adds are deep-copied. Lists the
        engine only ever replaces, never changes in place (cards out of the unit, set aside,
        blind), and immutable values (options, readings, decisions) are shared.
        """
        cls = type(self)
        new = cls.__new__(cls)
        self._copy_to(new, log)
        extra = getattr(self, "__dict__", None)
        if extra:  # a Python subclass's own attributes (all of them in the pure build)
            for k, v in extra.items():
                if not hasattr(new, k):
                    setattr(new, k, copy.deepcopy(v))
        return new

    def _copy_to(self, new: Game, log: bool) -> None:
        """Copy the attributes :class:`Game` declares into ``new`` (a blank instance of this
        class); a rule set extends it with its own (calling this first)."""
        new.options = self.options
        new.seats = self.seats
        new.seed = self.seed
        new.setup = self.setup  # never changed after __init__
        new.single_unit = self.single_unit
        if self.single_unit:
            new.rng = self.rng  # a unit from a setup draws nothing after it starts
        else:
            rng = random.Random.__new__(random.Random)  # unseeded: its state is set at once
            rng.setstate(self.rng.getstate())
            new.rng = rng
        new.logged = log and self.logged
        new.actions = list(self.actions) if new.logged else []
        new.events = list(self.events) if new.logged else []
        new.unit_start = self.unit_start if new.logged else 0
        new.unit_count = self.unit_count
        new._trusting = False
        new._plain = self._plain
        new.over = self.over
        new.hands = [list(h) for h in self.hands]
        new.discards = list(self.discards)
        new.outside = self.outside
        new.still_in = list(self.still_in)
        new.unit_over = self.unit_over
        new.revolution = self.revolution
        new.direction = self.direction
        new.field = [p.copy() for p in self.field]
        new.count = self.count
        new.ref = self.ref
        new.prev_sig = self.prev_sig
        new.lock = self.lock
        new.nlock = self.nlock
        new.last_rank = self.last_rank
        new.last_player = self.last_player
        new.passed = list(self.passed)
        new.jback = self.jback
        new._decision = self._decision

    def forfeit(self, seat: int, reason: str) -> None:
        """Apply FAULT-2 to ``seat`` (the runner calls this after a fault, FAULT-1).

        ``reason`` is recorded (``timeout``, ``invalid_action``...). The consequence is the
        rule set's (:meth:`_forfeit`); it is recorded in the log and replays. A forfeit of a
        seat that is already out of the current deal/game (retired, finished, fallen) is a
        no-op and is not logged.
        """
        if self.over or not self._forfeit(seat, reason):
            return
        if self.logged:
            self.actions.append({"seat": seat, "forfeit": reason})

    # -- the hooks a rule set implements ------------------------------------------------------
    @abstractmethod
    def _do_play(self, seat: int, action: PlayAction) -> None:
        """The play handler: judge ``action`` (unless :meth:`push` trusts it) and apply it."""

    @abstractmethod
    def _do_pass(self, seat: int, action: PassAction) -> None:
        """The pass handler (C-6, C-7; MD-9, TM-6)."""

    @abstractmethod
    def _evaluate(self, seat: int, play: PlayAction) -> object:
        """Judge the parsed ``play`` of ``seat`` (C-3..C-8 and the rule set's rules) without
        changing anything; return what the play handler needs to apply it.

        Raises:
            InvalidAction: the play is refused (C-12).
        """

    @abstractmethod
    def legal_actions(self, seat: int) -> Iterator[Action]:
        """Every legal action of ``seat`` now (none when it is not asked); see
        ``LISTS_EVERY_PLAY`` for what may be left out."""

    @abstractmethod
    def result(self) -> Result | None:
        """The :class:`Result` of the whole unit once :attr:`over`, else None."""

    @abstractmethod
    def unit_result(self) -> UnitResult | None:
        """The result of the last deal/game that ended (the unit of a scenario's ``over``):
        MD :class:`Result`, TM :class:`DealResult`, JDF :class:`GameResult`; None before."""

    @abstractmethod
    def _forfeit(self, seat: int, reason: str) -> bool:
        """Apply FAULT-2 to ``seat``; return False if it changed nothing (already out)."""

    # -- hooks with a default -------------------------------------------------------------------
    def _rank_restriction(self) -> int | None:
        """Hook: a mask of ranks singles/groups must have (LR-3 number lock), or None."""
        return None

    def _finish_refused(self, nat: Sequence[int], jokers: int) -> bool:
        """Hook: True if a play of these cards may not empty the hand (TM-5)."""
        return False

    def _extra_plays(self, seat: int) -> list[Play]:
        """Hook: plays legal outside the normal comparison (JDF-9 spade-3 return)."""
        return []

    def _obs_extra(self, seat: int) -> dict[str, Any]:
        """Hook: rule-set keys of :meth:`observation` (C-11)."""
        return {}

    # -- play validation shared by every rule set -----------------------------------------
    def _hand_check(self, seat: int, cards: list[int]) -> None:
        if not cards:
            raise InvalidAction("C-3", Refusal.EMPTY_PLAY)
        if not holds_all(self.hands[seat], cards):
            raise InvalidAction("C-12", Refusal.NOT_HELD, {"seat": seat, "cards": " ".join(format_cards(cards))})

    # -- legal face-up plays -----------------------------------------------------------------
    def face_up_plays(self, seat: int) -> list[Play]:
        """Every legal face-up play of ``seat`` now, as ``(card codes, declared ranks)``.

        Generated by form (C-3) from the hand, keeping only ranks that beat the reference
        (C-5, MD-5 masks), then the suit lock (C-8), number lock (LR-3) and forbidden finish
        (TM-5), then the rule set's extra plays (JDF-9); see :func:`engine.plays.face_up_plays`
        for the order. Used by :meth:`legal_actions`.
        """
        plays = face_up_plays(
            self.hands[seat],
            self.count,
            self.lock,
            self.ref,
            self.reversed_order,
            self._rank_restriction(),
            self._finish_refused,
        )
        extra = self._extra_plays(seat)
        if extra:
            plays.extend(extra)
        return plays

    def legal_plays(self, seat: int) -> tuple[list[Play], bool]:
        """The play decision's answers that :meth:`legal_actions` lists, typed: ``(face-up
        plays as :meth:`face_up_plays` gives them, whether a pass is legal)``; ``([], False)``
        when ``seat`` has no play decision. C-6: a leader may not pass; TM-6: a stuck leader
        only passes; MD-5: nothing beats a face-up joker (a pass only)."""
        d = self.decision()
        if d is None or d.seat != seat or d.kind != "play":
            return [], False
        if d.info.get("stuck"):
            return [], True
        return self.face_up_plays(seat), bool(self.field)

    def _play_answers(self, seat: int) -> Iterator[Action]:
        """A play decision's answers as :meth:`legal_actions` lists them: :meth:`legal_plays`
        as ACT dicts (``jokers`` when jokers stand in, C-4), then the pass when legal."""
        plays, may_pass = self.legal_plays(seat)
        for cards, declared in plays:
            action: Action = {"type": "play", "cards": format_cards(cards)}
            if declared:
                action["jokers"] = [RANKS[r] for r in declared]
            yield action
        if may_pass:
            yield {"type": "pass"}

    def is_legal_play(self, seat: int, play: PlayAction) -> bool:
        """Whether the typed ``play`` (cards held by ``seat``; some face down in Million
        Doubt) would be accepted now: :meth:`is_legal` without the wire (C-3..C-8, MD-2..MD-5,
        the rule set's rules)."""
        d = self.decision()
        if d is None or d.seat != seat or d.kind != "play":
            return False
        try:
            if play.face_down:
                self._check_face_down(seat, play)
            else:
                self._hand_check(seat, play.cards)
            self._evaluate(seat, play)
        except InvalidAction:
            return False
        return True

    # -- observation (C-11) ----------------------------------------------------------------
    def observation(self, seat: int) -> dict[str, Any]:
        """Everything ``seat`` may see now (C-11), JSON-ready.

        Keys: ``ruleset``, ``seat``, ``seats``, ``hand`` (own cards, sorted), ``hand_sizes``
        (per seat), ``to_act`` and ``decision`` (kind) with ``decision_info``, ``field`` (plays
        of the trick: ``{"seat", "cards"}``; another seat's face-down cards appear only as a
        count ``"face_down": n`` until revealed, MD-8), ``field_size``, ``trick_count``,
        ``last_player``, ``revolution``, ``jback``, ``suit_lock`` (suit letters), ``number_lock``,
        ``direction``, ``passed``, ``still_in``, ``history`` (events of the current deal/game
        this seat may see: public events, its own private ones), plus rule-set keys.
        Never another seat's hand, an unrevealed face-down card, set-aside/blind cards or the
        seed.
        """
        d = self.decision()
        obs = {
            "ruleset": self.ruleset,
            "seat": seat,
            "seats": self.seats,
            "hand": hand_sorted(self.hands[seat]),
            "hand_sizes": [len(h) for h in self.hands],
            "to_act": d.seat if d else None,
            "decision": d.kind if d else None,
            "decision_info": dict(d.info) if d and d.seat == seat else {},
            "field": [p.view(seat) for p in self.field],
            "field_size": self.field_size(),
            "trick_count": self.count,
            "last_player": self.last_player,
            "revolution": self.revolution,
            "jback": self.jback,
            "suit_lock": sorted(SUIT_LETTERS[s] for s in self.lock),
            "number_lock": self.nlock,
            "direction": self.direction,
            "passed": [s for s in range(self.seats) if self.passed[s]],
            "still_in": list(self.still_in),
            "over": self.over,
            "history": self.history(seat),
        }
        obs.update(self._obs_extra(seat))
        return obs

    def history(self, seat: int | None, start: int | None = None) -> list[dict[str, Any]]:
        """Events since ``start`` (default: the current deal/game) as ``seat`` sees them.

        ``seat`` None gives the full (log) view, hidden information included.

        Raises:
            RuntimeError: the game keeps no log (a copy made with ``copy(log=False)``).
        """
        if not self.logged:
            raise RuntimeError("this game keeps no log (a copy made with copy(log=False)): no history")
        out = []
        for ev, visible, public in self.events[self.unit_start if start is None else start :]:
            if seat is None or visible is None or seat in visible:
                out.append(ev)
            elif public is not None:
                out.append(public)
        return out

    # -- log and replay -------------------------------------------------------------------
    def log(self) -> dict[str, Any]:
        """The complete, JSON-ready log: enough to replay the game to the same state.

        Shape: ``{"format": "daifugo-arena-engine", "version": 1, "ruleset", "options",
        "seed", "setup", "actions": [{"seat", "action"} | {"seat", "forfeit"}], "events",
        "result"}``. ``events`` is the full view (hidden information included: it is the
        post-game record, MD-8).

        Raises:
            RuntimeError: the game keeps no log (a copy made with ``copy(log=False)``).
        """
        if not self.logged:
            raise RuntimeError("this game keeps no log (a copy made with copy(log=False))")
        return {
            "format": "daifugo-arena-engine",
            "version": 1,
            "ruleset": self.ruleset,
            "options": self.options.to_dict(),
            "seed": self.seed,
            "setup": copy.deepcopy(self.setup["raw"]) if self.setup else None,
            "actions": copy.deepcopy(self.actions),
            "events": self.history(None, 0),
            "result": self.result(),
        }


def _normal_action(action: Action) -> Action:
    """A JSON-clean copy of an accepted action for the log (known keys only)."""
    if len(action) == 2 and type(action.get("cards")) is list:
        return {"type": action["type"], "cards": list(action["cards"])}
    out = {"type": action["type"]}
    for k in _LOGGED_KEYS:
        if k in action:
            v = action[k]
            if v is not None:
                out[k] = list(v) if type(v) is list else v
    return out


_LOGGED_KEYS: Final = ("cards", "face_down", "jokers", "accept", "rate")


def cards_text(codes: Iterable[int]) -> str:
    """Cards as a space-separated wire string, for messages."""
    return " ".join(format_card(c) for c in codes)


def hand_sorted(codes: Iterable[int]) -> list[str]:
    """Wire strings of a hand, sorted by rank then suit, jokers last."""
    return format_cards(sorted(codes, key=sort_key))


__all__ = [
    "Game",
    "Decision",
    "InvalidAction",
    "PlayRecord",
    "DECISIONS",
    "ACTION_TYPES",
    "ANSWERS",
    "Action",
    "Play",
    "Result",
    "DealResult",
    "GameResult",
    "UnitResult",
    "seat_keys",
]
