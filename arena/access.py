"""Who may read what: the one access policy of the REST API and the pages.

A *viewer* is an :class:`~arena.db.models.Account` or ``None`` (anonymous). Rules:

* **Public tournaments.** A tournament that is ``finished`` with ``public_when_finished``
  (default true): the tournament, its standings, its matches and their logs are readable by
  anyone, signed in or not (``GET /api/v1/...`` without a token, and ``/ui``).
* Otherwise a signed-in account is needed. Every account may read a tournament and its
  standings. Matches and their logs: organizers read all of them; a contestant reads the
  matches where one of its bots is seated, and every match of the tournament once it is
  finished if one of its bots took part.
* **Log embargo.** While a tournament is not over (``finished`` or ``cancelled``), no
  contestant reads a log of it, nor a page built from one (the replay): organizers do. A
  contestant still reads the match records (seats, status, result) of its bots.
  The tournament's log download (JSON Lines) is open to organizers, to anyone when public,
  and, once the tournament is over, to owners of a participant (the logs they may read).
* **Seeds** (:func:`can_see_seed`): the tournament seed, its salt and the match seeds are
  shown to nobody, organizers included, until the seed is revealed (:func:`seed_revealed`),
  then to whoever may read the tournament. Before that anyone sees the published
  commitment only (:mod:`arena.fairness`). A seed the organizer set is marked
  (``seed_chosen``) wherever the tournament is shown.
* **Live view** (:func:`live_view_for`): organizers watch a playing match on the full
  channel (every hand, face-down cards named); whoever else may read the match
  (:func:`can_read_match`: a contestant, its own bots' matches) watches the public channel
  only (C-11: hand sizes, face-up cards, face-down cards as counts, public events), never
  the full one; the owner of a seated bot watches that seat's own view instead (its bot's
  hand and what its bot sees: :func:`live_players_for`), never another seat's. The log
  embargo is unchanged (:func:`can_read_log`).
* **An organizer who plays** (:func:`oversees`): an organizer that owns a participant of a
  tournament is a contestant of it for what the embargo keeps until it is over: its own
  seats' views or the public live channel only, no log, no log download (it could feed its
  bot the hands it watches).
* **Bot profiles** (:func:`can_view_bot_profile`): a bot's page is public where its
  tournaments are: its rating across tournaments, its rating history and the matches the
  viewer may read (:func:`readable_matches_condition`), for anyone when the bot is rated or
  entered in a tournament the viewer may read. Its owner's parts (check details, secret
  rotation, run command, URL, connection) stay with its owner and organizers
  (:func:`can_open_bot`).
* **Bot URLs** (:func:`can_see_bot_url`): a bot's endpoint URL is shown to its owner and to
  organizers only; tournament logs are stored without URLs and older logs have them
  removed on read (:func:`redact_log`).

* **Tables** (docs/tables.md; tournaments of format ``table``): read by whoever is at the table
  (:func:`at_table`: its opener, its people, the owners of its bots) and organizers, never
  listed with the tournaments. While it plays, a person sees its own seat only (its page, fed
  by :mod:`arena.tables`): the match's public live channel at most, never a seat view of
  another seat, its own bot's included; an organizer seated as a person is a person of it
  (:func:`oversees`) until it is over. Once over, its log, its replay with every hand and its
  log download are theirs.

* **Ladders** (docs/ladder.md): a ladder's sets are the matches of its tournament (format
  ``ladder``), read as the ladder is: an open ladder by anyone, signed in or not; a private
  one by its members and organizers only. A set's log, and its seed and salt, are readable
  once the set is stored (the set's own commitment; nothing of it is left to play), never
  before; the full live channel goes to organizers that hold no entry in the ladder (an
  organizer whose bot plays there is a contestant of it).

Every function is read-only and takes the caller's SQLAlchemy session.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from sqlalchemy import ColumnElement, exists, or_, select
from sqlalchemy.orm import Session, aliased

from arena import matchlog
from arena.db.models import (
    Account,
    Bot,
    Ladder,
    LadderEntry,
    LadderMember,
    Match,
    MatchSeat,
    Rating,
    Table,
    Tournament,
    TournamentParticipant,
)
from arena.lifecycle import MatchStatus, TournamentStatus
from arena.status import TournamentFormat

#: Account roles.
ORGANIZER = "organizer"
CONTESTANT = "contestant"


def is_organizer(viewer: Account | None) -> bool:
    """True for a signed-in organizer."""
    return viewer is not None and viewer.role == ORGANIZER


def is_public(t: Tournament) -> bool:
    """A finished tournament whose organizer left ``public_when_finished`` on."""
    return t.status == TournamentStatus.FINISHED and bool(t.public_when_finished)


def owns_seat_in(session: Session, viewer: Account, match_id: int) -> bool:
    """True if one of ``viewer``'s bots is seated in the match."""
    return bool(
        session.scalar(
            select(
                exists().where(MatchSeat.match_id == match_id, MatchSeat.bot_id == Bot.id, Bot.owner_id == viewer.id)
            )
        )
    )


