"""Cards (C-1), forms and readings (C-3, C-4), comparison (C-5), locks (C-8), order (C-9)."""

import pytest

import engine
from engine.cards import JOKER, CardError, format_card, parse_card, parse_cards
from engine.forms import Readings, beating, choose, readings, satisfies_lock, split

R = "3456789TJQKA2"


def rmask(ranks: str) -> int:
    m = 0
    for r in ranks:
        m |= 1 << R.index(r)
    return m


def read(cards, wild=0, declared=None):
    nat, j = split(parse_cards(cards))
    return readings(nat, j, wild, [R.index(d) for d in declared] if declared else None)


def test_card_round_trip_covers_the_54_card_deck():
    names = [r + s for r in R for s in "SHDC"] + ["JK"]
    assert [format_card(parse_card(n)) for n in names] == names
    assert parse_card("3S") == 0 and parse_card("2C") == 51 and parse_card("JK") == JOKER


@pytest.mark.parametrize("bad", ["1S", "3X", "jk", "10H", "", "TH ", None, 5])
def test_bad_card_string_is_named_in_the_error(bad):
    with pytest.raises(CardError) as e:
        parse_card(bad)
    assert repr(bad) in str(e.value)


def test_group_reading_with_joker_and_joker_pair():
    assert read(["5S", "JK"]) == Readings(group=rmask("5"))
    assert read(["JK", "JK"]) == Readings(joker_pair=True)
    assert read(["JK"]) == Readings(joker=True)
    assert read(["5S", "6S"]).empty()  # not a pair, not stairs (C-3)


def test_stairs_connect_k_a_2_but_not_2_3():
    assert read(["KS", "AS", "2S"]) == Readings(stairs=rmask("K"))
    assert read(["2H", "3H", "4H"]).empty()
    assert read(["5S", "6S", "7H"]).empty()  # one suit only


def test_joker_in_stairs_stands_in_at_either_end_and_declared_reading_binds():
    r = read(["5S", "6S", "JK"])
    assert r.stairs == rmask("45")
    assert read(["5S", "6S", "JK"], declared=["4"]).stairs == rmask("4")
    assert read(["5S", "6S", "JK"], declared=["9"]).empty()


def test_face_down_cards_are_wild_md3():
    # one face-down card with a face-up 3 can only be a pair of 3s (MD-3)
    assert read(["3S"], wild=1) == Readings(group=rmask("3"))
    two = read([], wild=2)
    assert two.group == (1 << 13) - 1 and two.joker_pair
    # MD-5 example: 5D + two face-down read as 3-4-5 / 4-5-6 / 5-6-7 stairs or a triple of 5s
    r = read(["5D"], wild=2)
    assert r.group == rmask("5") and r.stairs == rmask("345")


def test_beating_in_normal_and_reversed_order():
    ref = Readings(single=rmask("K"))
    assert beating(Readings(single=rmask("A")), ref, False).single
    assert not beating(Readings(single=rmask("Q")), ref, False).single
    assert beating(Readings(single=rmask("Q")), ref, True).single  # C-9
    assert beating(Readings(joker=True), ref, False).joker
    assert beating(Readings(single=rmask("2")), Readings(joker=True), False).empty()
    # stairs compare by their lowest rank in the current order (C-5)
    st = Readings(stairs=rmask("3"))
    assert beating(Readings(stairs=rmask("4")), st, False).stairs
    assert beating(Readings(stairs=rmask("4")), Readings(stairs=rmask("5")), True).stairs
    # the joker pair beats every pair and nothing beats it
    assert beating(Readings(joker_pair=True), Readings(group=rmask("2")), False).joker_pair
    assert beating(Readings(group=rmask("2")), Readings(joker_pair=True), False).empty()


def test_c4_choice_group_before_stairs_strongest_stairs():
    both = Readings(group=rmask("5"), stairs=rmask("34"))
    assert choose(both, False) == Readings(group=rmask("5"))
    assert choose(Readings(stairs=rmask("345")), False) == Readings(stairs=rmask("5"))
    assert choose(Readings(stairs=rmask("345")), True) == Readings(stairs=rmask("3"))


