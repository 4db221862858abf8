"""The firing domain's small rules, each at its edges (shared/domain/firing.py): where a scan
starts, which occurrence a recurring task arms after an outage, what a retry's message carries,
and when a paused task resumes. Written for the survivors of `make mutation`: each expected value
is worked out here from the rule's words, not read back from the code."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.domain import schedules as sched
from shared.domain.firing import Staged, Timing, next_occurrence, paused_next_fire, resume_due, scan_window
from shared.domain.tasks import Misfire
from shared.domain.times import to_ms
from shared.services.firing.scan import GroupScan, scan_group

pytestmark = pytest.mark.unit

T0 = to_ms(datetime(2026, 11, 29, 12, 0, tzinfo=UTC))
TIMING = Timing(look_ahead_ms=120_000, misfire_tolerance_ms=60_000, max_catch_up_ms=3_600_000)
MINUTELY = sched.Every(60, start=datetime(2026, 11, 29, tzinfo=UTC))  # every minute on the minute
ONCE = sched.At(datetime(2026, 11, 29, 12, 0, tzinfo=UTC))


def test_a_first_scan_starts_one_look_ahead_back_and_a_marked_one_at_its_mark() -> None:
    assert scan_window(None, T0, TIMING) == (T0 - 120_000, T0 + 120_000)
    assert scan_window(T0 - 5_000, T0, TIMING) == (T0 - 5_000, T0 + 120_000)
    assert scan_window(T0 + 500_000, T0, TIMING) == (T0 + 120_000, T0 + 120_000)  # a mark ahead: nothing
    backlog = T0 - 10 * 3_600_000  # ten hours behind: one hour of it at a time
    assert scan_window(backlog, T0, TIMING) == (backlog, backlog + 3_600_000)


def test_a_recurring_task_arms_its_next_occurrence_unless_the_outage_passed_it_by_more_than_the_tolerance() -> None:
    due = T0  # the occurrence that just ran
    assert next_occurrence(MINUTELY, due, T0 + 1_000, TIMING) == T0 + 60_000  # on time: the next one
    # late, but the next one is within the tolerance of now: still the next one (no burst, no gap)
    assert next_occurrence(MINUTELY, due, T0 + 60_000 + 60_000, TIMING) == T0 + 60_000
    # the next one passed by more than the tolerance: the first from now on
    assert next_occurrence(MINUTELY, due, T0 + 60_000 + 60_001, TIMING) == T0 + 180_000
    assert next_occurrence(MINUTELY, due, T0 + 10 * 60_000 + 30_000, TIMING) == T0 + 11 * 60_000
    assert next_occurrence(ONCE, due, T0 + 1_000, TIMING) is None  # a one-shot has no next
    ending = sched.Every(
        60, start=datetime(2026, 11, 29, tzinfo=UTC), end=datetime(2026, 11, 29, 12, 0, 30, tzinfo=UTC)
    )
    assert next_occurrence(ending, due, T0 + 1_000, TIMING) is None  # past its end


def test_a_retrys_message_is_the_next_attempt_with_nothing_of_the_last_ones_hold() -> None:
    held = Staged("t", T0, "r", attempt=2, one_shot=False, throttled_ms=700).hold(T0 + 5_000, (("lim", 3),), T0 + 100)
    assert (held.held, held.start_ms, held.booked, held.ready_ms) == (True, T0 + 5_000, (("lim", 3),), T0 + 100)
    retry = held.next_attempt()
    assert retry == Staged("t", T0, "r", attempt=3, one_shot=False, throttled_ms=700)
    assert (retry.held, retry.start_ms, retry.booked, retry.ready_ms) == (False, None, (), None)
    assert held.next_attempt(throttled_ms=1_900).throttled_ms == 1_900  # the run's total so far, when given
    assert held.next_attempt(throttled_ms=0).throttled_ms == 0


def test_a_resume_arms_what_is_still_ahead_and_a_missed_occurrence_by_its_misfire() -> None:
    ahead, missed, now = T0 + 30_000, T0 - 90_000, T0
    for misfire in Misfire:
        assert resume_due(MINUTELY, ahead, misfire, now) == ahead
        assert resume_due(MINUTELY, now, misfire, now) == now  # due this very moment: still ahead
        assert paused_next_fire(MINUTELY, ahead, misfire, now) == ahead
    assert resume_due(MINUTELY, missed, Misfire.FIRE_NOW, now) == missed  # fired late, at its own time
    assert paused_next_fire(MINUTELY, missed, Misfire.FIRE_NOW, now) == now  # shown as now, never gone by
    assert resume_due(ONCE, missed, Misfire.FIRE_NOW, now) == now
    assert resume_due(MINUTELY, missed, Misfire.SKIP, now + 1) == T0 + 60_000  # the first from now on
    assert paused_next_fire(MINUTELY, missed, Misfire.SKIP, now + 1) == T0 + 60_000
    assert resume_due(ONCE, missed, Misfire.SKIP, now) is None  # a one-shot skipped: done
    assert paused_next_fire(ONCE, missed, Misfire.SKIP, now) is None
    assert resume_due(ONCE, now, Misfire.SKIP, now) == now  # due this very moment: not missed, not skipped
    assert paused_next_fire(MINUTELY, missed, Misfire.FIRE_NOW, now + 1) == now + 1  # between two minutes
    ended = sched.Every(60, start=datetime(2026, 11, 29, tzinfo=UTC), end=datetime(2026, 11, 29, 11, 0, tzinfo=UTC))
    assert resume_due(ended, missed, Misfire.SKIP, now) is None  # nothing left from now on


def test_a_scanner_invocation_scans_its_shards_in_turn_while_its_time_lasts_and_says_what_it_left() -> None:
    seen: list[tuple[int, int | None, int | None]] = []
    left_ms = iter([10_000, 10_000, 10_000, 5_000, 4_999])

    def scan(shard: int, tick_ms: int | None, since_ms: int | None) -> int:
        seen.append((shard, tick_ms, since_ms))
        if shard == 2:
            raise RuntimeError("throttled")
        return shard * 10

    requests = [(1, T0, T0 - 60_000), (2, T0, None), (3, None, T0 - 5), (4, T0, T0), (5, T0, T0)]
    done = scan_group(scan, requests, lambda: next(left_ms), reserve_ms=5_000)
    # shard 2 failed and the others went on; at 4,999 ms left (under the reserve) shard 5 was not started
    assert done == GroupScan(staged=10 + 30 + 40, scanned=[1, 3, 4], failed=[2], left=[5])
    assert seen == requests[:4]  # each with its own tick and mark
    assert scan_group(scan, [], lambda: 10_000) == GroupScan(0, [], [], [])
    exactly = scan_group(scan, [(6, T0, T0)], lambda: 5_000, reserve_ms=5_000)  # the reserve itself: still on
    assert exactly == GroupScan(60, [6], [], [])