def ladder_of(session: Session, t: Tournament) -> Ladder | None:
    """The ladder whose sets ``t`` holds (format ``ladder``), else None."""
    if t.format != TournamentFormat.LADDER:
        return None
    return session.scalar(select(Ladder).where(Ladder.tournament_id == t.id))


def reads_ladder(session: Session, viewer: Account | None, ladder: Ladder) -> bool:
    """An open ladder: anyone; a private one: its members and organizers."""
    if ladder.open_ruleset is not None:
        return True
    if viewer is None:
        return False
    return is_organizer(viewer) or session.get(LadderMember, (ladder.id, viewer.id)) is not None


def _ladder_readable(session: Session, viewer: Account | None, t: Tournament) -> bool | None:
    """For a ladder's tournament, whether ``viewer`` reads the ladder; None for any other."""
    ladder = ladder_of(session, t)
    return None if ladder is None else reads_ladder(session, viewer, ladder)


def owns_participant(session: Session, viewer: Account, tournament_id: int) -> bool:
    """True if one of ``viewer``'s bots is a participant of the tournament (of a ladder's
    tournament: holds an entry in the ladder)."""
    entered = session.scalar(
        select(
            exists().where(
                Ladder.tournament_id == tournament_id,
                LadderEntry.ladder_id == Ladder.id,
                LadderEntry.owner_id == viewer.id,
            )
        )
    )
    if entered:
        return True
    return bool(
        session.scalar(
            select(
                exists().where(
                    TournamentParticipant.tournament_id == tournament_id,
                    TournamentParticipant.bot_id == Bot.id,
                    Bot.owner_id == viewer.id,
                )
            )
        )
    )


def table_of(session: Session, t: Tournament) -> Table | None:
    """The table whose match ``t`` holds (format ``table``), else None."""
    if t.format != TournamentFormat.TABLE:
        return None
    return session.scalar(select(Table).where(Table.tournament_id == t.id))


def seated_person(table: Table, viewer: Account | None) -> bool:
    """True if ``viewer`` holds a person's seat at ``table``."""
    return viewer is not None and any(
        s.get("kind") == "person" and s.get("account_id") == viewer.id for s in table.seats
    )


def at_table(session: Session, viewer: Account | None, t: Tournament) -> bool | None:
    """For a table's tournament, whether ``viewer`` is at it: its opener, a person seated there,
    or the owner of a bot seated there; None for any other tournament."""
    table = table_of(session, t)
    if table is None:
        return None
    if viewer is None:
        return False
    return table.opened_by == viewer.id or seated_person(table, viewer) or owns_participant(session, viewer, t.id)


