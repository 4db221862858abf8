"""Sharding a job's levels (shared/domain/sharding.py; docs/jobs.md section 3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.domain.errors import ValidationFailed
from shared.domain.sharding import MAX_LEVELS, MAX_SHARDS_PER_JOB, Sharding, plan, shard_count, split

pytestmark = pytest.mark.unit

rules_strategy = st.builds(
    lambda a, extra, m: Sharding(a, a + extra, m),
    st.integers(1, 50),
    st.integers(0, 200),
    st.integers(1, 60),
)


@given(st.lists(st.integers(), max_size=400), st.integers(1, 120))
def test_every_item_lands_in_exactly_one_shard_in_order_and_sizes_differ_by_at_most_one(
    items: list[int], count: int
) -> None:
    shards = split(items, count)
    assert len(shards) == count
    assert [item for shard in shards for item in shard] == items
    sizes = [len(shard) for shard in shards]
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)  # the bigger shards first


@given(st.integers(0, 5_000), rules_strategy, st.integers(1, 100))
def test_the_shard_count_respects_the_bounds(items: int, rules: Sharding, cap: int) -> None:
    limit = min(rules.max_shards, cap)
    if items > limit * rules.max_items_per_shard:  # no count can hold: refused
        with pytest.raises(ValidationFailed) as raised:
            shard_count(items, rules, cap)
        assert raised.value.details[0].field == "sharding.max_shards"
        return
    count = shard_count(items, rules, cap)
    if items == 0:
        assert count == 0
        return
    assert 1 <= count <= limit
    sizes = [len(s) for s in split(range(items), count)]
    assert max(sizes) <= rules.max_items_per_shard
    # the minimum holds whenever it can be held together with the maximum
    if items // rules.min_items_per_shard >= -(-items // rules.max_items_per_shard):
        assert min(sizes) >= rules.min_items_per_shard
    # and no more parallelism was possible: one more shard would break a bound
    if count < limit:
        bigger = [len(s) for s in split(range(items), count + 1)]
        assert min(bigger) < rules.min_items_per_shard


@pytest.mark.parametrize(
    ("items", "rules", "expected"),
    [
        (5, Sharding(1, 100, 20), 5),  # as parallel as allowed
        (1000, Sharding(1, 100, 20), 20),  # 50 each
        (1000, Sharding(100, 100, 20), 10),
        (5, Sharding(3, 4, 20), 2),  # the maximum wins: 3 + 2
        (7, Sharding(10, 100, 20), 1),  # fewer items than the minimum: one shard
        (0, Sharding(), 0),
    ],
)
def test_hand_checked_counts(items: int, rules: Sharding, expected: int) -> None:
    assert shard_count(items, rules) == expected


def test_the_worked_example_of_the_api() -> None:
    levels = [["user-1", "user-2", {"id": 3}], ["ref-1", "ref-2"]]
    assert plan(levels, Sharding(1, 100, 20)) == [[["user-1"], ["user-2"], [{"id": 3}]], [["ref-1"], ["ref-2"]]]


def test_too_many_items_for_the_allowed_shards_are_refused_naming_the_field() -> None:
    with pytest.raises(ValidationFailed) as raised:
        shard_count(2_001, Sharding(1, 100, 20))
    assert raised.value.details[0].field == "sharding.max_shards"


def test_a_job_over_the_shard_cap_is_refused() -> None:
    """Two levels that each fit the per-level cap but together pass the job's (an execution's
    history holds the job's shards: shared/domain/sharding.py)."""
    levels = [list(range(500)), list(range(500)), [1]]
    with pytest.raises(ValidationFailed) as raised:
        plan(levels, Sharding(1, 1, 500))
    assert raised.value.details[0].field == "sharding"
    assert MAX_SHARDS_PER_JOB == 800


def test_a_job_of_more_levels_than_the_cap_is_refused_naming_its_data() -> None:
    """Each level, empty or not, is an iteration of the levels Map in the job's one history."""
    with pytest.raises(ValidationFailed) as raised:
        plan([[]] * (MAX_LEVELS + 1), Sharding())
    assert raised.value.details[0].field == "data"
    assert plan([[]] * MAX_LEVELS, Sharding()) == [[]] * MAX_LEVELS


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"min_items_per_shard": 0}, "sharding.min_items_per_shard"),
        ({"max_items_per_shard": 0}, "sharding.max_items_per_shard"),
        ({"max_shards": 0}, "sharding.max_shards"),
        ({"min_items_per_shard": 5, "max_items_per_shard": 4}, "sharding.min_items_per_shard"),
    ],
)
def test_bad_rules_name_their_field(kwargs: dict[str, int], field: str) -> None:
    with pytest.raises(ValidationFailed) as raised:
        Sharding(**kwargs)
    assert raised.value.details[0].field == field
