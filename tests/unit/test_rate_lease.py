"""Leasing a tenant's request limit (shared/services/rate_lease.py) against GCRA's own guarantee
(shared/domain/rate.py): however many API instances lease from the one limit, no window admits
more than ``burst + (w + one lease) * per_second``; a flood at one instant gets the burst and no
more; one write admits a lease's worth at a steady rate."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.rate import Decision, Rate, admit
from shared.services.rate_lease import LEASE_S, LeasingRateLimiter, lease_size

pytestmark = pytest.mark.unit


@dataclass
class SharedLimit:
    """The table's GCRA item, in memory: one conditional write per take."""

    tats: dict[str, float] = field(default_factory=dict)
    writes: int = 0

    def take(self, key: str, rate: Rate, now_ms: float | None = None, count: int = 1) -> Decision:
        assert now_ms is not None
        assert 1 <= count <= rate.burst
        self.writes += 1
        decision = admit(self.tats.get(key), now_ms, rate, count)
        if decision.allowed:
            self.tats[key] = decision.tat_ms
        return decision


def test_a_lease_is_a_tenth_of_a_second_of_the_rate_within_the_burst():
    assert lease_size(Rate(100, 200)) == 10
    assert lease_size(Rate(100, 5)) == 5
    assert lease_size(Rate(5, 10)) == 1  # under two a lease: one request a write, as before
    assert lease_size(Rate(10_000, 20_000)) == 1_000


def test_a_steady_tenant_costs_one_write_per_lease_not_per_request():
    limit = SharedLimit()
    leasing = LeasingRateLimiter(limit)
    rate = Rate(100, 200)
    admitted = sum(leasing.take("tenant:a", rate, now_ms=i * 20.0).allowed for i in range(1_000))  # 50 a second
    assert admitted == 1_000
    assert limit.writes <= 1_000 / 5 + 1  # a lease of 10 lasts 100 ms: 5 requests at this pace


@settings(max_examples=150, deadline=None)
@given(
    per_second=st.integers(min_value=1, max_value=400),
    burst=st.integers(min_value=1, max_value=300),
    instances=st.integers(min_value=1, max_value=6),
    requests=st.lists(
        st.tuples(st.integers(min_value=0, max_value=5), st.integers(min_value=0, max_value=300).map(float)),
        min_size=1,
        max_size=400,
    ),
)
def test_no_window_admits_more_than_the_limit_however_many_instances_lease(per_second, burst, instances, requests):
    rate = Rate(per_second, burst)
    limit = SharedLimit()
    fleet = [LeasingRateLimiter(limit) for _ in range(instances)]
    admitted = sorted(
        at for which, at in sorted(requests, key=lambda r: r[1]) if fleet[which % instances].take("t", rate, at).allowed
    )
    # GCRA's guarantee, widened by one lease: in any window of w ms at most
    # burst + (w + LEASE_S) * per_second requests
    for i, start in enumerate(admitted):
        for j in range(i, len(admitted)):
            window = admitted[j] - start
            assert j - i + 1 <= burst + (window + LEASE_S * 1000) * per_second / 1000 + 1e-6


@pytest.mark.parametrize("instances", [1, 3])
def test_a_flood_at_one_instant_is_admitted_its_burst_and_no_more(instances):
    limit = SharedLimit()
    fleet = [LeasingRateLimiter(limit) for _ in range(instances)]
    rate = Rate(100, 25)  # leases of 10
    admitted = sum(fleet[i % instances].take("t", rate, now_ms=0.0).allowed for i in range(200))
    assert admitted == 25


def test_a_tenant_at_its_limit_is_refused_with_the_limits_own_retry_after():
    limit = SharedLimit()
    leasing = LeasingRateLimiter(limit)
    rate = Rate(100, 10)  # a lease is the whole burst
    assert all(leasing.take("t", rate, now_ms=0.0).allowed for _ in range(10))
    refused = leasing.take("t", rate, now_ms=0.0)
    assert not refused.allowed
    assert refused.retry_after_ms == pytest.approx(10.0)  # the next request's interval
    assert leasing.take("t", rate, now_ms=10.0).allowed


def test_unused_leased_requests_lapse_after_the_lease():
    limit = SharedLimit()
    leasing = LeasingRateLimiter(limit)
    rate = Rate(100, 200)
    assert leasing.take("t", rate, now_ms=0.0).allowed
    writes = limit.writes
    assert leasing.take("t", rate, now_ms=LEASE_S * 1000 + 1).allowed  # past the lease: a new one
    assert limit.writes == writes + 1
