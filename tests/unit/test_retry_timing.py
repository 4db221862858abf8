"""A retry keeps its schedule as a first fire does: it is due an instant computed from the attempt
before it (its backoff after that attempt was due, whatever the call took), staged to arrive the
lead early and held to that instant, and judged missed from it, not from the occurrence's due."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.domain.firing import staged_for
from shared.domain.retry import Backoff, RetryPolicy, next_attempt_due
from shared.domain.times import to_ms, truncate_ms

pytestmark = pytest.mark.unit

T = to_ms(truncate_ms(datetime(2030, 3, 1, 8, tzinfo=UTC)))
FIXED_2S = RetryPolicy(max_attempts=5, backoff=Backoff.FIXED, interval_seconds=2)


def test_fixed_attempts_are_due_the_interval_apart_whatever_their_calls_took():
    second = next_attempt_due(FIXED_2S, 1, T, ended_ms=T + 37)
    third = next_attempt_due(FIXED_2S, 2, second, ended_ms=second + 1_200)  # a slow 500
    assert (second, third) == (T + 2_000, T + 4_000)


def test_exponential_attempts_double_from_each_attempts_due_time():
    policy = RetryPolicy(max_attempts=5, backoff=Backoff.EXPONENTIAL, interval_seconds=1.5)
    dues = [T]
    for attempt in range(1, 5):
        dues.append(next_attempt_due(policy, attempt, dues[-1], ended_ms=dues[-1] + 5))
    assert [b - a for a, b in itertools.pairwise(dues)] == [1_500, 3_000, 6_000, 12_000]  # to the ms


def test_an_attempt_over_after_its_backoff_is_followed_the_backoff_after_its_end():
    # a timeout of 10 s with a backoff of 2 s: the receiver is not called again at once
    assert next_attempt_due(FIXED_2S, 1, T, ended_ms=T + 10_000) == T + 12_000


def test_a_retry_after_longer_than_the_backoff_counts_from_the_answer():
    assert next_attempt_due(FIXED_2S, 1, T, ended_ms=T + 40, retry_after_ms=3_000) == T + 3_040
    assert next_attempt_due(FIXED_2S, 1, T, ended_ms=T + 40, retry_after_ms=1_000) == T + 2_000


@given(
    interval=st.floats(1, 3600),
    backoff=st.sampled_from(list(Backoff)),
    attempt=st.integers(1, 9),
    due=st.integers(0, 10**13),
    took=st.integers(0, 120_000),
    asked=st.none() | st.integers(0, 3_600_000),
)
def test_a_retry_is_never_due_before_the_attempt_is_over_and_its_backoff_waited(
    interval, backoff, attempt, due, took, asked
):
    policy = RetryPolicy(10, backoff, interval)
    ended = due + took
    following = next_attempt_due(policy, attempt, due, ended, asked)
    backoff_ms = round(policy.delay_after(attempt) * 1000)
    assert following >= due + backoff_ms
    assert following >= ended
    if asked is not None:
        assert following >= ended + asked
    if took <= backoff_ms and (asked is None or ended + asked <= due + backoff_ms):
        assert following == due + backoff_ms  # on its schedule


def test_a_retrys_start_travels_in_its_message() -> None:
    """A retry's due start went into the message only for held copies: a Retry-After past 15
    minutes came back after 15 and fired at once."""
    from dataclasses import replace

    from shared.messages import StagedMessage, staged_message

    retry = replace(staged_for("01J0000000000000000000000A", T, one_shot=True).next_attempt(), start_ms=T + 3_600_000)
    assert StagedMessage.model_validate(staged_message(retry)).staged().start_ms == T + 3_600_000
