"""Step 4, record (shared/services/firing/record.py), one test per kind of settlement, written down on
the in-memory task repository and pipeline store (held to DynamoDB's contract), with what goes on
the queues and the occurrence's answer. The settlements are built here, as settle.py would build
them, so each test reads one rule of the recorder's."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.claims import Claimed, Refusal, Result, Success
from shared.domain.firing import Staged, Timing, staged_for
from shared.domain.schedules import At, Every
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import HttpTarget, Task, TaskSpec
from shared.domain.times import to_ms
from shared.services.firing.claim import Claim
from shared.services.firing.settle import Ended, Held, Retrying, Skipped, Succeeded, ended_run
from tests.support.firing import FiringCore, firing_core

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
URL = "https://example.com/hook"
TIMING = Timing()


def claim_of(core: FiringCore, task: Task) -> Claim:
    """The task's armed occurrence, claimed at its due time on the in-memory store."""
    staged = staged_for(task.id, to_ms(task.due_at), one_shot=not task.recurring)
    core.clock.now = staged.due_ms
    taken = core.store.claim(staged, now_ms=staged.due_ms, lease_until_ms=staged.due_ms + 60_000, log_id="b1")
    assert isinstance(taken, Claimed)
    return Claim(staged, taken, staged.due_ms)


def every(core: FiringCore, seconds: int, **options: object) -> Task:
    spec = TaskSpec(Every(seconds, start=NOW + timedelta(seconds=5)), (HttpTarget(URL),), **options)  # type: ignore[arg-type]
    return core.register(NOW, spec)


def one_shot(core: FiringCore) -> Task:
    return core.register(NOW, TaskSpec(At(NOW + timedelta(seconds=5)), (HttpTarget(URL),)))


def read(core: FiringCore, task: Task) -> Task:
    return core.repository.get("acme", task.id)


def succeeded(claim: Claim, lateness: int = 3) -> Succeeded:
    run = ended_run(
        claim.staged,
        claim.claimed.task.id,
        RunStatus.SUCCEEDED,
        attempts=1,
        fired_ms=claim.staged.due_ms + lateness,
        lateness_ms=lateness,
    )
    return Succeeded(run, 0b1, lateness, (), None)


def test_a_recurring_success_keeps_its_run_and_arms_the_next_occurrence_staging_it_when_the_scans_passed_it() -> None:
    core = firing_core(to_ms(NOW))
    task = every(core, 60)
    claim = claim_of(core, task)
    handled = core.trigger.recorder.record(claim, succeeded(claim))
    assert (handled.result, handled.lateness_ms, handled.attempts) == (Result.SUCCEEDED, 3, 1)
    following = claim.staged.due_ms + 60_000
    assert core.queues.staged == [staged_for(task.id, following, one_shot=False)]  # within the look-ahead
    now = read(core, task)
    assert (now.status, to_ms(now.due_at), now.run) == (TaskStatus.SCHEDULED, following, None)
    (run,) = core.repository.runs(now, limit=10, cursor=None).items
    assert (run.run_id, run.status, run.lateness_ms) == (claim.staged.run_id, RunStatus.SUCCEEDED, 3)


def test_a_next_occurrence_past_the_scanners_look_ahead_is_left_to_them() -> None:
    core = firing_core(to_ms(NOW))
    task = every(core, 86_400)
    claim = claim_of(core, task)
    core.trigger.recorder.record(claim, succeeded(claim))
    assert core.queues.staged == []
    assert to_ms(read(core, task).due_at) == claim.staged.due_ms + 86_400_000


def test_a_one_shot_success_waits_for_its_batch_run_log_and_is_answered_with_it() -> None:
    core = firing_core(to_ms(NOW))
    task = one_shot(core)
    claim = claim_of(core, task)
    success = Success(claim.staged.run_id, fired_ms=claim.staged.due_ms, lateness_ms=0, attempts=1)
    handled = core.trigger.recorder.record(claim, replace(succeeded(claim, lateness=0), success=success))
    assert (handled.result, handled.success) == (Result.SUCCEEDED, success)
    assert read(core, task).run is not None
    assert read(core, task).run.status is RunStatus.FIRING  # type: ignore[union-attr]  # not yet on record
    core.trigger.recorder.log_successes("b1", [handled])
    assert (read(core, task).status, read(core, task).run.status) == (  # type: ignore[union-attr]
        TaskStatus.COMPLETED,
        RunStatus.SUCCEEDED,
    )