def test_suit_lock_needs_a_different_card_per_locked_suit():
    S, H, D = 0, 1, 2
    nat = parse_cards(["JH", "JD"])
    assert not satisfies_lock((H, S), nat, 0)
    assert satisfies_lock((H, S), parse_cards(["JH"]), 1)
    assert satisfies_lock((S,), [], 1)
    assert not satisfies_lock((S, S), parse_cards(["9S"]), 0)
    assert satisfies_lock((), nat, 0)
    assert D == 2


def test_options_are_validated_with_clear_errors():
    assert engine.make_options("jdf", {"number_lock": True}).number_lock
    with pytest.raises(engine.OptionsError, match="unknown option 'fiveskip'"):
        engine.make_options("jdf", {"fiveskip": True})
    with pytest.raises(engine.OptionsError, match="LR-4"):
        engine.make_options("million_doubt", {"five_skip": True})
    with pytest.raises(engine.OptionsError, match="must be an integer"):
        engine.make_options("million_doubt", {"burst_score": "11"})
    with pytest.raises(engine.OptionsError, match="must be true or false"):
        engine.make_options("trump_millionaire", {"eleven_back": 1})
    with pytest.raises(engine.OptionsError, match="unknown rule set"):
        engine.new_game("poker")
    assert engine.make_options("trump_millionaire", {}).to_dict()["rate_choices"] == [1, 2, 3]


def test_time_bank_arithmetic_time1():
    rules = engine.TimeRules.from_seconds(60, 10, 60)
    bank = engine.TimeBank(rules)
    assert bank.spend(5_000) and bank.remaining_ms == 60_000  # capped
    assert bank.spend(40_000) and bank.remaining_ms == 30_000
    assert not bank.spend(30_001) and bank.remaining_ms == 0  # TIME-3
    with pytest.raises(ValueError):
        engine.TimeRules(initial_ms=10, increment_ms=0, cap_ms=5)


def test_jdf_exchange_never_asks_a_retired_seat_fault2():
    st = {"game_in_set": 2, "previous_ranks": {"0": 1, "1": 2, "2": 3, "3": 4}}
    g = engine.from_setup(
        "jdf",
        {},
        {
            "hands": {
                "0": ["9S", "TS", "3H", "3D"],
                "1": ["KS", "6S", "2C"],
                "2": ["AD", "4D"],
                "3": ["2S", "2H", "4C"],
            },
            "leader": 3,
            "state": st,
        },
    )
    assert g.decision().seat == 0 and g.decision().kind == "give"
    g.forfeit(1, "timeout")  # the fugo retires while the daifugo is asked
    g.apply(0, {"type": "give", "cards": ["3H", "3D"]})
    d = g.decision()
    assert d.kind == "play" and d.seat == 3  # the fugo was not asked; play starts
    assert g.still_in == [True, False, True, True] and g.hands[1] == []
    assert sorted(engine.format_cards(g.hands[2])) == ["4D", "6S"]  # got the fugo's weakest card


@pytest.mark.parametrize("ruleset", ["jdf", "million_doubt"])
def test_end_of_game_hands_are_for_the_log_only_c11(ruleset):
    """C-11: the hands left at a game's end are in the full log only; with the cards played
    they would name the unrevealed face-down cards (MD-8) or the cards exchanged between two other seats."""
    import random

    from engine.selfplay import random_action

    g = engine.new_game(ruleset, seed=1)
    rng = random.Random(1)
    while not (g.over if ruleset == "million_doubt" else g.game_index > 0):  # one game played
        g.apply(*random_action(g, rng))
    ends = [e for e in g.history(None, 0) if e["type"] == "game_end"]
    assert ends and "hands" in ends[0]  # the full log keeps them (post-game record)
    assert sum(map(len, ends[0]["hands"].values())) > 0  # some cards were left
    key = "ranks" if ruleset == "jdf" else "scores"
    for seat in range(g.seats):
        seen = [e for e in g.history(seat, 0) if e["type"] == "game_end"]
        assert seen and "hands" not in seen[0] and seen[0][key] == ends[0][key]