def _table_readable(session: Session, viewer: Account | None, t: Tournament) -> bool | None:
    """For a table's tournament, whether ``viewer`` reads it (at it, or an organizer)."""
    at = at_table(session, viewer, t)
    return None if at is None else (at or is_organizer(viewer))


def can_open_bot(viewer: Account | None, owner_id: int) -> bool:
    """The bot's owner-side details (its page's check, secret rotation, run command, URL,
    connection, cap; ``GET /bots/{id}``): its owner and organizers."""
    return viewer is not None and (viewer.id == owner_id or is_organizer(viewer))


def can_view_bot_profile(session: Session, viewer: Account | None, bot: Bot) -> bool:
    """The bot's public profile (its page without the owner's parts: rating across
    tournaments, rating history and matches the viewer may read): its owner and organizers;
    anyone when the bot is on the public leaderboard (it has a rating) or was entered in a
    tournament the viewer may read (:func:`can_view_tournament`: a public one for a visitor,
    any for a signed-in account) or in a ladder the viewer reads (:func:`reads_ladder`). A
    deleted bot is nobody's to open (the caller's 404)."""
    if can_open_bot(viewer, bot.owner_id):
        return True
    rated = exists().where(Rating.bot_id == bot.id)
    entered = exists().where(
        TournamentParticipant.bot_id == bot.id,
        TournamentParticipant.tournament_id == Tournament.id,
        *public_tournaments_condition(viewer),
    )
    readable = [Ladder.open_ruleset.is_not(None)]
    if viewer is not None:
        readable.append(Ladder.id.in_(select(LadderMember.ladder_id).where(LadderMember.account_id == viewer.id)))
    laddered = exists().where(LadderEntry.bot_id == bot.id, LadderEntry.ladder_id == Ladder.id, or_(*readable))
    return bool(session.scalar(select(rated | entered | laddered)))


def public_tournaments_condition(viewer: Account | None) -> list[ColumnElement[bool]]:
    """SQL conditions on :class:`Tournament` keeping those the viewer may read
    (:func:`can_view_tournament`): none for a signed-in account, public ones for a visitor."""
    if viewer is not None:
        return []
    return [Tournament.status == TournamentStatus.FINISHED, Tournament.public_when_finished.is_(True)]


def readable_matches_condition(viewer: Account | None) -> ColumnElement[bool] | None:
    """An SQL condition on :class:`Match` (any tournament) keeping the matches the viewer may
    read (:func:`can_read_match`), or None for all of them (organizers). For a bot's page
    across its tournaments (its subqueries use aliases of their own: correlated on
    :class:`Match` only, whatever else the caller's query joins)."""
    if is_organizer(viewer):
        return None
    t, seat, bot, entry = aliased(Tournament), aliased(MatchSeat), aliased(Bot), aliased(TournamentParticipant)
    public = exists().where(
        t.id == Match.tournament_id, t.status == TournamentStatus.FINISHED, t.public_when_finished.is_(True)
    )
    if viewer is None:
        return public
    own_seat = exists().where(seat.match_id == Match.id, seat.bot_id == bot.id, bot.owner_id == viewer.id)
    took_part = exists().where(
        t.id == Match.tournament_id,
        t.status == TournamentStatus.FINISHED,
        entry.tournament_id == t.id,
        entry.bot_id == bot.id,
        bot.owner_id == viewer.id,
    )
    return or_(public, own_seat, took_part)


def can_view_tournament(session: Session, viewer: Account | None, t: Tournament) -> bool:
    """The tournament itself and its standings (a ladder's: whoever reads the ladder)."""
    ladder = _ladder_readable(session, viewer, t)
    if ladder is not None:
        return ladder
    table = _table_readable(session, viewer, t)
    if table is not None:
        return table
    return is_public(t) or viewer is not None


