"""The state of a unit of play: what it holds, how a deal/game and a trick start afresh, the
decision asked, the events, and what a seat may see of it (C-11).

:class:`GameState` is the base of :class:`engine.game.Game`: it declares every attribute the
engine shares (the rules that change them live in :mod:`engine.trick` and the rule sets).
"""

from __future__ import annotations

import copy
from abc import ABC
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from engine._build import TYPING
from engine.cards import format_cards, full_deck
from engine.decisions import Decision
from engine.draws import seeded
from engine.field import SUIT_LETTERS, PlayRecord, hand_sorted
from engine.forms import Readings
from engine.options import Options

if TYPING:  # mypyc reads the class flags from mypy_extensions; nothing imports it at run time
    from mypy_extensions import mypyc_attr as mypyc_attr
else:
    from engine._build import mypyc_attr as mypyc_attr

#: One event: (full event, seats that see it or None for all, what the others see or None).
Event = tuple[dict[str, Any], tuple[int, ...] | None, dict[str, Any] | None]

#: The play decisions of each seat, following and leading (shared: their ``info`` is read-only).
FOLLOW: Final[tuple[Decision, ...]] = tuple(Decision(s, "play", {}) for s in range(8))
LEAD: Final[tuple[Decision, ...]] = tuple(Decision(s, "play", {"lead": True}) for s in range(8))


@mypyc_attr(allow_interpreted_subclasses=True)
class GameState(ABC):  # noqa: B024 - the abstract hooks are Game's (engine.game); ABC is the base of the chain
    """The state shared by every rule set (:class:`engine.game.Game` is the contract).

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
    """

    #: The rule-set id (docs/rules.md).
    ruleset: ClassVar[str] = ""

    # -- construction -------------------------------------------------------------------
    def __init__(self, options: Options, seed: int | None, setup: dict[str, Any] | None, log: bool = True):
        self.options = options
        self.seats = options.seats
        self.seed = seed
        self.setup = copy.deepcopy(setup) if setup is not None else None
        self.single_unit = setup is not None
        self.rng = seeded(seed if seed is not None else 0)
        self.logged = log
        self.actions: list[dict[str, Any]] = []
        self.events: list[Event] = []
        self.unit_start = 0  # index in events where the current deal/game starts
        self.unit_count = 0
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
        self._decision = tuple.__new__(Decision, (seat, kind, info))  # no interpreted __new__

    def _ask_play(self, seat: int) -> None:
        """Ask ``seat`` to follow in the trick (a shared decision: ``info`` is read-only)."""
        self._decision = FOLLOW[seat]

    def _ask_lead(self, seat: int) -> None:
        """Ask ``seat`` to lead (C-6; a shared decision: ``info`` is read-only)."""
        self._decision = LEAD[seat]

    def _obs_extra(self, seat: int) -> dict[str, Any]:
        """Hook: rule-set keys of :meth:`observation` (C-11)."""
        return {}

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
