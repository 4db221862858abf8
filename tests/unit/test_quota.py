"""The quota's arithmetic: a reservation is admitted exactly when it keeps the count within the
limit, and every counted task that ends frees one place in its own tenant."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.domain.quota import ceiling, fits, freed, limit_of

pytestmark = pytest.mark.unit


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=10_000), st.integers(1, 200))
def test_a_reservation_fits_exactly_when_the_count_stays_within_the_limit(live, max_tasks, wanted):
    assert fits(live, max_tasks, wanted) is (live + wanted <= max_tasks)
    assert fits(live, max_tasks, wanted) is (live <= ceiling(max_tasks, wanted))


def test_a_tenant_with_no_count_yet_has_its_whole_quota():
    assert fits(None, 3, 3)
    assert not fits(None, 3, 4)


def test_the_last_place_is_given_and_no_more():
    assert fits(2, 3, 1)
    assert not fits(3, 3, 1)
    assert not fits(4, 3, 1)  # a limit lowered below the count refuses everything


def test_a_reservation_is_of_one_task_at_least():
    with pytest.raises(ValueError, match="one task at least"):
        ceiling(10, 0)


def test_a_tenant_without_a_limit_of_its_own_has_the_default():
    assert limit_of(None, 1_000) == 1_000
    assert limit_of(5, 1_000) == 5


def test_each_tenant_is_freed_one_place_per_counted_task():
    assert freed(["a", None, "b", "a", None]) == {"a": 2, "b": 1}
    assert freed([None, None]) == {}
