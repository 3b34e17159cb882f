"""Bearer-token authentication and access rules.

``Authorization: Bearer <token>``; the SHA-256 of the token is looked up in ``accounts``.
Missing or wrong token: 401. Contestants manage their own bots and see matches and logs of
their bots; once a tournament is finished its logs are readable by every owner of one of its
participants; organizers see everything (but still cannot modify others' bots). Not yours: 403.
"""

from __future__ import annotations

from flask import g, request
from sqlalchemy import exists, select

from api.database import db
from api.errors import abort
from arena.core.db.models import Account, Bot, Match, MatchSeat, Tournament, TournamentParticipant
from arena.core.security import hash_token

BEARER = [{"bearerAuth": []}]


def current_account() -> Account:
    """The authenticated account; aborts with 401 when the token is missing or unknown."""
    if "account" in g:
        return g.account
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        abort(401, "missing bearer token (Authorization: Bearer <token>)")
    if len(token) > 256:
        abort(401, "invalid token")
    account = db().scalar(select(Account).where(Account.token_hash == hash_token(token)))
    if account is None:
        abort(401, "invalid token")
    g.account = account
    return account


def require_organizer() -> Account:
    """The authenticated account if it is an organizer; 401 or 403 otherwise."""
    account = current_account()
    if account.role != "organizer":
        abort(403, "organizer role required")
    return account


def is_organizer(account: Account) -> bool:
    return account.role == "organizer"


def owns_seat_in(account: Account, match_id: int) -> bool:
    """True if one of ``account``'s bots is seated in the match."""
    return bool(db().scalar(select(exists().where(
        MatchSeat.match_id == match_id, MatchSeat.bot_id == Bot.id, Bot.owner_id == account.id))))


def owns_participant(account: Account, tournament_id: int) -> bool:
    """True if one of ``account``'s bots is a participant of the tournament."""
    return bool(db().scalar(select(exists().where(
        TournamentParticipant.tournament_id == tournament_id,
        TournamentParticipant.bot_id == Bot.id, Bot.owner_id == account.id))))


def can_read_match(account: Account, match: Match, tournament: Tournament) -> bool:
    """Organizer; or owner of a seated bot; or, once the tournament finished, owner of a participant."""
    if is_organizer(account) or owns_seat_in(account, match.id):
        return True
    return tournament.status == "finished" and owns_participant(account, tournament.id)


def protect(blp, *, organizer_methods: tuple[str, ...] = ()) -> None:
    """Authenticate every request of ``blp`` before its body is parsed (401 before 422).

    Requests with a method in ``organizer_methods`` also need the organizer role (403).
    ``OPTIONS`` requests are left alone.
    """

    @blp.before_request
    def _authenticate():
        if request.method == "OPTIONS":
            return None
        if request.method in organizer_methods:
            require_organizer()
        else:
            current_account()
        return None
