"""Retry policy, statuses and the task state machine, time buckets (shared/domain/retry.py, states.py,
buckets.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.buckets import MINUTE_MS, bucket_of, choose_shard, minute_of, minutes_between
from shared.domain.errors import InvalidTransition
from shared.domain.retry import (
    MAX_ATTEMPTS,
    MAX_DELAY_SECONDS,
    MAX_INTERVAL_SECONDS,
    Backoff,
    RetryPolicy,
    is_retryable_status,
)
from shared.domain.states import (
    ENDED,
    TASK_TRANSITIONS,
    RunStatus,
    TaskStatus,
    check_task_transition,
    ended_as,
)
from shared.domain.times import from_ms, to_ms

pytestmark = pytest.mark.unit

# --------------------------------------------------------------------------------------------
# Retry
# --------------------------------------------------------------------------------------------

policies = st.builds(
    RetryPolicy,
    max_attempts=st.integers(1, MAX_ATTEMPTS),
    backoff=st.sampled_from(Backoff),
    interval_seconds=st.floats(0, MAX_INTERVAL_SECONDS, allow_nan=False),
)
attempts = st.integers(1, 10_000)


def test_default_policy_is_three_exponential_attempts_two_seconds_apart() -> None:
    policy = RetryPolicy()
    assert (policy.max_attempts, policy.backoff, policy.interval_seconds) == (3, Backoff.EXPONENTIAL, 2.0)
    assert [policy.delay_after(n) for n in (1, 2)] == [2.0, 4.0]
    assert [policy.has_attempt_after(n) for n in (1, 2, 3)] == [True, True, False]


def test_exponential_delays_double_then_stop_at_the_sqs_limit() -> None:
    policy = RetryPolicy(max_attempts=10, backoff=Backoff.EXPONENTIAL, interval_seconds=2)
    assert [policy.delay_after(n) for n in range(1, 11)] == [2, 4, 8, 16, 32, 64, 128, 256, 512, 900]
    assert policy.delay_after(10**9) == MAX_DELAY_SECONDS  # no overflow for absurd attempt numbers


def test_fixed_delays_do_not_grow() -> None:
    policy = RetryPolicy(max_attempts=5, backoff=Backoff.FIXED, interval_seconds=7.5)
    assert {policy.delay_after(n) for n in range(1, 100)} == {7.5}
    assert RetryPolicy(backoff=Backoff.FIXED, interval_seconds=MAX_INTERVAL_SECONDS).delay_after(1) == 900


def test_backoff_names_match_the_api() -> None:
    assert Backoff("fixed") is Backoff.FIXED
    assert Backoff("exponential") is Backoff.EXPONENTIAL


@pytest.mark.parametrize("attempt", [0, -1])
def test_attempts_are_numbered_from_one(attempt: int) -> None:
    with pytest.raises(ValueError, match="from 1"):
        RetryPolicy().delay_after(attempt)


@given(policy=policies, attempt=attempts)
def test_delay_is_bounded_and_never_shrinks(policy: RetryPolicy, attempt: int) -> None:
    delay = policy.delay_after(attempt)
    assert 0 <= delay <= MAX_DELAY_SECONDS
    assert delay >= min(policy.interval_seconds, MAX_DELAY_SECONDS)
    assert policy.delay_after(attempt + 1) >= delay
    if policy.backoff is Backoff.FIXED:
        assert delay == min(policy.interval_seconds, MAX_DELAY_SECONDS)
    else:
        assert delay == min(policy.interval_seconds * 2 ** min(attempt - 1, 30), MAX_DELAY_SECONDS)


@given(policy=policies)
def test_a_policy_makes_exactly_max_attempts(policy: RetryPolicy) -> None:
    attempt = 1
    while policy.has_attempt_after(attempt):
        attempt += 1
    assert attempt == policy.max_attempts


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 599])
def test_retryable_statuses(status: int) -> None:
    assert is_retryable_status(status)


@pytest.mark.parametrize("status", [200, 201, 204, 299, 301, 304, 400, 401, 403, 404, 409, 410, 422, 499, 600])
def test_final_statuses(status: int) -> None:
    assert not is_retryable_status(status)


@given(status=st.integers(100, 999))
def test_only_408_429_and_5xx_are_retried(status: int) -> None:
    assert is_retryable_status(status) == (status in (408, 429) or status // 100 == 5)


# --------------------------------------------------------------------------------------------
# States
# --------------------------------------------------------------------------------------------


def test_statuses_are_the_api_names() -> None:
    assert {s.value for s in TaskStatus} == {"scheduled", "paused", "completed", "cancelled", "failed"}
    assert {s.value for s in RunStatus} == {
        "staged",
        "firing",
        "succeeded",
        "retrying",
        "failed",
        "dead_lettered",
        "skipped",
        "throttled",  # held back by a limit per destination
    }
    assert set(TASK_TRANSITIONS) == set(TaskStatus)


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (TaskStatus.SCHEDULED, TaskStatus.PAUSED),  # pause
        (TaskStatus.PAUSED, TaskStatus.SCHEDULED),  # resume
        (TaskStatus.SCHEDULED, TaskStatus.CANCELLED),  # delete
        (TaskStatus.PAUSED, TaskStatus.CANCELLED),  # delete while paused
        (TaskStatus.SCHEDULED, TaskStatus.COMPLETED),  # last occurrence fired
    ],
)
def test_allowed_task_transitions(current: TaskStatus, target: TaskStatus) -> None:
    assert check_task_transition(current, target) is target


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (TaskStatus.CANCELLED, TaskStatus.SCHEDULED),  # a cancelled task never fires again
        (TaskStatus.CANCELLED, TaskStatus.PAUSED),
        (TaskStatus.COMPLETED, TaskStatus.SCHEDULED),
        (TaskStatus.COMPLETED, TaskStatus.PAUSED),
        (TaskStatus.COMPLETED, TaskStatus.CANCELLED),
        (TaskStatus.PAUSED, TaskStatus.COMPLETED),  # nothing fires while paused
    ],
)
def test_forbidden_task_transitions(current: TaskStatus, target: TaskStatus) -> None:
    with pytest.raises(InvalidTransition) as caught:
        check_task_transition(current, target)
    assert caught.value.code == "invalid_state"
    assert caught.value.status == 409
    assert current.value in str(caught.value)
    assert target.value in str(caught.value)


def test_final_task_statuses() -> None:
    assert {s for s in TaskStatus if s in ENDED} == {TaskStatus.COMPLETED, TaskStatus.CANCELLED, TaskStatus.FAILED}


@pytest.mark.parametrize(
    ("run", "task"),
    [
        (RunStatus.SUCCEEDED, TaskStatus.COMPLETED),
        (RunStatus.SKIPPED, TaskStatus.COMPLETED),
        (RunStatus.FAILED, TaskStatus.FAILED),
        (RunStatus.DEAD_LETTERED, TaskStatus.FAILED),
    ],
)
def test_a_task_that_ended_is_failed_when_its_last_occurrence_failed(run: RunStatus, task: TaskStatus) -> None:
    assert ended_as(run) is task


@given(current=st.sampled_from(TaskStatus), target=st.sampled_from(TaskStatus))
def test_task_transition_check_follows_the_table(current: TaskStatus, target: TaskStatus) -> None:
    if target in TASK_TRANSITIONS[current]:
        assert check_task_transition(current, target) is target
    else:
        with pytest.raises(InvalidTransition):
            check_task_transition(current, target)
    if current in ENDED:  # only a failed task moves on: completed by a redrive, or cancelled
        assert TASK_TRANSITIONS[current] <= {TaskStatus.COMPLETED, TaskStatus.CANCELLED}


# --------------------------------------------------------------------------------------------
# Buckets
# --------------------------------------------------------------------------------------------

moments_ms = st.integers(0, 253_402_300_799_999)  # 1970 .. 9999-12-31T23:59:59.999Z


def test_bucket_examples() -> None:
    due = to_ms(datetime(2026, 11, 22, 10, 0, 0, 250_000, tzinfo=UTC))
    assert minute_of(due) == to_ms(datetime(2026, 11, 22, 10, 0, tzinfo=UTC))
    assert bucket_of(due) == "202611221000"
    assert bucket_of(due + 59_749) == "202611221000"
    assert bucket_of(due + 59_750) == "202611221001"
    assert bucket_of(0) == "197001010000"
    assert bucket_of(to_ms(datetime(2026, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC))) == "202612312359"


@settings(max_examples=150)
@given(due_ms=moments_ms)
def test_minute_of_is_the_start_of_the_utc_minute(due_ms: int) -> None:
    start = minute_of(due_ms)
    assert start % MINUTE_MS == 0
    assert start <= due_ms < start + MINUTE_MS
    assert minute_of(start) == start


@settings(max_examples=150)
@given(due_ms=moments_ms)
def test_bucket_is_the_utc_minute(due_ms: int) -> None:
    bucket = bucket_of(due_ms)
    assert bucket == from_ms(due_ms).strftime("%Y%m%d%H%M")
    assert len(bucket) == 12
    assert bucket.isdigit()
    assert bucket_of(minute_of(due_ms)) == bucket


@given(a=moments_ms, b=moments_ms)
def test_buckets_sort_like_time(a: int, b: int) -> None:
    if minute_of(a) < minute_of(b):
        assert bucket_of(a) < bucket_of(b)
    elif minute_of(a) == minute_of(b):
        assert bucket_of(a) == bucket_of(b)


@given(start=st.integers(1_700_000_000_000, 1_800_000_000_000), span=st.integers(-3 * MINUTE_MS, 180 * MINUTE_MS))
def test_minutes_between_covers_every_minute_of_the_window_once(start: int, span: int) -> None:
    end = start + span
    minutes = minutes_between(start, end)
    if minute_of(end) < minute_of(start):
        assert minutes == []
        return
    assert minutes[0] == minute_of(start)
    assert minutes[-1] == minute_of(end)
    assert all(later - earlier == MINUTE_MS for earlier, later in pairwise(minutes))
    assert len({bucket_of(m) for m in minutes}) == len(minutes)
    # every instant of the window lies in one of the listed minutes
    for instant in range(start, end + 1, 7_919):
        assert minute_of(instant) in minutes


def test_minutes_between_examples() -> None:
    assert minutes_between(60_000, 60_000) == [60_000]
    assert minutes_between(60_001, 179_999) == [60_000, 120_000]
    assert minutes_between(120_000, 119_999) == []
    assert minutes_between(119_999, 120_000) == [60_000, 120_000]


@given(random_value=st.integers(0, 2**80), shards=st.integers(1, 1024))
def test_choose_shard_is_in_range(random_value: int, shards: int) -> None:
    assert 0 <= choose_shard(random_value, shards) < shards


@pytest.mark.parametrize("shards", [1, 2, 7, 16, 1024])
def test_choose_shard_is_uniform_over_uniform_input(shards: int) -> None:
    counts = Counter(choose_shard(value, shards) for value in range(shards * 5))
    assert counts == dict.fromkeys(range(shards), 5)


@pytest.mark.parametrize("shards", [0, -1])
def test_a_bucket_has_at_least_one_shard(shards: int) -> None:
    with pytest.raises(ValueError, match="at least one shard"):
        choose_shard(3, shards)


def test_a_tasks_last_run_is_its_latest_occurrence() -> None:
    """The item's current run, unless an occurrence that ended elsewhere (a previous one of a
    recurring task, an extra run) was scheduled later; null before the first."""
    from shared.domain.tasks import LastRun, Run, Task

    def at(minute: int) -> datetime:
        return datetime(2026, 11, 27, 10, minute, tzinfo=UTC)

    base = Task(
        None,  # type: ignore[arg-type]
        (),
        id="T",
        tenant="t",
        misfire=None,  # type: ignore[arg-type]
        status=TaskStatus.SCHEDULED,
        due_at=at(0),
        next_fire_at=at(0),
        created_at=at(0),
        updated_at=at(0),
    )
    assert base.last_run is None
    current = Run("R2", "T", at(2), RunStatus.FIRING)
    earlier = LastRun("R1", at(1), RunStatus.DEAD_LETTERED)
    later = LastRun("R3", at(3), RunStatus.SUCCEEDED)
    assert replace(base, ended_run=earlier).last_run == earlier
    assert replace(base, run=current, ended_run=earlier).last_run == LastRun.of(current)
    assert replace(base, run=current, ended_run=later).last_run == later
