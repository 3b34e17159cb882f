"""A bot's ladder profile: one section of its page per ladder it is entered in (docs/ui.md,
"Ladders"; the rules: docs/ladder.md).

The bot page (``/ui/bots/<id>``, :mod:`api.ui.forms`) includes ``_ladder_entries.html`` with
:func:`ladder_profiles`: for each ladder the viewer may read (:func:`arena.access.reads_ladder`),
the bot's rank, rating over time (a chart), recent sets with their replays, faults, health
(paused by whom, why, since when; its probe or its connection) and versions (its parent and
children; a new version's comparison with its parent on identical deals). The bot page is
public where its ladders are (:func:`arena.access.can_view_bot_profile`: an open ladder's
entrants' profiles are public, as its table is); the owner's parts of it stay its owner's.
"""

from __future__ import annotations

from typing import Any

from flask_babel import gettext as _
from sqlalchemy import func, select

from api.database import db, redis_client
from api.resources.ladders import compare_dict
from api.ui.chart import rating_chart
from api.ui.views import bp, load_log
from arena import access as policy
from arena import ladder_ratings, ladderboard
from arena.db.models import Account, Bot, Ladder, LadderEntry
from arena.sources.ladder import LadderConfig
from arena.status import BotTransport, EntryStatus
from arena.usecases import ladders as usecases

#: Recent sets on a bot's ladder section; points of its rating chart (the last ones).
PROFILE_SETS = 10
CHART_POINTS = 120


def _profile(entry: LadderEntry, ladder: Ladder, bot: Bot, viewer: Account | None) -> dict[str, Any]:
    """One ladder section of a bot's profile (``_ladder_entries.html``): the entry, its rank
    among the entries the table shows, its rating chart (the last :data:`CHART_POINTS`
    rated sets), its recent sets (rated or not) with its seat's score, place and faults, the
    faults' details from their logs, its health, its versions and a new version's comparison
    with its parent."""
    s = db()
    cfg = LadderConfig.from_dict(ladder.config)
    shown = (EntryStatus.ACTIVE, EntryStatus.PAUSED, EntryStatus.HOUSE)
    conservative = ladder_ratings.conservative(entry.mu, entry.sigma)
    rank = None
    if entry.status in shown:
        above = s.scalar(
            select(func.count())
            .select_from(LadderEntry)
            .where(
                LadderEntry.ladder_id == ladder.id,
                LadderEntry.status.in_(shown),
                (LadderEntry.mu - 3 * LadderEntry.sigma) > conservative,
            )
        )
        rank = int(above or 0) + 1
    history = ladderboard.history(s, entry.id, limit=CHART_POINTS)
    chart = rating_chart([(_("set %(n)s", n=n), mu, sigma) for _at, mu, sigma, n in history])
    sets = []
    faults = []
    for r in ladderboard.sets_of_bot(s, ladder, bot.id, limit=PROFILE_SETS):
        seat = r.entries.index(entry.id) if entry.id in r.entries else None
        mine = {
            "score": r.scores[seat] if r.scores and seat is not None else None,
            "place": r.placement[seat] if r.placement and seat is not None else None,
            "faults": r.faults[seat] if r.faults and seat is not None else None,
        }
        sets.append({"r": r, "seat": seat, **mine})
        if mine["faults"]:
            for f in (load_log(r.match_id) or {}).get("faults") or []:
                if f.get("player") == seat:
                    faults.append({"match_id": r.match_id, **f})
    parent = s.get(LadderEntry, entry.parent_entry_id) if entry.parent_entry_id is not None else None
    children = list(s.scalars(select(LadderEntry).where(LadderEntry.parent_entry_id == entry.id)))
    names = ladderboard.entry_names(s, [e.id for e in [*children, *([parent] if parent else [])]])
    connected = None
    if bot.transport == BotTransport.CONNECT:
        connected = bot.id in usecases.redis_online(redis_client())([bot.id])
    return {
        "ladder": ladder,
        "entry": entry,
        "bot": bot,
        "cfg": cfg,
        "rank": rank,
        "conservative": conservative,
        "provisional": entry.sets < cfg.placement_sets,
        "chart": chart,
        "points": len(history),
        "sets": sets,
        "faults": faults,
        "parent": {"entry": parent, "name": names.get(parent.id, "?")} if parent else None,
        "children": [{"entry": c, "name": names.get(c.id, "?")} for c in children],
        "compare": compare_dict(entry),
        "connected": connected,
        "owner": viewer is not None and viewer.id == entry.owner_id,
        "may_act": policy.can_open_bot(viewer, bot.owner_id),
    }


def ladder_profiles(bot_id: int, viewer: Account | None) -> list[dict[str, Any]]:
    """The ladder sections of bot ``bot_id``'s profile: one per ladder it is entered in that
    ``viewer`` may read (:func:`arena.access.reads_ladder`), by ladder id."""
    s = db()
    bot = s.get(Bot, bot_id)
    if bot is None:
        return []
    return [
        _profile(entry, ladder, bot, viewer)
        for entry, ladder in ladderboard.entries_of_bot(s, bot_id)
        if policy.reads_ladder(s, viewer, ladder)
    ]


def pause_reason(entry: Any) -> str:
    """Why an entry is paused in the page's language, from its code and parameters
    (``ladder_entries.pause``, :data:`arena.lifecycle.ladders.PAUSE_REASONS`); an entry paused
    before codes existed shows its stored sentence."""
    pause = getattr(entry, "pause", None) or {}
    code = pause.get("code")
    if code == "owner":
        return _("paused by its owner")
    if code == "forfeits":
        return _(
            "forfeited %(n)s of its last %(window)s sets (%(bar)s faults, or no valid answer, in a set)",
            n=pause.get("n"),
            window=pause.get("window"),
            bar=pause.get("bar"),
        )
    if code == "probe":
        return _("health probe failed: %(detail)s", detail=pause.get("error", ""))
    return getattr(entry, "paused_reason", None) or ""


@bp.app_template_filter("entrant_name")
def entrant_name(name: str) -> str:
    """A ladder entrant's name as the read models give it (:func:`arena.ladderboard.entry_names`:
    the bot's, or ``house: <sample bot>``) in the page's language."""
    if name.startswith("house: "):
        return _("house: %(bot)s", bot=name[len("house: ") :])
    return name


@bp.app_context_processor
def _profile_globals():
    return {"pause_reason": pause_reason}