def test_a_retry_is_sent_with_its_delay_and_the_run_waits_for_it() -> None:
    core = firing_core(to_ms(NOW))
    task = one_shot(core)
    claim = claim_of(core, task)
    message = replace(claim.staged, attempt=2)
    retrying = Retrying(message, 4, "HTTP 503", 0, claim.staged.due_ms + 2, 2, 0)
    handled = core.trigger.recorder.record(claim, retrying)
    assert (handled.result, handled.lateness_ms, handled.attempts, handled.reason) == (
        Result.RETRYING,
        2,
        1,
        "HTTP 503",
    )
    assert core.queues.sent == [(message, 4)]
    run = read(core, task).run
    assert run is not None
    assert (run.status, run.attempts, run.last_error) == (RunStatus.RETRYING, 1, "HTTP 503")


def test_a_hold_puts_the_held_copy_back_and_leaves_the_attempt_unused() -> None:
    core = firing_core(to_ms(NOW))
    task = one_shot(core)
    claim = claim_of(core, task)
    held = Staged(claim.staged.task_id, claim.staged.due_ms, claim.staged.run_id, held=True, one_shot=True)
    handled = core.trigger.recorder.record(claim, Held(held, 30, claim.staged.due_ms + 31_000, 30_000))
    assert (handled.result, handled.reason) == (Result.THROTTLED, "held back by a limit for 30 s")
    assert core.queues.sent == [(held, 30)]
    run = read(core, task).run
    assert run is not None
    assert (run.status, run.attempts, run.throttled_ms) == (RunStatus.THROTTLED, 0, 30_000)


def test_a_skip_ends_the_run_unfired_and_moves_a_recurring_task_on() -> None:
    core = firing_core(to_ms(NOW))
    task = every(core, 60)
    claim = claim_of(core, task)
    why = "missed by 90000 ms (misfire: skip)"
    run = ended_run(claim.staged, task.id, RunStatus.SKIPPED, attempts=1, error=why)
    handled = core.trigger.recorder.record(claim, Skipped(run, 0))
    assert (handled.result, handled.reason, handled.lateness_ms) == (Result.SKIPPED, why, None)
    assert to_ms(read(core, task).due_at) == claim.staged.due_ms + 60_000
    (kept,) = core.repository.runs(read(core, task), limit=10, cursor=None).items
    assert (kept.status, kept.last_error, kept.fired_at) == (RunStatus.SKIPPED, why, None)


def test_a_dead_lettered_occurrence_is_kept_for_a_redrive_sent_to_the_dlq_and_counted_in_a_row() -> None:
    core = firing_core(to_ms(NOW))
    task = every(core, 60, pause_after_failures=1)
    claim = claim_of(core, task)
    reason = "retries exhausted after 1 attempt(s): HTTP 500"
    run = ended_run(
        claim.staged, task.id, RunStatus.DEAD_LETTERED, attempts=1, fired_ms=claim.staged.due_ms, error=reason
    )
    handled = core.trigger.recorder.record(claim, Ended(run, 0, reason, 0))
    assert (handled.result, handled.reason, handled.alerts) == (Result.DEAD_LETTERED, reason, ())
    assert [(staged.run_id, why, task_id) for staged, why, task_id in core.queues.dead] == [
        (claim.staged.run_id, reason, task.id)
    ]
    (letter,) = core.dead_letters.letters.values()
    assert (letter.run_id, letter.attempts, letter.reason) == (claim.staged.run_id, 1, reason)
    now = read(core, task)
    assert (now.status, now.consecutive_failures) == (TaskStatus.PAUSED, 1)  # its pause_after_failures
    assert to_ms(now.due_at) == claim.staged.due_ms + 60_000  # armed, for a resume
    assert core.queues.staged == []  # a paused task's next occurrence is not staged


def test_a_record_of_a_run_whose_task_was_cancelled_meanwhile_does_not_re_arm_it() -> None:
    core = firing_core(to_ms(NOW))
    task = every(core, 60)
    claim = claim_of(core, task)
    current = read(core, task)
    core.repository.update(replace(current, status=TaskStatus.CANCELLED, next_fire_at=None))
    core.trigger.recorder.record(claim, succeeded(claim))
    now = read(core, task)
    assert (now.status, now.next_fire_at) == (TaskStatus.CANCELLED, None)
    # the next occurrence is staged before the re-arm (a crash in between must not lose it); the
    # re-arm's condition found the task cancelled, so that message's claim finds nothing armed
    (following,) = core.queues.staged
    assert core.store.claim(following, now_ms=following.due_ms, lease_until_ms=following.due_ms + 1, log_id="b2") is (
        Refusal.STALE
    )
    (run,) = core.repository.runs(now, limit=10, cursor=None).items  # the run is still kept
    assert (run.run_id, run.status) == (claim.staged.run_id, RunStatus.SUCCEEDED)
