"""A person at a table, in Chromium (the table tests' helper): reads the decision its page is
asked, answers it through the page with the mouse or the keyboard only, and keeps what the
page received (``window.arenaTableFrames``, every frame of its seat, docs/tables.md).

The answer is :func:`tests.tables_play.choose`'s unless the test gives a policy; it is made as
a person makes it: clicking the hand's cards (and their face-down toggles), a legal play's
chip, the decision's buttons, or pressing the page's keys (``#keys-help``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.tables_play import choose

#: Milliseconds a step waits for the page (a guard against a hang, never a timing).
WAIT_MS = 90_000

#: Before any script of a page: each frame the table page keeps (``window.arenaTableFrames``,
#: an array it creates on each load) is handed to ``arenaKeepFrame`` as it is received.
_KEEP_SCRIPT = """(() => {
  let kept;
  Object.defineProperty(window, "arenaTableFrames", {
    configurable: true,
    get() { return kept; },
    set(frames) {
      kept = frames;
      const push = frames.push.bind(frames);
      frames.push = (...fs) => { fs.forEach((f) => window.arenaKeepFrame(JSON.stringify(f))); return push(...fs); };
    },
  });
})();"""


def keep_frames(context) -> list[dict[str, Any]]:
    """Every frame any table page of browser ``context`` receives from now on, over all its
    loads (a reload, a language switch, the end), in the order received: the list fills as the
    test drives the pages. Call it before the first page opens."""
    kept: list[dict[str, Any]] = []
    context.expose_function("arenaKeepFrame", lambda text: kept.append(json.loads(text)))
    context.add_init_script(_KEEP_SCRIPT)
    return kept


Policy = Callable[[dict[str, Any]], dict[str, Any] | None]


class Person:
    """A signed-in person's page at a table (``page``) and its table id."""

    def __init__(self, page, table_id: int, *, keyboard: bool = False, shots: Callable[[str], None] | None = None):
        self.page, self.table_id, self.keyboard, self.shots = page, table_id, keyboard, shots
        self.answered: list[tuple[str, dict[str, Any]]] = []  # (kind, action)
        self._archived: list[dict] = []  # frames of the page's earlier loads
        self._current: list[dict] = []  # frames of its current load
        self.refusals: list[dict] = []
        self._done_rids: set[str] = set()

    # -- reading the page -------------------------------------------------------------------
    def _request(self) -> dict[str, Any] | None:
        """The request the page is asked now (its latest request frame), or None."""
        return self.page.evaluate(
            """() => {
                const g = document.getElementById('game');
                if (!g || g.dataset.state !== 'asked') return null;
                const fs = window.arenaTableFrames || [];
                for (let i = fs.length - 1; i >= 0; i--) {
                    if (fs[i].type === 'request' && fs[i].rid === g.dataset.rid) return fs[i];
                }
                return null;
            }"""
        )

    def _over(self) -> bool:
        return self.page.locator("#result").count() > 0

    @property
    def frames(self) -> list[dict]:
        """Every frame the page received, over all its loads: those :func:`keep_frames` kept
        when its context keeps them (``page.kept_frames``), else those :meth:`collect` read."""
        kept = getattr(self.page, "kept_frames", None)
        return list(kept) if kept is not None else self._archived + self._current

    def collect(self) -> None:
        """Keep the frames the page received (a load starts a new list: the old one is kept)."""
        got = self.page.evaluate("() => (window.arenaTableFrames || []).slice()")
        if len(got) < len(self._current):  # the page loaded again (a language switch, the end)
            self._archived += self._current
        self._current = got

    def wait_turn(self) -> dict[str, Any] | None:
        """The next request the page is asked (its frame), or None once the table is over."""
        deadline = time.monotonic() + WAIT_MS / 1000
        while True:
            if self._over():
                return None
            try:
                f = self._request()
            except Exception:  # the page reloads (the end): look again
                f = None
            if f is not None and f["rid"] not in self._done_rids:
                self.collect()
                return f
            if time.monotonic() > deadline:
                pytest.fail("the page was never asked, nor did the table end")
            self.page.wait_for_timeout(30)

    # -- answering --------------------------------------------------------------------------
    def _press(self, key: str) -> None:
        self.page.keyboard.press(key)

    def _focus_card(self, code: str, selector: str) -> None:
        """Keyboard: move the focus with the arrows to the first card ``code`` not chosen yet."""
        for _ in range(60):
            el = self.page.evaluate(
                "(sel) => { const a = document.activeElement;"
                " return a && a.matches(sel) ? [a.dataset.card, a.getAttribute('aria-pressed')] : null; }",
                selector,
            )
            if el is not None and el[0] == code and el[1] != "true":
                return
            self._press("ArrowRight")
        pytest.fail(f"card {code} not reached with the arrows")

    def _pick_hand(self, cards: list[str], face_down: list[str]) -> None:
        down = list(face_down)
        for code in cards:
            if self.keyboard:
                self._focus_card(code, "#my-hand button.hc")
                if code in down:
                    down.remove(code)
                    self._press("f")  # selects it face down
                else:
                    self._press("Space")
            else:
                btn = self.page.locator(f"#my-hand button.hc[data-card='{code}'][aria-pressed='false']").first
                btn.click()
                if code in down:
                    down.remove(code)
                    self.page.locator(
                        f"#my-hand button.hc[data-card='{code}'][aria-pressed='true']:not([data-down]) .fd-toggle"
                    ).first.click()

    def _pick_field(self, cards: list[str]) -> None:
        for code in cards:
            if self.keyboard:
                self._focus_card(code, "#field button.pick")
                self._press("Space")
            else:
                self.page.locator(f"#field button.pick[data-card='{code}'][aria-pressed='false']").first.click()

    def _clear(self) -> None:
        """Unselect what a refused try left selected (the page keeps it, to be corrected)."""
        chosen = "#my-hand button.hc[aria-pressed='true'], #field button.pick[aria-pressed='true']"
        if self.page.locator(chosen).count() == 0:
            return
        if not self.keyboard and self.page.locator("#act-clear").count():
            self.page.click("#act-clear")
        else:
            self._press("Escape")

    def act(self, req: dict[str, Any], action: dict[str, Any]) -> None:
        """Make ``action`` through the page (module docstring)."""
        t, kb = action["type"], self.keyboard
        self._clear()
        if t == "play":
            self._pick_hand(list(action["cards"]), list(action.get("face_down") or []))
            self._press("p") if kb else self.page.click("#act-play")
            if action.get("jokers") and self.page.locator(".reading").count():
                # the selection reads several ways: the page asks which (C-4)
                want = " ".join(action["jokers"])
                if kb:
                    readings = self.page.locator(".reading").evaluate_all("bs => bs.map(b => b.dataset.jokers)")
                    self._press(str(readings.index(want) + 1))
                else:
                    self.page.locator(f".reading[data-jokers='{want}']").first.click()
        elif t == "pass":
            self._press("s") if kb else self.page.click("#act-pass")
        elif t in ("doubt", "through"):
            self._press(t[0]) if kb else self.page.click(f"#act-{t}")
        elif t == "exchange":
            self._press("y" if action["accept"] else "n") if kb else self.page.click(
                "#act-exchange-yes" if action["accept"] else "#act-exchange-no"
            )
        elif t == "rate":
            if kb:
                rates = [a["rate"] for a in req["legal_actions"] if a["type"] == "rate"]
                self._press(str(rates.index(action["rate"]) + 1))
            else:
                self.page.click(f"#act-rate-{action['rate']}")
        elif t in ("give", "discard", "penalty"):
            if t == "penalty":
                self._pick_field(list(action["cards"]))
            else:
                self._pick_hand(list(action["cards"]), [])
            self._press("g") if kb else self.page.click(f"#act-{t}")
        else:
            raise ValueError(t)

    def play(self, policy: Policy | None = None, *, on_turn: Callable[[dict], None] | None = None) -> None:
        """Answer every decision until the table is over (``policy``: an action or None for
        :func:`choose`'s; ``on_turn(request frame)`` first, screenshots)."""
        while True:
            f = self.wait_turn()
            if f is None:
                return
            req = f["request"]
            if on_turn is not None:
                on_turn(f)
                f = self.wait_turn()
                if f is None:
                    return
                req = f["request"]
            action = (policy(req) if policy is not None else None) or choose(req)
            self.act(req, action)
            self._wait_answered(f["rid"], req, action, policy)

    def _wait_answered(self, rid: str, req: dict[str, Any], action: dict[str, Any], policy: Policy | None) -> None:
        """Wait until the page's request ``rid`` is accepted, or refused (then answer with the
        policy's new answer, else :func:`choose`'s, which is legal)."""
        deadline = time.monotonic() + WAIT_MS / 1000
        while True:
            if self._over():
                return
            try:
                state = self.page.evaluate(
                    "() => { const g = document.getElementById('game'); const r = document.getElementById('refusal');"
                    " return g ? [g.dataset.state, g.dataset.rid, r && !r.hidden ? r.textContent : null,"
                    " r && r.querySelector('a.rule') ? r.querySelector('a.rule').dataset.rule : null] : null; }"
                )
            except Exception:  # the page reloads (the end, right after the last answer): look again
                state = None
            if state is None:
                self.page.wait_for_timeout(30)
                continue
            st, now, refusal, rule = state
            if st in ("waiting", "over") or (st == "asked" and now != rid):
                self.answered.append((req["decision"]["kind"], action))
                self._done_rids.add(rid)
                return
            if st == "asked" and refusal and rule:
                self.refusals.append({"action": action, "text": refusal, "rule": rule})
                if self.shots is not None:
                    self.shots("refused")
                again = (policy(req) if policy is not None else None) or choose(req)
                if again == action:
                    pytest.fail(f"a legal action was refused: {refusal}")
                action = again
                self.act(req, action)
            if time.monotonic() > deadline:
                pytest.fail(f"the answer {action} was neither accepted nor refused")
            self.page.wait_for_timeout(30)
