"""The tests' waits (tests/support/eventually.py): a look at once, then waits growing by half up to
MAX_POLL_S, a last look at the deadline; measured on a fake clock."""

from __future__ import annotations

import itertools

import pytest

from tests.support import eventually as waiting

pytestmark = pytest.mark.unit


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(waiting.time, "monotonic", fake.monotonic)
    monkeypatch.setattr(waiting.time, "sleep", fake.sleep)
    return fake


def test_a_wait_that_never_ends_looks_about_seventy_times_in_twenty_seconds_and_last_at_the_deadline(clock) -> None:
    looks: list[float] = []

    def probe() -> bool:
        looks.append(clock.now)
        return False

    assert waiting.until(probe, timeout=20) is False
    assert looks[0] == 0.0
    assert looks[-1] == pytest.approx(20.0)
    assert 60 <= len(looks) <= 75  # at a fixed 50 ms it was 401
    gaps = [b - a for a, b in itertools.pairwise(looks)]
    assert gaps[0] == pytest.approx(waiting.POLL_S)
    assert max(gaps) == pytest.approx(waiting.MAX_POLL_S)
    # each wait at least the one before (but the last, cut at the deadline)
    assert all(later >= earlier - 1e-9 for earlier, later in itertools.pairwise(gaps[:-1]))


def test_a_condition_that_comes_true_is_seen_at_most_the_longest_wait_late(clock) -> None:
    def probe() -> float | None:
        return clock.now if clock.now >= 7.0 else None

    seen = waiting.until(probe, timeout=20)
    assert 7.0 <= seen <= 7.0 + waiting.MAX_POLL_S


def test_eventually_raises_the_last_error_at_the_deadline_and_returns_once_the_check_passes(clock) -> None:
    def never() -> None:
        raise AssertionError(f"still not at {clock.now:.2f}")

    with pytest.raises(AssertionError, match=r"still not at 5\.00"):
        waiting.eventually(never, timeout=5)

    def soon() -> str:
        assert clock.now >= 6.0
        return "done"

    assert waiting.eventually(soon, timeout=5) == "done"


def test_a_first_wait_longer_than_the_longest_stays_as_asked(clock) -> None:
    looks: list[float] = []
    waiting.until(lambda: looks.append(clock.now), timeout=3, poll=1.0)
    assert looks == [0.0, 1.0, 2.0, 3.0]
