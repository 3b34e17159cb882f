"""A dishonest organizer against the seed (issue 28, item 6).

The attack: create a tournament, read what the API shows of its seed, predict the deals of its
first match, cancel and create again until a draw suits the bot the organizer favours, then
start the one that suits and check the predictions against the logs of the played match.
"""

from __future__ import annotations

import engine
from arena import fairness
from arena.db.models import Tournament
from tests.api.conftest import eager_client, register_checked_bot

RULESET = "million_doubt"
GAMES = 4
TRIES = 5
#: The cards the organizer wants in its bot's hands: twos and jokers (the strongest ranks).
STRONG = ("2", "JK")


def _strength(cards: list[str]) -> int:
    return sum(1 for c in cards if c == "JK" or c.startswith("2"))


def predict(t: dict, favoured: int) -> list[list[str]] | None:
    """The favoured bot's hand in each game of match 0, from what the organizer reads of
    tournament ``t`` (its seed); None when nothing it reads tells the deals."""
    seed = t.get("seed")
    if seed is None:
        return None
    a, b = sorted(t["participants"])  # two bots: one match, seats (a, b), swapped every odd game
    attempt = fairness.attempt_seed(fairness.match_seed(seed, t["id"], 0), 1)
    hands = []
    for i in range(GAMES):
        seats = [a, b] if i % 2 == 0 else [b, a]
        game = engine.new_game(RULESET, engine.make_options(RULESET, {}), fairness.game_seed(attempt, i))
        hands.append(engine.format_cards(game.hands[seats.index(favoured)]))
    return hands


def played_hands(log: dict, favoured_player: int) -> list[list[str]]:
    """The favoured bot's hand in each game of a stored match log (its deal events)."""
    out = []
    for g in log["games"]:
        seat = g["seats"].index(favoured_player)
        deal = next(e for e in g["engine_log"]["events"] if e.get("type") == "hand" and e["seat"] == seat)
        out.append(deal["cards"])
    return out


def test_a_dishonest_organizer_predicts_and_picks_the_deals(client, accounts, bot_server, sessionmaker):
    org = accounts.organizer("mallory")
    ann, ben = accounts.contestant("ann"), accounts.contestant("ben")
    favoured = register_checked_bot(client, ann, bot_server.url + "/", [RULESET], "friend")
    other = register_checked_bot(client, ben, bot_server.url + "/", [RULESET], "rival")
    body = {"ruleset": RULESET, "participants": [favoured, other], "games_per_pairing": GAMES}
    draws: list[tuple[int, dict, list[list[str]] | None]] = []
    for _ in range(TRIES):  # create, read, predict; cancel the draws that do not suit
        r = client.post("/api/v1/tournaments", json=body, headers=org)
        assert r.status_code == 201, r.json
        seen = client.get(f"/api/v1/tournaments/{r.json['id']}", headers=org).json
        hands = predict(seen, favoured)
        draws.append((sum(_strength(h) for h in hands) if hands else -1, seen, hands))
    draws.sort(key=lambda d: d[0], reverse=True)
    for _, seen, _ in draws[1:]:
        assert client.post(f"/api/v1/tournaments/{seen['id']}/cancel", headers=org).status_code == 200
    _, chosen, predicted = draws[0]
    r = eager_client(client).post(f"/api/v1/tournaments/{chosen['id']}/start", headers=org)
    assert r.status_code == 202, r.json
    done = client.get(f"/api/v1/tournaments/{chosen['id']}", headers=org).json
    assert done["status"] == "finished", done
    (match,) = client.get(f"/api/v1/tournaments/{chosen['id']}/matches", headers=org).json["items"]
    log = client.get(f"/api/v1/matches/{match['id']}/log", headers=org).json
    favoured_player = [s["bot_id"] for s in match["seats"]].index(favoured)
    actual = played_hands(log, favoured_player)
    # Today the attack works: every hand of the favoured bot was known before the start, and the
    # organizer kept the draw that dealt it the most twos and jokers.
    assert predicted == actual
    strengths = sorted(d[0] for d in draws)
    assert _strength_total(actual) == strengths[-1]
    with sessionmaker() as s:
        assert s.get(Tournament, chosen["id"]).seed == chosen["seed"]


def _strength_total(hands: list[list[str]]) -> int:
    return sum(_strength(h) for h in hands)