def sees_all_matches(session: Session, viewer: Account | None, t: Tournament) -> bool:
    """True if every match of ``t`` is readable; else only the viewer's bots' matches are
    (every set of a ladder the viewer reads)."""
    ladder = _ladder_readable(session, viewer, t)
    if ladder is not None:
        return ladder
    table = _table_readable(session, viewer, t)
    if table is not None:
        return table
    if is_public(t) or is_organizer(viewer):
        return True
    return viewer is not None and t.status == TournamentStatus.FINISHED and owns_participant(session, viewer, t.id)


def can_read_match(session: Session, viewer: Account | None, m: Match, t: Tournament) -> bool:
    """The match (seats, result) and its log."""
    if sees_all_matches(session, viewer, t):
        return True
    return viewer is not None and owns_seat_in(session, viewer, m.id)


def visible_matches_condition(session: Session, viewer: Account | None, t: Tournament) -> ColumnElement[Any] | None:
    """An SQL condition on :class:`Match` keeping the matches of ``t`` the viewer may read,
    or None when it may read all of them."""
    if sees_all_matches(session, viewer, t):
        return None
    if viewer is None:
        return Match.id.is_(None)  # nothing
    return exists().where(MatchSeat.match_id == Match.id, MatchSeat.bot_id == Bot.id, Bot.owner_id == viewer.id)


def oversees(session: Session, viewer: Account | None, t: Tournament) -> bool:
    """True for an organizer that may read what the embargo keeps from contestants while ``t``
    is not over (every log, the full live channel): one that owns no participant of ``t``. An
    organizer whose bot plays in ``t`` is a contestant of it until it is over (module docstring)."""
    if not is_organizer(viewer):
        return False
    assert viewer is not None
    if is_over(t):
        return True
    table = table_of(session, t)
    if table is not None and seated_person(table, viewer):
        return False  # a person at the table sees its own seat only until it is over
    return not owns_participant(session, viewer, t.id)


def can_download_tournament_logs(session: Session, viewer: Account | None, t: Tournament) -> bool:
    """The tournament's JSON Lines download (as many logs as :func:`visible_matches_condition`);
    contestants (and an organizer whose bot plays in it: :func:`oversees`) only once the
    tournament is over (log embargo)."""
    if is_public(t) or oversees(session, viewer, t):
        return True
    if viewer is not None and is_over(t) and at_table(session, viewer, t):
        return True
    return viewer is not None and is_over(t) and owns_participant(session, viewer, t.id)


# -- fairness: log embargo, seeds, bot URLs --------------------------------------------------------
def is_over(t: Tournament) -> bool:
    """True once the tournament is ``finished`` or ``cancelled``."""
    return t.status in (TournamentStatus.FINISHED, TournamentStatus.CANCELLED)


def can_read_log(session: Session, viewer: Account | None, m: Match, t: Tournament) -> bool:
    """The match's log and what is built from it (replay, faults): organizers always (but one
    whose bot plays in the tournament: :func:`oversees`); others as :func:`can_read_match`,
    once the tournament is over (log embargo); a ladder set's, by whoever reads the ladder
    once the set is stored."""
    if t.format == TournamentFormat.LADDER:
        return m.status == MatchStatus.FINISHED and can_read_match(session, viewer, m, t)
    if oversees(session, viewer, t):
        return True
    return is_over(t) and can_read_match(session, viewer, m, t)


#: The two live channels of a match (:mod:`arena.live`).
LiveView = Literal["full", "public"]


def live_view_for(session: Session, viewer: Account | None, m: Match, t: Tournament) -> LiveView | None:
    """Which live channel of match ``m`` (tournament ``t``) the viewer may watch:
    ``"full"`` for organizers (but one whose bot plays in the tournament: :func:`oversees`),
    ``"public"`` for anyone else who may read the match (:func:`can_read_match`), None for
    the rest. Never ``"full"`` for a non-organizer, even once the log is readable: the live
    stream is not the log (C-11; module docstring). Whether the match is playing now is the
    caller's question."""
    if oversees(session, viewer, t):
        return "full"
    if can_read_match(session, viewer, m, t):
        return "public"
    return None


