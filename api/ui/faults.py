"""Fault details in the page's language.

A fault's ``detail`` is English text written when the match was played (the runner:
:mod:`arena.runner.players`, :mod:`arena.runner.match`, :mod:`arena.runner.answers`,
:mod:`arena.safejson`; the engine's refusals, ``engine.InvalidAction``, with their rule id
as `` [C-5]``), kept as it is in the logs and the API. :func:`fault_detail` shows it in the
current locale: each known form (:data:`DETAILS`: a pattern and its English message, whose
``%(name)s`` fields are the pattern's groups) is translated with its values kept (cards,
numbers, exception names); a text of no known form is shown as it is. The rule id stays.
``tests/api/ui/test_papercuts.py`` checks that every message is translated and that the
details the runner and the engine write are recognised.
"""

from __future__ import annotations

import re

from flask_babel import gettext as _

from api.ui.i18n import N_

#: (full-match pattern, English message with the pattern's named groups): the runner's and
#: the engine's fault details, most specific first.
DETAILS: tuple[tuple[str, str], ...] = (
    # the transport and the time bank (arena.runner.players, arena.runner.connected, arena.runner.match)
    (r"no complete answer within the bank \((?P<exc>\w+)\)", N_("no complete answer within the bank (%(exc)s)")),
    (r"no answer within the bank", N_("no answer within the bank")),
    (r"answer took (?P<ms>\d+) ms, more than the bank", N_("the answer took %(ms)s ms, more than the bank")),
    (
        r"answer took (?P<ms>\d+) ms, the bank had (?P<bank>\d+) ms",
        N_("the answer took %(ms)s ms; the bank had %(bank)s ms"),
    ),
    (r"cut off at the end of the bank \((?P<why>.*)\)", N_("cut off at the end of the bank (%(why)s)")),
    (r"HTTP status (?P<status>\d+)", N_("HTTP status %(status)s (not 200)")),
    (r"answer body over (?P<n>\d+) bytes", N_("the answer body is over %(n)s bytes")),
    (
        r"answer body in more than (?P<n>\d+) pieces \(chunks or reads\)",
        N_("the answer body came in more than %(n)s pieces (chunks or reads)"),
    ),
    (
        r"answer over (?P<n>\d+) bytes on the wire \(headers, 1xx answers and chunk framing included\)",
        N_("the answer took more than %(n)s bytes on the wire (headers, 1xx answers and chunk framing included)"),
    ),
    (r"withdrawn: the bot was deleted", N_("withdrawn: the bot was deleted")),
    (r"forfeits the rest of the match \(FAULT-3\)", N_("forfeits the rest of the match (FAULT-3)")),
    # the answer's JSON (arena.safejson)
    (r"answer is not UTF-8 \(byte (?P<n>\d+)\)", N_("the answer is not UTF-8 (byte %(n)s)")),
    (r"answer is not strict JSON: (?P<why>.*)", N_("the answer is not strict JSON: %(why)s")),
    (
        r"answer is not JSON: (?P<why>.*) \(line (?P<line>\d+) column (?P<col>\d+)\)",
        N_("the answer is not JSON: %(why)s (line %(line)s, column %(col)s)"),
    ),
    (r"answer is not JSON \((?P<exc>\w+)\)", N_("the answer is not JSON (%(exc)s)")),
    (r"answer nests deeper than (?P<n>\d+) levels", N_("the answer nests deeper than %(n)s levels")),
    (r"answer is not a JSON object", N_("the answer is not a JSON object")),
    (
        r"answer holds a lone surrogate \(not UTF-8 text\)",
        N_("the answer holds a lone surrogate (not UTF-8 text)"),
    ),
    # the action's shape (arena.runner.answers)
    (r"the action must be a JSON object", N_("the action must be a JSON object")),
    (r"an action must be a JSON object", N_("the action must be a JSON object")),
    (r"field 'type' must be one of (?P<kinds>.*)", N_("field 'type' must be one of %(kinds)s")),
    (
        r"key not allowed in a '(?P<kind>\w+)' action: '(?P<key>\w+)'",
        N_("key '%(key)s' is not allowed in a '%(kind)s' action"),
    ),
    (r"key not allowed in a '(?P<kind>\w+)' action", N_("a key is not allowed in a '%(kind)s' action")),
    (
        r"field '(?P<f>\w+)' is required in a '(?P<kind>\w+)' action",
        N_("field '%(f)s' is required in a '%(kind)s' action"),
    ),
    (
        r"field 'comment' must be a string of at most (?P<n>\d+) characters",
        N_("field 'comment' must be a string of at most %(n)s characters"),
    ),
    (
        r"field '(?P<f>\w+)' must be a list of at most (?P<n>\d+) cards \(C-1\)",
        N_("field '%(f)s' must be a list of at most %(n)s cards (C-1)"),
    ),
    (r"field 'cards' of a play must not be empty", N_("field 'cards' of a play must not be empty")),
    (r"field 'jokers' must be a list of ranks \(C-4\)", N_("field 'jokers' must be a list of ranks (C-4)")),
    (r"field 'accept' must be a boolean", N_("field 'accept' must be true or false")),
    (r"field 'accept' must be true or false", N_("field 'accept' must be true or false")),
    (r"field 'rate' must be an integer >= 1", N_("field 'rate' must be an integer of at least 1")),
    # the engine's refusals (engine.InvalidAction)
    (
        r"(?P<cards>.+) does not beat the last play \((?P<ref>.*)\)",
        N_("%(cards)s does not beat the last play (%(ref)s)"),
    ),
    (
        r"no reading of (?P<cards>.+) beats the reference \((?P<ref>.*)\)",
        N_("no reading of %(cards)s beats the reference (%(ref)s)"),
    ),
    (
        r"under the number lock the play must be of rank (?P<rank>\w+)",
        N_("under the number lock the play must be of rank %(rank)s"),
    ),
    (
        r"a last play may not hold a joker, an 8 or a 2 \(a 3 in revolution\)",
        N_("a last play may not hold a joker, an 8 or a 2 (a 3 in revolution)"),
    ),
    (
        r"this give/discard would empty the hand after a play with a joker, an 8 or a 2 \(a 3 in revolution\)",
        N_("this give or discard would empty the hand after a play with a joker, an 8 or a 2 (a 3 in revolution)"),
    ),
    (r"you may give at most (?P<n>\d+) card\(s\)", N_("you may give at most %(n)s card(s)")),
    (r"you may discard at most (?P<n>\d+) card\(s\)", N_("you may discard at most %(n)s card(s)")),
    (r"seat (?P<seat>\d+) does not hold (?P<cards>.+)", N_("seat %(seat)s does not hold %(cards)s")),
    (r"the leader may not pass", N_("the leader may not pass")),
    (
        r"the trick is of (?P<count>\d+) card\(s\); this play has (?P<n>\d+)",
        N_("the trick is of %(count)s card(s); this play has %(n)s"),
    ),
    (
        r"(?P<cards>.+) is not a legal form with the declared joker ranks",
        N_("%(cards)s is not a legal form with the declared joker ranks"),
    ),
    (r"(?P<cards>.+) is not a legal form", N_("%(cards)s is not a legal form")),
    (r"the suit lock (?P<suits>\w+) is not matched", N_("the suit lock %(suits)s is not matched")),
    (r"missing field '(?P<f>\w+)'", N_("missing field '%(f)s'")),
    (r"field '(?P<f>\w+)' must be a list of card strings", N_("field '%(f)s' must be a list of card strings")),
    (r"field '(?P<f>\w+)': unknown card (?P<card>.+?): expected .*", N_("field '%(f)s': unknown card %(card)s")),
    (r"field 'jokers' must be a list of ranks from .*", N_("field 'jokers' must be a list of ranks (C-4)")),
    (
        r"'jokers' declares (?P<n>\d+) rank\(s\) for (?P<jokers>\d+) joker\(s\) in the play",
        N_("'jokers' declares %(n)s rank(s) for %(jokers)s joker(s) in the play"),
    ),
    (r"'face_down' must be a sub-multiset of 'cards'", N_("'face_down' must be cards of 'cards'")),
    (
        r"face-down cards exist only in million_doubt, not (?P<ruleset>\w+)",
        N_("face-down cards exist only in Million Doubt, not in %(ruleset)s"),
    ),
    (r"the game is over", N_("the game is over")),
    (r"no decision is pending", N_("no decision is pending")),
    (r"unknown action type (?P<type>.+)", N_("unknown action type %(type)s")),
    (
        r"seat (?P<seat>\d+) is not asked; seat (?P<asked>\d+) must (?P<kind>\w+)",
        N_("seat %(seat)s is not asked; seat %(asked)s must answer '%(kind)s'"),
    ),
    (
        r"action '(?P<type>\w+)' does not answer a '(?P<kind>\w+)' decision \(expected (?P<expected>.*)\)",
        N_("action '%(type)s' does not answer a '%(kind)s' decision (expected %(expected)s)"),
    ),
    (r"a play needs at least one card", N_("a play needs at least one card")),
    (r"give exactly (?P<n>\d+) card\(s\), not (?P<m>\d+)", N_("give exactly %(n)s card(s), not %(m)s")),
    (
        r"nothing beats a face-up lone joker or joker pair: pass",
        N_("nothing beats a face-up lone joker or joker pair: pass"),
    ),
    (
        r"the penalty must be cards of the field; (?P<cards>.+) is not",
        N_("the penalty must be cards of the field; %(cards)s is not"),
    ),
    (
        r"after a caught lie on the last card the penalty must hold at least one card",
        N_("after a caught lie on the last card the penalty must hold at least one card"),
    ),
    (r"rate must be one of (?P<rates>.*)", N_("the rate must be one of %(rates)s")),
    # a connection failure: the exception's name and its own words (last: the widest form)
    (r"(?P<exc>[A-Z]\w*(?:Error|Exception|Timeout|Refused)): (?P<why>.*)", N_("connection failed (%(exc)s): %(why)s")),
)
_COMPILED = tuple((re.compile(pattern, re.DOTALL), message) for pattern, message in DETAILS)
#: `` [RULE-ID]`` at the end of a refusal (:meth:`arena.runner.match.Seat._judge`).
_RULE = re.compile(r"^(?P<text>.*) \[(?P<rule>[A-Z]+(?:-\d+)?)\]$", re.DOTALL)


def known_form(text: str) -> str | None:
    """The English message of the known form ``text`` has (:data:`DETAILS`), or None."""
    m = _RULE.match(text)
    body = m.group("text") if m else text
    for pattern, message in _COMPILED:
        if pattern.fullmatch(body):
            return message
    return None


def fault_detail(text: str | None) -> str:
    """A fault's detail in the current locale (module docstring); ``""`` for None."""
    if not text:
        return ""
    m = _RULE.match(text)
    body, rule = (m.group("text"), m.group("rule")) if m else (text, None)
    for pattern, message in _COMPILED:
        hit = pattern.fullmatch(body)
        if hit is not None:
            out = _(message, **hit.groupdict())
            return f"{out} [{rule}]" if rule else out
    return text
