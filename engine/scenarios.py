"""Scenario runner: ``python -m engine.scenarios PATH [PATH ...]``.

Runs rule scenarios in the JSON format of ``tests/scenarios/README.md`` (files, or folders
of ``*.json`` files, sub-folders included) through the engine, prints ``PASS id`` or
``FAIL id step N: expected ... got ...`` per scenario and a closing ``N passed, N failed``
line; the exit status is 1 if any failed (2 if a path holds no scenario).

Steps go to the engine directly (C-12): a refused action is just refused, never a fault.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TextIO

import engine
from engine.decisions import InvalidAction


class ScenarioFailure(Exception):
    """A scenario step did not hold; ``step`` is its index in ``steps``."""

    def __init__(self, step: int, message: str):
        self.step = step
        super().__init__(f"step {step}: {message}")


def _actual(g: engine.Game, key: str) -> Any:
    d = g.decision()
    res: Mapping[str, Any] | None = g.unit_result() if g.unit_over else None
    if key == "to_act":
        return d.seat if d else None
    if key == "decision":
        return d.kind if d else None
    if key == "field_size":
        return g.field_size()
    if key == "revolution":
        return g.revolution
    if key == "jback":
        return g.jback
    if key == "suit_lock":
        return sorted("SHDC"[s] for s in g.lock)
    if key == "direction":
        return g.direction
    if key == "over":
        return g.unit_over
    if key == "out":
        return [s for s in range(g.seats) if not g.still_in[s]]
    if key in ("winner", "burst", "scores", "ranks"):
        if res is None:
            return None
        return res.get(key)  # seat maps have string keys already (engine.game.Result)
    raise KeyError(key)


def _compare(g: engine.Game, expect: dict[str, Any], step: int) -> None:
    over = g.unit_over
    for key, want in expect.items():
        if over and key in ("to_act", "decision"):
            continue  # README: not checked once over
        got: Any
        if key == "hand_sizes":
            got = {str(s): len(g.hands[int(s)]) for s in want}
        elif key == "hands":
            got = {str(s): sorted(engine.format_cards(g.hands[int(s)])) for s in want}
            want = {str(s): sorted(v) for s, v in want.items()}
        else:
            try:
                got = _actual(g, key)
            except KeyError:
                raise ScenarioFailure(step, f"unknown expect key {key!r}") from None
            if key in ("scores", "ranks") and isinstance(want, dict) and isinstance(got, dict):
                got = {s: got.get(s) for s in want}
            if key == "suit_lock":
                want = sorted(want)
        if got != want:
            raise ScenarioFailure(step, f"expected {key}={json.dumps(want)} got {json.dumps(got)}")


def run_scenario(data: dict[str, Any]) -> None:
    """Run one scenario; raise :class:`ScenarioFailure` at the first difference.

    Raises:
        ScenarioFailure: an expectation failed, an action was refused (or accepted while
            marked ``invalid``), or the scenario is malformed.
    """
    try:
        g = engine.from_setup(data["ruleset"], data.get("options") or {}, data["setup"])
    except (ValueError, KeyError) as e:
        raise ScenarioFailure(-1, f"bad setup: {e}") from None
    for i, step in enumerate(data.get("steps", [])):
        if "expect" in step:
            _compare(g, step["expect"], i)
            continue
        seat, action = step.get("seat"), step.get("action")
        invalid = bool(step.get("invalid"))
        before = None
        if invalid:
            before = json.dumps(
                g.observation(seat if isinstance(seat, int) and 0 <= seat < g.seats else 0), sort_keys=True
            )
        try:
            g.apply(seat, action)
        except InvalidAction as e:
            if not invalid:
                raise ScenarioFailure(i, f"expected the action to be accepted got refused: {e}") from None
            after = json.dumps(
                g.observation(seat if isinstance(seat, int) and 0 <= seat < g.seats else 0), sort_keys=True
            )
            if after != before:
                raise ScenarioFailure(i, "a refused action changed the state") from None
            continue
        if invalid:
            raise ScenarioFailure(i, f"expected {json.dumps(action)} to be refused got accepted")


def iter_files(paths: Iterable[str]) -> list[Path]:
    """Scenario files named by ``paths`` (folders give their ``*.json`` files, sub-folders
    included, sorted by path)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(p.rglob("*.json")))
        else:
            files.append(p)
    return files


def run_paths(paths: Iterable[str], out: TextIO | None = None) -> tuple[int, int]:
    """Run every scenario under ``paths``; print one line each and the closing line.

    Returns (passed, failed). ``out`` defaults to standard output.
    """
    out = sys.stdout if out is None else out
    passed = failed = 0
    for f in iter_files(paths):
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
            sid = data.get("id", f.stem)
        except (OSError, json.JSONDecodeError) as e:
            print(f"FAIL {f.name} step -1: cannot read scenario: {e}", file=out)
            failed += 1
            continue
        try:
            run_scenario(data)
        except ScenarioFailure as e:
            print(f"FAIL {sid} {e}", file=out)
            failed += 1
        except Exception as e:  # an engine crash is a failure with its reason, not a traceback
            print(f"FAIL {sid} step ?: engine error {type(e).__name__}: {e}", file=out)
            failed += 1
        else:
            print(f"PASS {sid}", file=out)
            passed += 1
    print(f"{passed} passed, {failed} failed", file=out)
    return passed, failed


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m engine.scenarios PATH [PATH ...]", file=sys.stderr)
        return 2
    passed, failed = run_paths(args)
    if passed + failed == 0:
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
