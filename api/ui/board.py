"""The tournament page's board (``tournament.html`` and its live parts, :mod:`api.ui.live`):
what the page renders of one read of a tournament's matches (:func:`board_view`), the
standings rows and their verdict, the play-until-settled card, the phase and the waiting
card; and the labels of entrants (bots and house seats) every page shows."""

from __future__ import annotations

from typing import Any

from flask_babel import gettext as _

from api.database import db
from api.ui.chart import score_chart
from arena.board import MatchLine, read_board
from arena.db.models import Tournament
from arena.lifecycle.base import aware
from arena.ranking import StandingsReport
from arena.roll_call import absences_of
from arena.standings import bot_names
from arena.status import TournamentStatus

#: Matches per page of a tournament page (/ui/tournaments/<id>?page=N).
MATCHES_PER_PAGE = 100


def entrant_names(ids) -> dict[int, str]:
    """Bot id -> name of the bots ``ids``, for :func:`entrant_label`."""
    # the two columns only: loading whole bots would decrypt every secret (a lost key: a 500)
    return bot_names(db(), ids)


def entrant_label(bot_id: int | None, house: str | None, names: dict[int, str], house_bot: str | None = None) -> str:
    """``name #id`` of a bot; a house seat's name (``house-1``) and, given ``house_bot``, the
    sample bot it plays: ``house-1 (house: search)``."""
    if bot_id is None:
        if house_bot:
            return _("%(name)s (house: %(bot)s)", name=house, bot=house_bot)
        return _("%(name)s (house)", name=house)
    return f"{names.get(bot_id, 'bot')} #{bot_id}"


def settling_view(t: Tournament, names: dict[int, str]) -> dict[str, Any]:
    """What the tournament page says of play until settled (``_settling.html``): ``state`` is
    ``off`` (one round), ``running``, ``settled``, ``max_rounds``, ``cancelled``, or
    ``stopped`` (finished with failed matches before a verdict); the rule, ``rounds`` and the last ``verdict`` with
    the leader's and runner-up's labels."""
    rule = t.until_settled
    if not rule:
        return {"state": "off"}
    verdict = t.settle or None

    def label(e: Any) -> str | None:
        if e is None:
            return None
        return entrant_label(e if isinstance(e, int) else None, e if isinstance(e, str) else None, names, t.house_bot)

    if t.stop_reason:
        state = t.stop_reason
    elif t.status in (TournamentStatus.CREATED, TournamentStatus.RUNNING):
        state = "running"
    else:
        state = "cancelled" if t.status == TournamentStatus.CANCELLED else "stopped"
    return {
        "state": state,
        "rounds": t.rounds or 1,
        "max_rounds": rule.get("max_rounds"),
        "delta": rule.get("delta"),
        "alpha": rule.get("alpha"),
        "beta": rule.get("beta"),
        "verdict": verdict,
        "leader": label((verdict or {}).get("leader")),
        "runner_up": label((verdict or {}).get("runner_up")),
    }


def _interval(mean: float | None, half: float | None) -> tuple[float | None, float | None]:
    if mean is None or half is None:
        return None, None
    return mean - half, mean + half


def standings_rows(
    report: StandingsReport, names: dict[int, str], house_bot: str | None = None
) -> list[dict[str, Any]]:
    """Rows of the standings table (``_standings_table.html``): the standing, its label (house
    seats with ``house_bot``, the tournament's), the raw and adjusted 95% intervals' ends
    (``lo``/``hi``, ``alo``/``ahi``) and ``next``, the :class:`arena.ranking.Neighbour` to
    the entrant ranked below it (None for the last)."""
    below = {n.upper_rank: n for n in report.neighbours}
    rows: list[dict[str, Any]] = []
    for st in report.rows:
        label = entrant_label(
            st.entrant if isinstance(st.entrant, int) else None,
            st.entrant if isinstance(st.entrant, str) else None,
            names,
            house_bot,
        )
        lo, hi = _interval(st.mean_score, st.ci95)
        alo, ahi = _interval(st.adjusted_mean, st.adjusted_ci95)
        nxt = below.get(st.rank) if st.rank else None
        rows.append({"s": st, "label": label, "lo": lo, "hi": hi, "alo": alo, "ahi": ahi, "next": nxt})
    return rows


