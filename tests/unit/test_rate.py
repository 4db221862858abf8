"""GCRA against its guarantees: never more than ``burst + w * per_second`` admitted in a window
of ``w`` seconds, requests spaced by the interval always admitted, and a refused request admitted
when it comes back after ``retry_after_ms``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.domain.rate import Rate, admit

pytestmark = pytest.mark.unit

rates = st.builds(Rate, st.floats(min_value=0.5, max_value=200), st.integers(min_value=1, max_value=20))
arrivals = st.lists(st.floats(min_value=0, max_value=10_000), min_size=1, max_size=300).map(sorted)


def _run(rate: Rate, times: list[float]) -> list[float]:
    tat = None
    admitted = []
    for now in times:
        decision = admit(tat, now, rate)
        if decision.allowed:
            admitted.append(now)
            tat = decision.tat_ms
    return admitted


@given(rates, arrivals, st.floats(min_value=1, max_value=5_000))
def test_no_window_admits_more_than_burst_plus_rate_times_its_length(rate, times, window_ms):
    admitted = _run(rate, times)
    for i, start in enumerate(admitted):
        inside = [t for t in admitted[i:] if t < start + window_ms]
        assert len(inside) <= rate.burst + window_ms / rate.interval_ms + 1e-9


@given(rates, st.integers(min_value=1, max_value=100))
def test_requests_spaced_by_the_interval_are_all_admitted(rate, count):
    times = [i * rate.interval_ms for i in range(count)]
    assert _run(rate, times) == times


@given(rates, st.integers(min_value=1, max_value=50))
def test_a_burst_admits_exactly_burst_at_once(rate, extra):
    assert len(_run(rate, [0.0] * (rate.burst + extra))) == rate.burst


@given(rates, arrivals)
def test_a_refused_request_is_admitted_after_its_retry_after(rate, times):
    tat = None
    for now in times:
        decision = admit(tat, now, rate)
        if decision.allowed:
            tat = decision.tat_ms
            continue
        assert decision.retry_after_ms > 0
        assert admit(tat, now + decision.retry_after_ms, rate).allowed
        if decision.retry_after_ms > 1:  # and not a millisecond sooner
            assert not admit(tat, now + decision.retry_after_ms - 1, rate).allowed


def test_hand_computed_case():
    rate = Rate(per_second=2, burst=3)  # 3 at once, then one every 500 ms
    tat = None
    answers = []
    for now in (0, 0, 0, 0, 499, 500, 600, 1000):
        decision = admit(tat, now, rate)
        answers.append((now, decision.allowed, round(decision.retry_after_ms)))
        tat = decision.tat_ms if decision.allowed else tat
    assert answers == [
        (0, True, 0),  # TAT 500
        (0, True, 0),  # TAT 1000
        (0, True, 0),  # TAT 1500
        (0, False, 500),  # TAT 1500 > 0 + 2 x 500: back at 500
        (499, False, 1),
        (500, True, 0),  # TAT 2000
        (600, False, 400),
        (1000, True, 0),  # TAT 2500
    ]


def test_a_rate_needs_a_positive_rate_and_a_burst():
    with pytest.raises(ValueError, match="per_second"):
        Rate(0, 1)
    with pytest.raises(ValueError, match="burst"):
        Rate(1, 0)
