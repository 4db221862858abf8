"""GCRA in DynamoDB (shared/store/rate.py): the conditional writes admit exactly what the
algorithm admits, also when many requests race for the same limit."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from shared.domain.rate import Rate, admit
from shared.store.rate import DynamoRateLimiter

pytestmark = pytest.mark.integration


@pytest.fixture
def limiter(aws: Any) -> DynamoRateLimiter:
    return DynamoRateLimiter()


def test_the_store_admits_what_the_algorithm_admits(limiter):
    rate = Rate(per_second=2, burst=3)
    tat = None
    for now in (0, 0, 0, 0, 499, 500, 600, 1000, 5000, 5000, 5000, 5000, 5001):
        expected = admit(tat, now, rate)
        got = limiter.take("tenant-a", rate, now_ms=now)
        assert (got.allowed, round(got.retry_after_ms)) == (expected.allowed, round(expected.retry_after_ms)), now
        tat = expected.tat_ms if expected.allowed else tat


def test_racing_requests_admit_exactly_the_burst_then_the_rate(limiter):
    rate = Rate(per_second=10, burst=5)
    answers: list[bool] = []
    barrier = threading.Barrier(20)

    def request(now: float) -> None:
        mine = DynamoRateLimiter()  # each its own function instance: no shared guess
        barrier.wait()
        answers.append(mine.take("busy", rate, now_ms=now).allowed)

    threads = [threading.Thread(target=request, args=(1_000.0,)) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers.count(True) == 5
    later = [limiter.take("busy", rate, now_ms=1_500.0).allowed for _ in range(10)]
    assert later.count(True) == 5  # half a second at 10 a second


def test_limits_are_independent_and_a_refusal_says_when_to_come_back(limiter):
    rate = Rate(per_second=1, burst=1)
    assert limiter.take("a", rate, now_ms=0).allowed
    refused = limiter.take("a", rate, now_ms=250)
    assert not refused.allowed
    assert refused.retry_after_ms == pytest.approx(750)
    assert limiter.take("b", rate, now_ms=250).allowed
    assert limiter.take("a", rate, now_ms=250 + refused.retry_after_ms).allowed


def test_several_requests_are_taken_at_once_all_or_none(limiter: DynamoRateLimiter) -> None:
    rate = Rate(per_second=10, burst=5)  # an interval of 100 ms
    assert limiter.take("lease", rate, now_ms=0, count=3).allowed  # the TAT moves 300 ms
    assert not limiter.take("lease", rate, now_ms=0, count=3).allowed  # 2 left of the burst
    assert limiter.take("lease", rate, now_ms=0, count=2).allowed
    refused = limiter.take("lease", rate, now_ms=0, count=1)
    assert not refused.allowed
    assert refused.retry_after_ms == pytest.approx(100)
    with pytest.raises(ValueError, match="take 1 to 5"):
        limiter.take("lease", rate, now_ms=0, count=6)
