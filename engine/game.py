"""The game state you push actions onto: the contract of every rule set and the shared trick
machinery.

:class:`Game` holds one **unit** of play: a Million Doubt game, a whole Trump Millionaire game
(a series of deals to the target score) or a whole JDF match (sets of games); a game built
from a scenario ``setup`` holds a single deal / game. :class:`Game` is an abstract base (as
python-chess declares its variant hooks on ``Board``): through its bases it has the shared
state (:mod:`engine.state`), the trick's rules (:mod:`engine.trick`: forms, comparison, locks,
turn flow and effects, C-3..C-10) and the action parsing (:mod:`engine.parsing`); it
dispatches actions to the handlers and declares, typed and documented, the
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
(:class:`Result`, :class:`DealResult`, :class:`GameResult`, :mod:`engine.results`) key seats
by strings (``"0"``..), as the wire does, before and after JSON. The names of
:mod:`engine.decisions`, :mod:`engine.field` and :mod:`engine.results` that the rule sets and
the arena use are importable from here too.
"""

from __future__ import annotations

import copy
import random
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Final

from engine.actions import ACTION_TYPE, PassAction, PlayAction, TypedAction, to_wire
from engine.decisions import ACTION_TYPES, ANSWERS, DECISIONS, Action, Decision, InvalidAction
from engine.field import PlayRecord
from engine.options import Options
from engine.parsing import PARSERS, ActionParsing
from engine.plays import Play
from engine.refusals import Refusal
from engine.results import DealResult, GameResult, Result, UnitResult, seat_keys
from engine.state import mypyc_attr
from engine.trick import TrickRules

#: ``(parser, handler)`` of one action type, as functions of the class (see ``HANDLERS``).
Dispatch = tuple[Callable[[Any, int, Action], TypedAction], Callable[[Any, int, Any], None]]


@mypyc_attr(allow_interpreted_subclasses=True)
class Game(ActionParsing):
    """The contract of every rule set; create one with :func:`engine.new_game` or
    :func:`engine.from_setup`.

    Public attributes (read-only by convention): those of :class:`engine.state.GameState`.

    A rule set implements the abstract hooks and names its action handlers in ``HANDLERS``.
    """

    #: The action handlers of the rule set: action type -> name of the handler method,
    #: ``handler(seat, typed action)``. :meth:`apply` parses the action (``PARSERS``) and
    #: calls the handler once the action answers the pending decision (ANSWERS); a handler
    #: validates fully before it changes anything. The names are looked up on each class
    #: when it is created, so a subclass that overrides a handler (or a parser) is dispatched
    #: to without listing it again; a name that is not a method raises ``TypeError`` then.
    HANDLERS: ClassVar[Mapping[str, str]] = {}
    #: Action type -> ``(parser, handler)`` of this class, built from ``HANDLERS``.
    _dispatch: ClassVar[dict[str, Dispatch]] = {}
    #: Whether :meth:`legal_actions` lists every legal action (False in Million Doubt: face-
    #: down plays are too many to list, MD-2).
    LISTS_EVERY_PLAY: ClassVar[bool] = True
    #: ``HANDLERS`` sends plays to ``_do_play`` and passes to ``_do_pass`` (:meth:`push`
    #: then calls them directly).
    _plain_handlers: ClassVar[bool] = False
    #: The class overrides ``_finish_refused`` (TM-5): the play generator must ask it.
    _refusing_class: ClassVar[bool] = True

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
        cls._refusing_class = cls._finish_refused is not TrickRules._finish_refused

    def __init__(self, options: Options, seed: int | None, setup: dict[str, Any] | None, log: bool = True):
        super().__init__(options, seed, setup, log)
        self._trusting = False  # push(): the play handler takes the play as generated
        self._plain = type(self)._plain_handlers
        self._refusing = type(self)._refusing_class

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
        if d is None or self.over or seat != d.seat or t not in ANSWERS[d.kind]:
            if not t:
                raise TypeError(f"push takes a typed action (engine.actions), not {type(action).__name__}: see apply")
            raise InvalidAction("C-12", Refusal.NOT_AN_ANSWER_TYPED, {"type": t, "seat": seat, "decision": str(d)})
        if isinstance(action, PlayAction):
            if action.face_down:
                self._check_face_down(seat, action)
                self._dispatch[t][1](self, seat, action)
                if self.logged:
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
        if self.logged:
            self._logged_push(seat, action)

    def _logged_push(self, seat: int, action: TypedAction) -> None:
        """Log an action :meth:`push` applied (as :func:`engine.actions.to_wire` gives it);
        the game keeps its log."""
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
        new._refusing = self._refusing
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
