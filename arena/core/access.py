"""Who may read what: the one access policy of the REST API and the pages.

A *viewer* is an :class:`~arena.core.db.models.Account` or ``None`` (anonymous). Rules:

* **Public tournaments.** A tournament that is ``finished`` with ``public_when_finished``
  (default true): the tournament, its standings, its matches and their logs are readable by
  anyone, signed in or not (``GET /api/v1/...`` without a token, and ``/ui``).
* Otherwise a signed-in account is needed. Every account may read a tournament and its
  standings. Matches and their logs: organizers read all of them; a contestant reads the
  matches where one of its bots is seated, and every match of the tournament once it is
  finished if one of its bots took part.
* The tournament's log download (JSON Lines) is open to organizers and to owners of a
  participant (who receive the logs they may read), and to anyone when public.

Every function is read-only and takes the caller's SQLAlchemy session.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, exists, select
from sqlalchemy.orm import Session

from arena.core.db.models import Account, Bot, Match, MatchSeat, Tournament, TournamentParticipant
from arena.core.lifecycle import TournamentStatus

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
    return bool(session.scalar(select(exists().where(
        MatchSeat.match_id == match_id, MatchSeat.bot_id == Bot.id, Bot.owner_id == viewer.id))))


def owns_participant(session: Session, viewer: Account, tournament_id: int) -> bool:
    """True if one of ``viewer``'s bots is a participant of the tournament."""
    return bool(session.scalar(select(exists().where(
        TournamentParticipant.tournament_id == tournament_id,
        TournamentParticipant.bot_id == Bot.id, Bot.owner_id == viewer.id))))


def can_view_tournament(session: Session, viewer: Account | None, t: Tournament) -> bool:
    """The tournament itself and its standings."""
    return is_public(t) or viewer is not None


def sees_all_matches(session: Session, viewer: Account | None, t: Tournament) -> bool:
    """True if every match of ``t`` is readable; else only the viewer's bots' matches are."""
    if is_public(t) or is_organizer(viewer):
        return True
    return (viewer is not None and t.status == TournamentStatus.FINISHED
            and owns_participant(session, viewer, t.id))


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


def can_download_tournament_logs(session: Session, viewer: Account | None, t: Tournament) -> bool:
    """The tournament's JSON Lines download (as many logs as :func:`visible_matches_condition`)."""
    if is_public(t) or is_organizer(viewer):
        return True
    return viewer is not None and owns_participant(session, viewer, t.id)
