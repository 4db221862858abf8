"""Step 3 of an occurrence's life (shared/services/firing/settle.py): what an attempt came to,
decided from the claim, what the call did and the time alone. No store, no queue, no clock."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from shared.delivery import Outcome
from shared.domain.claims import Claimed
from shared.domain.firing import Timing, staged_for
from shared.domain.registration import new_task
from shared.domain.retry import Backoff, RetryPolicy
from shared.domain.schedules import At, Every
from shared.domain.states import RunStatus
from shared.domain.tasks import HttpTarget, Run, TaskSpec
from shared.domain.times import from_ms, to_ms
from shared.services.firing.call import Ran
from shared.services.firing.claim import Claim
from shared.services.firing.settle import Ended, Held, Retrying, Skipped, Succeeded, given_up, settle

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
DUE = to_ms(NOW)
TIMING = Timing()
HOOKS = (HttpTarget("https://example.com/a"), HttpTarget("https://example.com/b"))
FIXED_2S = RetryPolicy(max_attempts=3, backoff=Backoff.FIXED, interval_seconds=2)


def claim(*, recurring: bool = False, attempt: int = 1, counted: bool = True, retry: RetryPolicy = FIXED_2S) -> Claim:
    spec = TaskSpec(Every(60) if recurring else At(NOW), HOOKS, multicast=True, retry=retry)
    task = new_task(spec, tenant="acme", now=NOW, shard=0)
    staged = staged_for(task.id, DUE, one_shot=not recurring)
    for _ in range(attempt - 1):
        staged = staged.next_attempt()
    return Claim(staged, Claimed(task, 0, "log", counted), DUE)


def test_a_success_of_a_one_shot_waits_for_the_run_log_and_a_recurring_ones_is_its_run() -> None:
    ran = Ran(0b11, fired_ms=DUE + 40, outcomes=(Outcome.success(200), Outcome.success(204)))
    one_shot = settle(claim(), ran, DUE + 90, TIMING)
    assert isinstance(one_shot, Succeeded)
    assert one_shot.success is not None
    assert (one_shot.success.fired_ms, one_shot.success.lateness_ms, one_shot.success.counted_in) == (
        DUE + 40,
        40,
        "acme",
    )
    assert one_shot.run.status is RunStatus.SUCCEEDED
    recurring = settle(claim(recurring=True), ran, DUE + 90, TIMING)
    assert isinstance(recurring, Succeeded)
    assert recurring.success is None
    assert recurring.run == Run(
        recurring.run.run_id,
        recurring.run.task_id,
        NOW,
        RunStatus.SUCCEEDED,
        1,
        fired_at=from_ms(DUE + 40),
        lateness_ms=40,
    )


def test_a_retryable_failure_with_attempts_left_is_retried_its_backoff_after_its_due_time() -> None:
    ran = Ran(0b01, fired_ms=DUE + 30, outcomes=(Outcome.success(200), Outcome.retry("HTTP 503", status=503)))
    settled = settle(claim(), ran, DUE + 500, TIMING)
    assert isinstance(settled, Retrying)
    assert (settled.message.attempt, settled.message.start_ms) == (2, DUE + 2_000)
    assert settled.targets_done == 0b01  # the succeeded target is not called again
    assert settled.error == "HTTP 503"
    assert settled.delay_s == 0  # within the lead: on its way now, held to its start by the trigger


def test_a_retry_after_longer_than_the_backoff_is_kept_from_the_attempts_end() -> None:
    asked = Outcome.of_status(429, retry_after_s=30)
    settled = settle(claim(), Ran(0, fired_ms=DUE, outcomes=(asked, asked)), DUE + 1_000, TIMING)
    assert isinstance(settled, Retrying)
    assert settled.message.start_ms == DUE + 1_000 + 30_000
    assert settled.delay_s == (30_000 - TIMING.lead_ms) // 1000  # visible a lead early


def test_the_last_attempt_failing_retryably_is_dead_lettered_and_a_final_failure_fails_at_once() -> None:
    down = Outcome.retry("HTTP 503", status=503)
    exhausted = settle(claim(attempt=3), Ran(0, fired_ms=DUE + 4_010, outcomes=(down, down)), DUE + 4_050, TIMING)
    assert isinstance(exhausted, Ended)
    assert exhausted.run.status is RunStatus.DEAD_LETTERED
    assert exhausted.reason == "retries exhausted after 3 attempt(s): HTTP 503; HTTP 503"
    refused = Outcome.fail("HTTP 404", status=404)
    final = settle(claim(), Ran(0, fired_ms=DUE + 5, outcomes=(down, refused)), DUE + 20, TIMING)
    assert isinstance(final, Ended)
    assert final.run.status is RunStatus.FAILED
    assert final.reason.startswith("failed after 1 attempt(s)")
    assert final.outcomes == (down, refused)  # what the failure branch's chains receive


def test_a_retrys_run_keeps_its_first_attempts_lateness() -> None:
    first = claim(attempt=2)
    task = first.claimed.task
    recorded = Run(first.staged.run_id, task.id, NOW, RunStatus.RETRYING, 1, lateness_ms=25)
    retried = replace(first, claimed=replace(first.claimed, task=replace(task, run=recorded)))
    settled = settle(retried, Ran(0b11, fired_ms=DUE + 2_010, outcomes=()), DUE + 2_020, TIMING)
    assert isinstance(settled, Succeeded)
    assert settled.run.lateness_ms == 25
    assert settled.lateness_ms == 2_010  # this attempt's own, as its metric reports it


def test_a_skipped_run_used_no_attempt_and_a_held_one_is_leased_until_it_is_back() -> None:
    skipped = settle(claim(), Ran(0, skipped="missed by 90000 ms (misfire: skip)"), DUE, TIMING)
    assert isinstance(skipped, Skipped)
    assert (skipped.run.status, skipped.run.attempts, skipped.run.last_error) == (
        RunStatus.SKIPPED,
        0,
        "missed by 90000 ms (misfire: skip)",
    )
    c = claim()
    held_copy = c.staged.hold(DUE + 60_000, (("l", 1),), DUE)
    held = settle(c, Ran(0, held=(held_copy, 58), throttled_ms=60_000), DUE, TIMING)
    assert held == Held(held_copy, 58, DUE + 60_000 + TIMING.lease_ms, 60_000)
    unbooked = settle(c, Ran(0, held=(c.staged.hold(None, (), DUE), 1)), DUE + 7, TIMING)
    assert isinstance(unbooked, Held)
    assert unbooked.lease_until_ms == DUE + 7 + 1_000 + TIMING.lease_ms


def test_an_occurrence_given_up_is_dead_lettered_with_the_reason() -> None:
    ended = given_up(claim(attempt=2), "the trigger failed on it 5 times: RuntimeError: boom")
    assert ended.run.status is RunStatus.DEAD_LETTERED
    assert (ended.run.attempts, ended.run.fired_at, ended.lateness_ms) == (2, None, None)
    assert ended.run.last_error == ended.reason


def test_a_retry_carries_the_runs_throttled_time_and_the_attempts_fire_time() -> None:
    # make mutation: the numbers a retry's message and record carry, each its own
    down = Outcome.retry("HTTP 503", status=503)
    ran = Ran(0b01, fired_ms=DUE + 30, outcomes=(Outcome.success(200), down), throttled_ms=700)
    settled = settle(claim(), ran, DUE + 500, TIMING)
    assert isinstance(settled, Retrying)
    assert (settled.message.throttled_ms, settled.throttled_ms) == (700, 700)
    assert (settled.fired_ms, settled.lateness_ms, settled.targets_done) == (DUE + 30, 30, 0b01)


def test_an_ended_run_keeps_its_task_fire_time_lateness_throttling_and_done_targets() -> None:
    down = Outcome.retry("HTTP 503", status=503)
    first = claim(attempt=3)
    ran = Ran(0b01, fired_ms=DUE + 4_010, outcomes=(down,), throttled_ms=900)
    ended = settle(first, ran, DUE + 4_050, TIMING)
    assert isinstance(ended, Ended)
    assert (ended.run.task_id, ended.run.fired_at, ended.run.lateness_ms, ended.run.throttled_ms) == (
        first.claimed.task.id,
        from_ms(DUE + 4_010),
        4_010,  # no earlier attempt recorded one: this one's
        900,
    )
    assert (ended.targets_done, ended.lateness_ms) == (0b01, 4_010)


def test_a_retry_past_the_age_limit_is_dead_lettered_as_too_old() -> None:
    aging = RetryPolicy(max_attempts=5, backoff=Backoff.FIXED, interval_seconds=120, max_age_seconds=60)
    down = Outcome.retry("HTTP 503", status=503)
    ended = settle(claim(retry=aging), Ran(0, fired_ms=DUE, outcomes=(down,)), DUE + 10, TIMING)
    assert isinstance(ended, Ended)
    assert ended.reason == "too old to retry after 1 attempt(s): HTTP 503"


def test_an_occurrence_given_up_keeps_its_task_and_the_targets_that_succeeded() -> None:
    first = claim(attempt=2)
    first = replace(first, claimed=replace(first.claimed, targets_done=0b10))
    ended = given_up(first, "the trigger failed on it 5 times: RuntimeError: boom")
    assert (ended.run.task_id, ended.targets_done) == (first.claimed.task.id, 0b10)
