"""The runner's shape (issue 25): any object with the Player protocol plays a seat, each
request's slot figures come back with its outcome into the log and the match's totals, and the
pure runner imports no database code."""

from __future__ import annotations

import json
import subprocess
import sys

from arena.matchlog import encode
from arena.runner.match import Match, MatchConfig, Observers
from arena.runner.players import NO_SLOT, LocalPlayer, Outcome, Player, SlotUse
from arena.runner.replay import replay
from bots_sdk.bot import Request
from bots_sdk.samples import SAMPLE_BOTS


class QueuedPlayer:
    """A player of a kind the runner does not know (as a dial-out transport would be): it
    answers through a sample bot, and reports a slot wait for every request."""

    kind = "dial-out"

    def __init__(self, waits: list[SlotUse]):
        self.name = "queued"
        self.url: str | None = None
        self.bot = SAMPLE_BOTS["greedy"](seed=3)
        self.waits = waits
        self.notices = 0
        self.closed = False

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        action = self.bot.decide(Request(json.loads(body)))
        slot = self.waits.pop(0) if self.waits else NO_SLOT
        return Outcome(action, None, None, "", 1, None, slot)

    def notify(self, body: bytes) -> SlotUse:
        self.notices += 1
        return SlotUse(0.5, False)

    def close(self) -> None:
        self.closed = True


def test_a_player_of_a_new_kind_plays_and_its_slot_figures_reach_the_log_and_totals():
    waits = [SlotUse(0.25, False), SlotUse(0.0004, True), SlotUse(0.002, False)]
    queued = QueuedPlayer(list(waits))
    assert isinstance(queued, Player)
    seen: list[int] = []
    match = Match(
        [queued, LocalPlayer(SAMPLE_BOTS["greedy"](seed=4))],
        MatchConfig("million_doubt", seed=11, games=2, match_id="shape"),
        Observers(on_decision=lambda ex: seen.append(ex["n"])),
    )
    log = match.play()
    assert replay(log) == log["result"]
    mine = [ex for gm in log["games"] for ex in gm["exchanges"] if ex["player"] == 0]
    assert len(mine) > 3 and len(seen) == sum(len(gm["exchanges"]) for gm in log["games"])
    assert mine[0]["slot_wait_ms"] == 250.0 and "slot_bypassed" not in mine[0]
    assert "slot_wait_ms" not in mine[1] and mine[1]["slot_bypassed"] is True  # under 1 ms: no wait key
    assert mine[2]["slot_wait_ms"] == 2.0
    assert all("slot_wait_ms" not in ex and "slot_bypassed" not in ex for ex in mine[3:])
    assert log["players"][0]["kind"] == "dial-out"
    # totals over the match: the three waits and the two notices (start and end)
    assert queued.notices == 2
    totals = match.slot_totals
    assert round(totals[0].wait_s, 6) == round(0.25 + 0.0004 + 0.002 + 2 * 0.5, 6)
    assert totals[0].max_wait_s == 0.5 and totals[0].bypassed == 1
    assert (totals[1].wait_s, totals[1].max_wait_s, totals[1].bypassed) == (0.0, 0.0, 0)
    # the log keys stay in their stored order: the slot keys after "fault"
    assert list(mine[0])[-2:] == ["fault", "slot_wait_ms"]
    assert encode(log)  # strict JSON


def test_the_pure_runner_imports_no_database_code():
    code = (
        "import sys\n"
        "import arena.runner.match, arena.runner.replay, arena.runner.redact, arena.runner.capped\n"
        "import arena.runner.claims, arena.seeds, arena.fairness, arena.matchlog, arena.safejson\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'celery', 'flask')"
        " or m.startswith(('arena.db', 'arena.lifecycle', 'arena.delivery')))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
