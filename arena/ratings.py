"""Ratings across tournaments: one openskill Plackett-Luce update per game of every rated
tournament (:func:`rated_tournaments`, the one selection), rebuilt from scratch by
:func:`rebuild_ratings` (what the worker runs when a tournament is over); docs/ranking.md,
"Ratings". The leaderboard reads them (:mod:`arena.leaderboard`); a ladder is rated set by set
(:mod:`arena.ladder_ratings`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from openskill.models import PlackettLuce
from sqlalchemy import ColumnElement, and_, delete, select
from sqlalchemy.orm import Session, selectinload

from arena.db.models import (
    Bot,
    Match,
    MatchResult,
    Rating,
    RatingHistory,
    Tournament,
    utcnow,
)
from arena.ladder_ratings import contested
from arena.lifecycle import TournamentStatus
from arena.ranking import Entrant, MatchRecord, rate_games
from arena.standings import match_record
from arena.status import TournamentFormat


def rated_tournaments(ruleset: str, *, people: bool = False) -> ColumnElement[bool]:
    """The tournaments whose games count for the ratings of ``ruleset``: THE one place that
    selects them (the ratings rebuild and the leaderboard read nothing else): ``ruleset``'s,
    whose seed was drawn at the start; a tournament whose organizer set the seed
    (``seed_chosen``: its deals could have been picked) is left out, and so are the ladders'
    (rated set by set, :func:`arena.lifecycle.ladder_sets.rate_set`) and the tables where people
    play (their own pool, :mod:`arena.people`), unless ``people`` (an operator's
    ``ARENA_PEOPLE_IN_BOT_RATINGS``: a person is then an entrant of the bots' games, never a row)."""
    formats = [TournamentFormat.LADDER.value] + ([] if people else [TournamentFormat.TABLE.value])
    return and_(
        Tournament.ruleset == ruleset,
        Tournament.seed_chosen.is_(False),
        Tournament.format.not_in(formats),
    )


def own_bot_matches(session: Session, matches: Sequence[Match]) -> set[int]:
    """Ids of those of ``matches`` (seats loaded) in which a person sits against a bot its
    account owns: rated in no pool, the people's or (``ARENA_PEOPLE_IN_BOT_RATINGS``) the bots'."""
    people = {m.id: {s.account_id for s in m.seats if s.account_id is not None} for m in matches}
    bots = {s.bot_id for m in matches if people[m.id] for s in m.seats if s.bot_id is not None}
    if not bots:
        return set()
    owner = dict(session.execute(select(Bot.id, Bot.owner_id).where(Bot.id.in_(bots))).all())
    return {
        m.id
        for m in matches
        if people[m.id] and any(owner.get(s.bot_id) in people[m.id] for s in m.seats if s.bot_id is not None)
    }


def rating_key(entrant: Entrant, house_bot: str | None) -> Entrant:
    """The entrant a seat is rated as across tournaments: a bot by its id, a person by
    ``person:<account id>``, a house seat by :func:`house_key`."""
    if isinstance(entrant, int) or entrant.startswith("person:"):
        return entrant
    return house_key(house_bot, entrant)


def house_key(house_bot: str | None, seat_name: str) -> str:
    """The rating entrant of a house seat across tournaments: its sample bot and its seat name
    (``house:random:house-1``). One entrant for every tournament, not a new one at the prior
    rating each time: a house bot beaten in 20 tournaments is rated as beaten 20 times, so
    cutting the same games into more tournaments inflates no rating (docs/ranking.md)."""
    return f"house:{house_bot or 'house'}:{seat_name}"


def _contested(m: Match, rec: MatchRecord) -> bool:
    """Whether every bot seat of a stored match made a valid decision
    (:func:`arena.ladder_ratings.contested` of ``timings.answered``; a result stored before
    it was recorded counts as contested)."""
    answered = (m.result.timings or {}).get("answered") if m.result is not None else None
    if not isinstance(answered, list) or len(answered) != len(rec.seats):
        return True
    return contested([int(a) for a in answered], [not isinstance(e, int) for e in rec.seats])


def rebuild_ratings(session: Session, ruleset: str, *, people: bool = False) -> int:
    """Recompute the ``ratings`` and ``rating_history`` rows of ``ruleset``; no commit.

    Every finished match of the :func:`rated_tournaments` in which every bot seat made a valid
    decision (no rating from a forfeit or a withdrawal before play) is rated, in order of
    (tournament start time, tournament id, match index), one update per game (:func:`rate_games`: ranks
    by adjusted score where the game has a par, else its places). House bots take part in the
    rating of a game but are not stored (a house seat is one entrant across tournaments:
    :func:`house_key`). Recomputing from scratch makes the table independent of the order in which workers
    finished matches. ``ratings.games`` counts the bot's rated games, ``matches`` its rated
    matches, ``last_played_at`` when its last rated match finished; a ``rating_history`` row
    per bot and finished tournament holds its rating after that tournament. ``people``: the
    tables count too (:func:`rated_tournaments`). Returns the number of bots rated.
    """
    model = PlackettLuce()
    rated = rated_tournaments(ruleset, people=people)
    matches = session.scalars(
        select(Match)
        .join(MatchResult)
        .join(Tournament, Match.tournament_id == Tournament.id)
        .where(rated)
        .options(selectinload(Match.seats), selectinload(Match.result))
        .order_by(Tournament.started_at, Tournament.id, Match.index)
        .execution_options(populate_existing=True)  # no stale empty result (arena.standings)
    ).all()
    house_bots = dict(session.execute(select(Tournament.id, Tournament.house_bot).where(rated)).all())
    own = own_bot_matches(session, matches) if people else set()  # a person against its own bot
    ratings: dict[Entrant, Any] = {}
    games: dict[int, int] = {}
    played_matches: dict[int, int] = {}
    last_played: dict[int, datetime] = {}
    finished = set(session.scalars(select(Tournament.id).where(rated, Tournament.status == TournamentStatus.FINISHED)))
    history: list[RatingHistory] = []
    played: set[int] = set()  # bots of the tournament being folded

    def snapshot(tournament_id: int | None) -> None:
        if tournament_id in finished:
            position = len({h.tournament_id for h in history})
            history.extend(
                RatingHistory(
                    ruleset=ruleset,
                    bot_id=b,
                    tournament_id=tournament_id,
                    position=position,
                    mu=ratings[b].mu,
                    sigma=ratings[b].sigma,
                    games=games[b],
                )
                for b in sorted(played)
            )
        played.clear()

    current: int | None = None
    for m in matches:
        if m.tournament_id != current:
            snapshot(current)
            current = m.tournament_id
        rec = match_record(m)
        if m.id in own or not _contested(m, rec):
            continue  # a seat never made a valid decision (a forfeit, a withdrawal): never rated
        game_list = rec.game_list()
        keys = [rating_key(e, house_bots[m.tournament_id]) for e in rec.seats]
        before = [ratings.setdefault(k, model.rating(name=str(k))) for k in keys]
        when = m.finished_at or (m.result.created_at if m.result else None)
        for k, r in zip(keys, rate_games(model, before, game_list)):
            ratings[k] = r
            if isinstance(k, int):
                games[k] = games.get(k, 0) + len(game_list)
                played_matches[k] = played_matches.get(k, 0) + 1
                if when is not None and (k not in last_played or when > last_played[k]):
                    last_played[k] = when
                played.add(k)
    snapshot(current)
    session.execute(delete(Rating).where(Rating.ruleset == ruleset))
    session.execute(delete(RatingHistory).where(RatingHistory.ruleset == ruleset))
    session.add_all(history)
    now = utcnow()
    for k, r in ratings.items():
        if isinstance(k, int):
            session.add(
                Rating(
                    ruleset=ruleset,
                    bot_id=k,
                    mu=r.mu,
                    sigma=r.sigma,
                    games=games[k],
                    matches=played_matches[k],
                    last_played_at=last_played.get(k),
                    updated_at=now,
                )
            )
    session.flush()
    return len(games)
