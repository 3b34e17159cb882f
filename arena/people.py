"""People at tables (docs/tables.md): their own rating pool, and what their account page lists.

**The people's pool.** Every finished match of a table (tournament format ``table``) of a rule
set, seed drawn at the start, is rated game by game (:func:`arena.ranking.rate_games`: by
adjusted score where the game has a par, else its places), in the order the tables started.
Entrants: a person ``person:<account id>``, a bot ``bot:<id>`` and a house sample bot
``house:<sample>``, each one entrant across every table, all at the prior at first. Only the
people's rows are stored (``person_ratings``); the bots' ratings in this pool are a means, not
a table: the bots' own ``ratings`` and leaderboard never see a table (unless an operator turns
``ARENA_PEOPLE_IN_BOT_RATINGS`` on: :func:`arena.ratings.rated_tournaments`). A match in
which a bot seat never made a valid decision is not rated (a broken bot rates nobody); a
person who stopped answering is (closing the tab is a loss, not a way out). A match in which a
person sits against a bot it owns is rated in no pool (:func:`arena.ratings.own_bot_matches`: its bot could
throw the games or tell it its hand, and its leaving would rate its bot up).

Read models: :func:`tables_of` (a person's tables, newest first), :func:`person_ratings`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from openskill.models import PlackettLuce
from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session, selectinload

from arena.db.models import Match, MatchResult, MatchSeat, PersonRating, Table, Tournament, utcnow
from arena.ladder_ratings import contested
from arena.lifecycle.base import aware
from arena.ranking import rate_games
from arena.ratings import own_bot_matches
from arena.status import SeatKind, TournamentFormat, TournamentStatus

__all__ = ["TableRow", "person_key", "person_ratings", "rebuild_people_ratings", "tables_of"]


def person_key(seat: MatchSeat) -> str:
    """A seat's entrant in the people's pool (module docstring)."""
    if seat.account_id is not None:
        return f"person:{seat.account_id}"
    if seat.bot_id is not None:
        return f"bot:{seat.bot_id}"
    return f"house:{seat.house_bot}"


def rebuild_people_ratings(session: Session, ruleset: str) -> int:
    """Recompute the ``person_ratings`` rows of ``ruleset`` from scratch (module docstring); no
    commit. Returns the number of people rated."""
    model = PlackettLuce()
    matches = session.scalars(
        select(Match)
        .join(MatchResult)
        .join(Tournament, Match.tournament_id == Tournament.id)
        .where(
            Tournament.ruleset == ruleset,
            Tournament.format == TournamentFormat.TABLE.value,
            Tournament.seed_chosen.is_(False),
        )
        .options(selectinload(Match.seats), selectinload(Match.result))
        .order_by(Tournament.started_at, Tournament.id, Match.index)
        .execution_options(populate_existing=True)  # no stale empty result (arena.standings)
    ).all()
    ratings: dict[str, Any] = {}
    games: dict[int, int] = {}
    played: dict[int, int] = {}
    last: dict[int, datetime] = {}
    own = own_bot_matches(session, matches)
    for m in matches:
        if m.id in own:
            continue
        res = m.result
        assert res is not None
        seats = sorted(m.seats, key=lambda s: s.seat)
        answered = (res.timings or {}).get("answered")
        if isinstance(answered, list) and len(answered) == len(seats):
            if not contested([int(a) for a in answered], [s.bot_id is None for s in seats]):
                continue
        game_list = list(res.games or []) or [{"scores": res.scores, "places": res.places}]
        keys = [person_key(s) for s in seats]
        before = [ratings.setdefault(k, model.rating(name=k)) for k in keys]
        for k, r in zip(keys, rate_games(model, before, game_list)):
            ratings[k] = r
        when = aware(m.finished_at or res.created_at)  # SQLite reads naive times back
        for s in seats:
            if s.account_id is None:
                continue
            a = s.account_id
            games[a] = games.get(a, 0) + len(game_list)
            played[a] = played.get(a, 0) + 1
            if when is not None and (a not in last or when > last[a]):
                last[a] = when
    session.execute(delete(PersonRating).where(PersonRating.ruleset == ruleset))
    now = utcnow()
    for a in sorted(games):
        r = ratings[f"person:{a}"]
        session.add(
            PersonRating(
                ruleset=ruleset,
                account_id=a,
                mu=r.mu,
                sigma=r.sigma,
                games=games[a],
                matches=played[a],
                last_played_at=last.get(a),
                updated_at=now,
            )
        )
    session.flush()
    return len(games)


def person_ratings(session: Session, account_id: int) -> list[PersonRating]:
    """The account's ratings in the people's pool, one per rule set it played."""
    return list(
        session.scalars(
            select(PersonRating).where(PersonRating.account_id == account_id).order_by(PersonRating.ruleset)
        )
    )


@dataclass(frozen=True)
class TableRow:
    """A table of the account's list: the table, its tournament, its match (None before the
    start), the account's seat in it (None: it opened the table without a seat)."""

    table: Table
    tournament: Tournament
    match: Match | None
    seat: int | None

    @property
    def over(self) -> bool:
        return self.tournament.status in (TournamentStatus.FINISHED, TournamentStatus.CANCELLED)


def tables_of(session: Session, account_id: int, *, page: int = 1, per_page: int = 25) -> tuple[list[TableRow], int]:
    """``(the tables the account sat at or opened, newest first; how many in all)``."""
    seated = select(MatchSeat.match_id).where(MatchSeat.account_id == account_id)
    in_match = select(Match.tournament_id).where(Match.id.in_(seated))
    cond = or_(Table.opened_by == account_id, Table.tournament_id.in_(in_match))
    total = session.scalar(select(func.count()).select_from(Table).where(cond)) or 0
    tables = session.scalars(
        select(Table).where(cond).order_by(Table.id.desc()).limit(per_page).offset((page - 1) * per_page)
    ).all()
    rows = []
    for t in tables:
        m = session.scalars(
            select(Match).where(Match.tournament_id == t.tournament_id).options(selectinload(Match.seats))
        ).first()
        seat = None
        if m is not None:
            seat = next((s.seat for s in m.seats if s.account_id == account_id), None)
        else:
            seat = next(
                (
                    i
                    for i, s in enumerate(t.seats)
                    if s.get("kind") == SeatKind.PERSON and s.get("account_id") == account_id
                ),
                None,
            )
        rows.append(TableRow(t, t.tournament, m, seat))
    return rows, int(total)
