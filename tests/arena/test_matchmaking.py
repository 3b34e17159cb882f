"""The ladder's matchmaking (arena.sources.ladder.form_tables), pure: the rules of
docs/ladder.md, "The tick"."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.sources.ladder import Candidate, ConfigError, LadderConfig, form_tables, pair

NO_JITTER = LadderConfig(jitter=0.0)


def _c(i: int, owner: int | None = None, mu: float = 25.0, sets: int = 20, free: int = 1, idle: float | None = 60.0):
    return Candidate(i, i if owner is None else owner, mu, 8.0, sets, free, idle)


@settings(max_examples=60, deadline=None)
@given(
    owners=st.lists(st.integers(1, 5), min_size=2, max_size=24),
    seats=st.sampled_from([2, 4]),
    seed=st.integers(0, 1000),
)
def test_never_two_bots_of_one_owner_at_a_table_and_never_past_their_free_sets(owners, seats, seed):
    rng = random.Random(seed)
    cands = [
        Candidate(i, o, rng.uniform(10, 40), 5.0, rng.randrange(20), rng.randrange(3)) for i, o in enumerate(owners)
    ]
    tables = form_tables(cands, seats, LadderConfig(), recent={}, met={}, rng=rng)
    by_id = {c.entry_id: c for c in cands}
    used: dict[int, int] = {}
    for t in tables:
        assert len(t) == seats == len(set(t))
        owners_at = [by_id[e].owner_id for e in t]
        assert len(owners_at) == len(set(owners_at))
        for e in t:
            used[e] = used.get(e, 0) + 1
    assert all(used[e] <= by_id[e].free for e in used)


def test_rating_proximity_pairs_neighbours_and_placement_goes_first():
    cands = [_c(i, mu=10.0 + 5 * i) for i in range(6)]
    tables = form_tables(cands, 2, NO_JITTER, recent={}, met={}, rng=random.Random(1))
    assert sorted(tuple(sorted(t)) for t in tables) == [(0, 1), (2, 3), (4, 5)]
    new = _c(9, mu=25.0, sets=0, idle=None)  # provisional: seated first, by its rating
    tables = form_tables([*cands[:3], new], 2, NO_JITTER, recent={}, met={}, rng=random.Random(1))
    assert any(9 in t for t in tables)


def test_the_pair_cap_and_the_rematch_penalty():
    a, b, c = _c(1, mu=25), _c(2, mu=25.5), _c(3, mu=29)
    cfg = LadderConfig(jitter=0.0, pair_free_sets=3, pair_sets_per_hour=2, pair_cap_field=3)
    capped = form_tables([a, b, c], 2, cfg, recent={pair(1, 2): 2}, met={pair(1, 2): 10}, rng=random.Random(1))
    assert all(set(t) != {1, 2} for t in capped)  # met enough, and twice this hour: not again
    cfg = LadderConfig(jitter=0.0, pair_free_sets=3, pair_sets_per_hour=2, rematch_penalty=0.0, pair_cap_field=3)
    young = form_tables([a, b, c], 2, cfg, recent={pair(1, 2): 2}, met={pair(1, 2): 2}, rng=random.Random(1))
    assert any(set(t) == {1, 2} for t in young)  # not met enough yet: the cap does not apply
    penalised = form_tables(
        [a, b, c], 2, LadderConfig(jitter=0.0, rematch_penalty=10), recent={pair(1, 2): 1}, met={}, rng=random.Random(1)
    )
    assert all(set(t) != {1, 2} for t in penalised)


def test_the_pair_cap_applies_from_a_field_of_pair_cap_field_bots():
    """Below ``pair_cap_field`` bots that can play, a pair past its cap meets again (a small
    field has too few opponents for the cap to leave a choice by rating); house entries do not
    count, a bot that can play now but has no free set does."""
    a, b, c, busy = _c(1, mu=25), _c(2, mu=25.5), _c(3, mu=29), _c(4, mu=25.2, free=0)
    house = [Candidate(100, None, 25.0, 8.0, 0, 1 << 30)]
    cfg = LadderConfig(jitter=0.0, pair_free_sets=3, pair_sets_per_hour=2, rematch_penalty=0.0, pair_cap_field=4)
    capped = {pair(1, 2): 2}, {pair(1, 2): 10}

    def tables(cands: list[Candidate]) -> list[tuple[int, ...]]:
        return form_tables(cands, 2, cfg, recent=capped[0], met=capped[1], rng=random.Random(1), house=house)

    assert tables([a, b]) == [(1, 2)] or tables([a, b]) == [(2, 1)]  # a field of 2: not capped
    assert all(set(t) != {1, 2} for t in tables([a, b, c, busy]))  # 4 (one busy): capped
    with pytest.raises(ConfigError) as err:
        LadderConfig.from_dict({"pair_cap_field": -1})
    assert err.value.key == "pair_cap_field"


def test_house_entries_fill_only_when_allowed_and_once_a_table():
    lone = [_c(1)]
    house = [Candidate(100 + i, None, 25.0, 8.0, 0, 1 << 30) for i in range(3)]
    assert (
        form_tables(
            lone, 4, LadderConfig(fill_with_house_bots=False), recent={}, met={}, rng=random.Random(1), house=house
        )
        == []
    )
    (table,) = form_tables(lone, 4, LadderConfig(), recent={}, met={}, rng=random.Random(1), house=house)
    assert sorted(table) == [1, 100, 101, 102]


def test_a_config_out_of_range_names_its_key():
    with pytest.raises(ConfigError) as err:
        LadderConfig.from_dict({"pair_sets_per_hour": 0})
    assert err.value.key == "pair_sets_per_hour"
    with pytest.raises(ConfigError, match="unknown key"):
        LadderConfig.from_dict({"speed": 1})
    with pytest.raises(ConfigError) as err:
        LadderConfig.from_dict({"house_bots": ["nobody"]})
    assert err.value.key == "house_bots"
    assert LadderConfig.from_dict(LadderConfig().to_dict()) == LadderConfig()


def _rated(i: int, mu: float, sigma: float, idle: float = 60.0) -> Candidate:
    return Candidate(i, i, mu, sigma, 20, 1, idle)


def test_the_entry_least_sure_of_its_place_is_seated_first():
    """``order_first``: after the provisional entries, the entry whose place in the table is
    least sure (an uncertain rating between two settled ones) anchors the first table, even
    when the settled ones have waited longer."""
    settled = [_rated(i, 10.0 * (i + 1), 1.0, idle=600.0 - 100 * i) for i in range(4)]  # 7 sigmas apart
    uncertain = _rated(9, 26.0, 6.0, idle=60.0)
    one = LadderConfig(max_sets_per_tick=1)
    (table,) = form_tables([*settled, uncertain], 2, one, recent={}, met={}, rng=random.Random(1))
    assert 9 in table
    old = LadderConfig(max_sets_per_tick=1, order_first=False, sigma_proximity=False, jitter=0.0)
    (table,) = form_tables([*settled, uncertain], 2, old, recent={}, met={}, rng=random.Random(1))
    assert set(table) == {0, 1}  # by idle time alone the longest idle anchors, with its neighbour


def test_sigma_proximity_lets_an_uncertain_entry_meet_a_farther_opponent():
    anchor = Candidate(1, 1, 25.0, 1.0, 0, 1, None)  # provisional: seated first
    near_settled, far_uncertain = _rated(2, 27.0, 0.5), _rated(3, 31.0, 8.0)
    cands = [anchor, near_settled, far_uncertain]
    cfg = LadderConfig(jitter=0.0, max_sets_per_tick=1)
    (table,) = form_tables(cands, 2, cfg, recent={}, met={}, rng=random.Random(1))
    assert set(table) == {1, 3}  # 6 points are 0.74 sigmas, 2 points are 1.79
    mu_only = LadderConfig(jitter=0.0, max_sets_per_tick=1, sigma_proximity=False)
    (table,) = form_tables(cands, 2, mu_only, recent={}, met={}, rng=random.Random(1))
    assert set(table) == {1, 2}


def test_a_settled_entry_meets_both_of_its_neighbours_over_a_few_ticks():
    """Six settled entries 10 points (7 sigmas) apart, one set a tick each: the rematch
    penalty moves each inner entry between its two neighbours."""
    cands = [_rated(i, 10.0 * (i + 1), 1.0) for i in range(6)]
    recent: dict[tuple[int, int], int] = {}
    rng = random.Random(7)
    for _ in range(6):
        for t in form_tables(cands, 2, LadderConfig(), recent=recent, met={}, rng=rng):
            p = pair(*t)
            recent[p] = recent.get(p, 0) + 1
    for i in range(1, 5):
        assert recent.get(pair(i - 1, i), 0) >= 1 and recent.get(pair(i, i + 1), 0) >= 1, (i, recent)
