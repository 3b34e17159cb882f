"""The Redis side of a person's seat at a table (docs/tables.md): keys and frames shared by the
worker's player (:mod:`arena.runner.person`) and the pages (:mod:`api.ui.tables`).

Keys (``<match>``: the match id; ``<player>``: the person's player index, ``match_seats.seat``;
``<rid>``: a request id):

===================================== ===========================================================
``arena:table:seat:<match>:<player>``  pub/sub channel: every frame for the person (below)
``arena:table:pending:<match>:<player>`` hash ``{rid, frame, refused?}``: the decision the person
                                       is asked now and the engine's last refusal of a try at it
                                       (deleted once answered or timed out)
``arena:table:view:<match>:<player>``  the last ``view`` frame (a page that opens or reloads
                                       starts from it)
``arena:table:notice:<match>:<player>`` the last ``notice`` frame
``arena:table:ans:<rid>``              list: the person's tries at answering request ``<rid>``
                                       (pushed by the pages, popped by the worker)
===================================== ===========================================================

Frames (JSON objects, ``type`` first); every one is built from what a bot in the person's seat
gets (its decision requests and notices, and its own observation, :meth:`engine.Game.observation`,
C-11), and nothing else:

* ``{"type": "request", "rid", "deadline_ms" (Unix ms), "request": <the protocol request>}``;
* ``{"type": "refused", "rid", "reason", "rule"}``: the engine refused a try (C-12), the
  person is asked on; ``{"type": "accepted", "rid", "elapsed_ms"}``; ``{"type": "timeout", "rid"}``;
* ``{"type": "view", "game", "seat", "seats", "observation", "acted": {"seat", "kind",
  "bank_after_ms"}}`` after each decision of the match (the person's own observation and the
  public clock of the seat that acted, TIME-1);
* ``{"type": "notice", "notice": <match_start / match_end notice>}``; ``{"type": "over"}``:
  the worker is done with the seat (the match ended or failed).

Pure: Redis only (no database).
"""

from __future__ import annotations

import json
from typing import Any

import redis

PREFIX = "arena:table:"
#: Seconds a ``view`` or ``notice`` frame is kept after its last write.
KEEP_S = 3600
#: Seconds an answer list lives, unread.
ANSWER_TTL_S = 120
#: Most tries kept in an answer list (older ones dropped: a page cannot flood the worker).
MAX_TRIES = 8
#: Largest answer a page may push, bytes (an action is a few hundred).
MAX_ANSWER_BYTES = 4096

#: Lua: push ARGV[2] onto the answer list KEYS[2] when the pending hash KEYS[1] is for request
#: ARGV[1]; the list keeps its last ARGV[4] items and lives ARGV[3] seconds. Returns 1 if pushed.
PUSH_ANSWER = """
if redis.call('HGET', KEYS[1], 'rid') ~= ARGV[1] then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[4]), -1)
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
"""


def seat_channel(match_id: int, player: int) -> str:
    return f"{PREFIX}seat:{int(match_id)}:{int(player)}"


def pending_key(match_id: int, player: int) -> str:
    return f"{PREFIX}pending:{int(match_id)}:{int(player)}"


def view_key(match_id: int, player: int) -> str:
    return f"{PREFIX}view:{int(match_id)}:{int(player)}"


def notice_key(match_id: int, player: int) -> str:
    return f"{PREFIX}notice:{int(match_id)}:{int(player)}"


def answer_key(rid: str) -> str:
    return f"{PREFIX}ans:{rid}"


def dumps(frame: dict[str, Any]) -> str:
    """A frame as compact JSON text."""
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False)


def snapshot(client: redis.Redis, match_id: int, player: int) -> list[str]:
    """The frames a page starts from (JSON text, oldest first): the last ``view``, the last
    ``notice``, the pending ``request`` and its last ``refused`` try, those that exist.

    Raises:
        redis.RedisError: Redis cannot be read.
    """
    pipe = client.pipeline(transaction=False)
    pipe.get(view_key(match_id, player))
    pipe.get(notice_key(match_id, player))
    pipe.hget(pending_key(match_id, player), "frame")
    pipe.hget(pending_key(match_id, player), "refused")
    out = []
    for raw in pipe.execute():
        if raw:
            out.append(raw.decode("utf-8") if isinstance(raw, bytes) else str(raw))
    return out


def push_answer(client: redis.Redis, match_id: int, player: int, rid: str, answer: bytes) -> bool:
    """Hand a try at answering request ``rid`` to the worker: True if ``rid`` is the request the
    person is asked now (else nothing is pushed: an old or forged id).

    Raises:
        ValueError: ``answer`` is over :data:`MAX_ANSWER_BYTES`.
        redis.RedisError: Redis cannot be reached.
    """
    if len(answer) > MAX_ANSWER_BYTES:
        raise ValueError(f"an answer is at most {MAX_ANSWER_BYTES} bytes")
    pushed = client.eval(
        PUSH_ANSWER, 2, pending_key(match_id, player), answer_key(rid), rid, answer, ANSWER_TTL_S, MAX_TRIES
    )
    return bool(pushed)