def live_players_for(session: Session, viewer: Account | None, m: Match, t: Tournament) -> list[int]:
    """The players of match ``m`` (``match_seats.seat``) whose own view the viewer may watch
    live (:func:`arena.live.seat_view`: its bot's hand, what that bot sees itself): the seats
    of the viewer's own bots, when it watches the public channel (:func:`live_view_for`).
    Never another account's seat; organizers watch the full channel instead."""
    if viewer is None or live_view_for(session, viewer, m, t) != "public":
        return []
    table = table_of(session, t)
    if table is not None and seated_person(table, viewer) and not is_over(t):
        return []  # a person playing sees its own seat only: not its bot's hand across the table
    rows = session.execute(
        select(MatchSeat.seat)
        .join(Bot, MatchSeat.bot_id == Bot.id)
        .where(MatchSeat.match_id == m.id, Bot.owner_id == viewer.id)
        .order_by(MatchSeat.seat)
    )
    return [int(seat) for (seat,) in rows]


def seed_revealed(session: Session, t: Tournament) -> bool:
    """True when no deal of ``t`` is left to play: it is over and none of its matches is
    pending, queued, running or, while it is finished, failed (a failed match may be
    retried, so a finished tournament with failed matches keeps its seed secret until they
    are played; a cancelled one is never retried, its failed matches never played)."""
    if not is_over(t):
        return False
    left = [MatchStatus.PENDING, MatchStatus.QUEUED, MatchStatus.RUNNING]
    if t.status == TournamentStatus.FINISHED:
        left.append(MatchStatus.FAILED)
    return not session.scalar(select(exists().where(Match.tournament_id == t.id, Match.status.in_(left))))


def can_see_seed(session: Session, viewer: Account | None, t: Tournament) -> bool:
    """The tournament seed, its salt and the match seeds: once revealed, whoever the viewer
    (organizers included: one who saw the seed before the deals could pick them; module
    docstring)."""
    return seed_revealed(session, t)


def can_see_match_seed(session: Session, viewer: Account | None, m: Match, t: Tournament) -> bool:
    """A match's seed: a ladder set's once it is stored (its own commitment), any other once
    its tournament's seed is revealed (:func:`can_see_seed`)."""
    if t.format == TournamentFormat.LADDER:
        return m.status == MatchStatus.FINISHED
    return can_see_seed(session, viewer, t)


def can_see_bot_url(viewer: Account | None, owner_id: int | None) -> bool:
    """A bot's endpoint URL: its owner and organizers."""
    return is_organizer(viewer) or (viewer is not None and owner_id is not None and viewer.id == owner_id)


def seat_owners(session: Session, match_id: int) -> list[int | None]:
    """Owner account id of the bot in each seat (None for a house seat), in seat order."""
    rows = session.execute(
        select(MatchSeat.seat, Bot.owner_id)
        .outerjoin(Bot, MatchSeat.bot_id == Bot.id)
        .where(MatchSeat.match_id == match_id)
        .order_by(MatchSeat.seat)
    ).all()
    return [owner for _seat, owner in rows]


def redact_log(raw: bytes, viewer: Account | None, owners: Sequence[int | None]) -> bytes:
    """The UTF-8 JSON bytes of a match log as ``viewer`` may read them: every
    ``players[i].url`` the viewer may not see (:func:`can_see_bot_url` of seat ``i``'s owner,
    ``owners``) set to null. Logs stored without URLs are returned unchanged."""
    if b'"url":"' not in raw:
        return raw
    log = json.loads(raw)
    changed = False
    for p in log.get("players") or []:
        i = p.get("index")
        owner = owners[i] if isinstance(i, int) and 0 <= i < len(owners) else None
        if p.get("url") and not can_see_bot_url(viewer, owner):
            p["url"] = None
            changed = True
    return matchlog.encode(log) if changed else raw