def settlement(report: StandingsReport) -> dict[str, Any]:
    """The standings' plain verdict for the page (``_standings_table.html``): ``settled``,
    ``top_settled``, ``line`` (the sentence, in the page's language), ``order`` (which mean
    orders and how many games have a par)."""
    ranked = [r for r in report.rows if r.rank]
    open_pairs = [n for n in report.neighbours if not n.significant]
    if report.settled:
        line = _("Ranking settled: every difference between neighbours is significant at 95%.")
    elif not report.games:
        line = _("Ranking not yet settled: no game played yet.")
    elif len(ranked) < len(report.rows):
        line = _("Ranking not yet settled: not every entrant has played yet.")
    else:
        line = _(
            "Ranking not yet settled: %(n)s of %(total)s differences between neighbours are not significant at 95%%.",
            n=len(open_pairs),
            total=len(report.neighbours),
        )
    if report.order_by == "adjusted":
        order = _("Order by adjusted mean (score minus par): every game has a par.")
    else:
        order = _(
            "Order by raw mean: %(n)s of %(total)s games have a par.", n=report.games_with_par, total=report.games
        )
    return {"settled": report.settled, "top_settled": report.top_settled, "line": line, "order": order}


def board_view(t: Tournament, account, page: int = 1) -> dict[str, Any]:
    """What the tournament page and its live parts render, from one read of the tournament's
    matches (:func:`arena.board.read_board`: the progress, the matches playing now, the page
    of the match table and the standings agree): the template variables ``progress``,
    ``playing``, ``matches``, ``shown``, ``hidden``, ``page``, ``pages``, ``rows``,
    ``report``, ``verdict``, ``chart``, ``settling``, ``phase``, ``waiting``."""
    board = read_board(db(), t, account, page=page, per_page=MATCHES_PER_PAGE)
    names = entrant_names(
        [p.bot_id for p in t.participants] + [s.bot_id for line in board.rows + board.playing for s in line.match.seats]
    )

    def seats(line: MatchLine) -> list[str]:
        return [entrant_label(s.bot_id, s.house_bot, names, t.house_bot) for s in line.match.seats]

    rows = standings_rows(board.report, names, t.house_bot)
    adjusted = board.report.order_by == "adjusted"
    return {
        "progress": board.progress(),
        "playing": {
            "rows": [{"m": line.match, "seats": seats(line)} for line in board.playing],
            "total": board.playing_total,
            "hidden": board.hidden_playing,
        },
        "matches": [
            {
                "m": line.match,
                "status": line.status,
                "seats": seats(line),
                "result": line.result,
                "faults": sum(line.result.faults) if line.result else 0,
            }
            for line in board.rows
        ],
        "shown": board.shown,
        "hidden": board.total - board.shown,
        "page": board.page,
        "pages": board.pages,
        "rows": rows,
        "report": board.report,
        "verdict": settlement(board.report),
        "chart": score_chart(
            [
                (r["label"], r["s"].adjusted_mean, r["alo"], r["ahi"])
                if adjusted
                else (r["label"], r["s"].mean_score, r["lo"], r["hi"])
                for r in rows
            ]
        ),
        "settling": settling_view(t, names),
        "phase": phase(t),
        "waiting": waiting_view(t),
    }


def phase(t: Tournament) -> str:
    """``waiting`` while a start waits for offline entrants (:mod:`arena.usecases.entrants`),
    else the tournament's status: the page is live while ``running`` or ``waiting``."""
    if t.status == TournamentStatus.CREATED and t.waiting_until is not None:
        return "waiting"
    return str(t.status)


def waiting_view(t: Tournament) -> dict[str, Any] | None:
    """What the page says of a start waiting for offline entrants (``_waiting.html``): until
    when (``until``, ISO 8601 ``until_iso`` for the countdown), who is offline and why
    (``offline``: :class:`arena.roll_call.Absence`), when they were last checked; None when it
    does not wait."""
    if phase(t) != "waiting":
        return None
    until = aware(t.waiting_until)
    checked = (t.roll_call or {}).get("checked_at")
    return {
        "until": until,
        "until_iso": until.isoformat() if until else "",
        "offline": absences_of(t.roll_call),
        "checked_at": checked,
    }
