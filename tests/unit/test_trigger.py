"""One occurrence's life through the trigger (claim -> call -> settle -> record), on the in-memory
task repository and pipeline store (held to DynamoDB's contract: tests/integration/
test_pipeline_store_contract.py) under a fake clock: duplicates, a receiver that answers 500
then 200, a crash mid-callback, a message's last delivery, a recurring re-arm, a missed
occurrence. The clock moves only when the trigger waits, so every time below is exact."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from shared.delivery import Outcome
from shared.domain.claims import Result
from shared.domain.firing import Staged, Timing, staged_for
from shared.domain.retry import Backoff, RetryPolicy
from shared.domain.schedules import At, Every
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import HttpTarget, Task, TaskSpec
from shared.domain.times import from_ms, to_ms
from tests.support.firing import FiringCore, firing_core

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
URL = "https://example.com/hook"
FIXED_2S = RetryPolicy(max_attempts=3, backoff=Backoff.FIXED, interval_seconds=2)
LEAD = Timing().lead_ms


def first(task: Task) -> Staged:
    return staged_for(task.id, to_ms(task.due_at), one_shot=not task.recurring)


def one_shot(core: FiringCore, seconds: float = 3, retry: RetryPolicy = FIXED_2S) -> Task:
    return core.register(NOW, TaskSpec(At(NOW + timedelta(seconds=seconds)), (HttpTarget(URL),), retry=retry))


def test_an_occurrence_fires_once_at_its_due_time_and_a_duplicate_never_fires_it_again() -> None:
    core = firing_core(to_ms(NOW))
    task = one_shot(core)
    staged = first(task)
    core.clock.now = staged.due_ms - LEAD  # the message is visible a lead early
    fired = core.deliver(staged)
    assert (fired.result, fired.lateness_ms) == (Result.SUCCEEDED, 0)
    assert [at for at, _ in core.receiver.calls[URL]] == [staged.due_ms]  # waited to the millisecond
    again = core.deliver(staged)  # SQS delivered it twice: the copy waits out the run's lease...
    assert again.result is Result.IN_FLIGHT
    core.clock.now = staged.due_ms + Timing().lease_ms + 1
    late = core.deliver(staged, receives=2)  # ...and then finds the run in its batch's run log
    assert (late.result, late.reason) == (Result.DROPPED, "done")
    assert len(core.receiver.calls[URL]) == 1
    read = core.repository.get("acme", task.id)
    assert read.status is TaskStatus.COMPLETED
    assert read.run is not None
    assert (read.run.status, read.run.attempts, read.run.lateness_ms) == (RunStatus.SUCCEEDED, 1, 0)


def test_a_receiver_that_answers_500_then_200_is_called_again_its_backoff_later_and_succeeds() -> None:
    core = firing_core(to_ms(NOW))
    core.receiver.scripts[URL] = [Outcome.retry("HTTP 500", status=500), Outcome.success(200)]
    task = one_shot(core)
    staged = first(task)
    core.clock.now = staged.due_ms - LEAD
    assert core.deliver(staged).result is Result.RETRYING
    ((retry, delay),) = core.queues.sent
    assert (retry.attempt, retry.start_ms, retry.run_id) == (2, staged.due_ms + 2_000, staged.run_id)
    assert delay == 0  # 2 s away: visible at once, held to its start by the trigger
    assert core.deliver(retry).result is Result.SUCCEEDED
    calls = core.receiver.calls[URL]
    assert [at for at, _ in calls] == [staged.due_ms, staged.due_ms + 2_000]
    assert [envelope.attempt for _, envelope in calls] == [1, 2]
    assert {envelope.run_id for _, envelope in calls} == {staged.run_id}  # the receiver's idempotency key
    run = core.repository.get("acme", task.id).run
    assert run is not None
    assert (run.status, run.attempts, run.lateness_ms) == (RunStatus.SUCCEEDED, 2, 0)  # the first attempt's


def test_a_crash_mid_callback_fires_again_only_after_the_lease_with_the_same_run_id() -> None:
    core = firing_core(to_ms(NOW))
    core.receiver.scripts[URL] = [RuntimeError("the trigger died mid-callback"), Outcome.success(200)]
    staged = first(one_shot(core))
    core.clock.now = staged.due_ms - LEAD
    with pytest.raises(RuntimeError):
        core.deliver(staged)  # SQS delivers the message again after its visibility timeout
    assert core.deliver(staged, receives=2).result is Result.IN_FLIGHT  # its lease still holds
    core.clock.now = staged.due_ms + Timing().lease_ms + 1
    fired = core.deliver(staged, receives=3)
    assert fired.result is Result.SUCCEEDED
    assert [envelope.run_id for _, envelope in core.receiver.calls[URL]] == [staged.run_id] * 2


def test_on_its_last_delivery_an_occurrence_the_trigger_keeps_failing_on_is_dead_lettered() -> None:
    core = firing_core(to_ms(NOW))
    core.receiver.scripts[URL] = [RuntimeError("a bug in delivery")]
    task = one_shot(core)
    staged = first(task)
    core.clock.now = staged.due_ms - LEAD
    fired = core.deliver(staged, receives=core.trigger.max_receives)
    assert fired.result is Result.DEAD_LETTERED
    assert fired.reason == "the trigger failed on it 5 times: RuntimeError: a bug in delivery"
    (letter,) = core.dead_letters.letters.values()
    assert (letter.run_id, letter.task_id, letter.reason) == (staged.run_id, task.id, fired.reason)
    assert [dead.run_id for dead, _, _ in core.queues.dead] == [staged.run_id]
    assert core.repository.get("acme", task.id).status is TaskStatus.FAILED


def test_retries_exhausted_dead_letter_the_run_and_fail_the_task() -> None:
    core = firing_core(to_ms(NOW))
    core.receiver.scripts[URL] = [Outcome.retry("HTTP 503", status=503)]
    task = one_shot(core, retry=RetryPolicy(max_attempts=2, backoff=Backoff.FIXED, interval_seconds=1))
    message = first(task)
    core.clock.now = message.due_ms - LEAD
    assert core.deliver(message).result is Result.RETRYING
    ((message, _),) = core.queues.sent
    fired = core.deliver(message)
    assert fired.result is Result.DEAD_LETTERED
    assert fired.reason == "retries exhausted after 2 attempt(s): HTTP 503"
    read = core.repository.get("acme", task.id)
    assert read.status is TaskStatus.FAILED
    assert read.run is not None
    assert (read.run.status, read.run.attempts) == (RunStatus.DEAD_LETTERED, 2)
    # the dead letter keeps what the run fired, for a redrive to fire it again (make mutation
    # found its fields unread by these tests)
    (letter,) = core.dead_letters.letters.values()
    assert (letter.id, letter.run_id, letter.task_id, letter.tenant) == (
        message.run_id,
        message.run_id,
        task.id,
        "acme",
    )
    assert (letter.scheduled_for, letter.attempts, letter.reason) == (task.due_at, 2, fired.reason)
    assert (letter.targets, letter.multicast, letter.payload, letter.retry) == (
        task.targets,
        task.multicast,
        task.payload,
        task.retry,
    )
    assert (letter.name, letter.workflow, letter.failed_at) == (task.name, None, from_ms(core.clock.now))
    assert [staged.run_id for staged, _, _ in core.queues.dead] == [message.run_id]


def test_a_recurring_task_is_re_armed_for_its_next_occurrence_and_its_run_kept() -> None:
    core = firing_core(to_ms(NOW))
    task = core.register(NOW, TaskSpec(Every(60, start=NOW + timedelta(seconds=5)), (HttpTarget(URL),)))
    staged = first(task)
    core.clock.now = staged.due_ms - LEAD
    assert core.deliver(staged).result is Result.SUCCEEDED
    following = staged_for(task.id, staged.due_ms + 60_000, one_shot=False)
    assert core.queues.staged == [following]  # within the scanners' look-ahead: its writer stages it
    read = core.repository.get("acme", task.id)
    assert (read.status, to_ms(read.due_at)) == (TaskStatus.SCHEDULED, following.due_ms)
    (run,) = core.repository.runs(read, limit=10, cursor=None).items
    assert (run.run_id, run.status) == (staged.run_id, RunStatus.SUCCEEDED)
    core.clock.now = following.due_ms - LEAD
    assert core.deliver(following).result is Result.SUCCEEDED
    assert [at for at, _ in core.receiver.calls[URL]] == [staged.due_ms, following.due_ms]


def test_an_occurrence_claimed_past_its_misfire_tolerance_is_skipped_and_the_task_moves_on() -> None:
    core = firing_core(to_ms(NOW))
    task = core.register(NOW, TaskSpec(Every(60, start=NOW + timedelta(seconds=5)), (HttpTarget(URL),)))
    staged = first(task)
    core.clock.now = staged.due_ms + Timing().misfire_tolerance_ms + 30_000  # the tick and the queue were down
    fired = core.deliver(staged)
    assert fired.result is Result.SKIPPED
    assert fired.reason == "missed by 90000 ms (misfire: skip)"
    assert URL not in core.receiver.calls
    read = core.repository.get("acme", task.id)
    assert read.status is TaskStatus.SCHEDULED
    assert to_ms(read.due_at) == staged.due_ms + 60_000  # the next one, late within the tolerance


def _while_waiting(core: FiringCore, change: Callable[[], None]) -> None:
    """``change`` happens while the trigger waits for the due time (its claim taken a lead early)."""
    wait = core.trigger.caller.sleep

    def sleep(seconds: float) -> None:
        change()
        wait(seconds)

    core.trigger.caller.sleep = sleep


def _set_status(core: FiringCore, task: Task, status: TaskStatus) -> None:
    current = core.repository.get("acme", task.id)
    core.repository.update(
        replace(current, status=status, next_fire_at=None if status is TaskStatus.CANCELLED else current.next_fire_at)
    )


def test_a_cancel_answered_while_the_trigger_waits_for_the_due_time_stops_the_call() -> None:
    """Found by make verify: the trigger claims a lead before the due time, and a cancel answered in
    between was not seen: the target was called after it. The trigger looks again after its wait."""
    core = firing_core(to_ms(NOW))
    task = one_shot(core)
    staged = first(task)
    core.clock.now = staged.due_ms - LEAD
    _while_waiting(core, lambda: _set_status(core, task, TaskStatus.CANCELLED))
    fired = core.deliver(staged)
    assert (fired.result, fired.reason) == (Result.SKIPPED, "its task was cancelled before this run fired")
    assert core.receiver.calls[URL] == []
    read = core.repository.get("acme", task.id)
    assert read.status is TaskStatus.CANCELLED
    assert read.run is not None
    assert read.run.status is RunStatus.SKIPPED


def test_a_recurring_task_paused_while_the_trigger_waits_skips_that_occurrence_and_stays_armed() -> None:
    core = firing_core(to_ms(NOW))
    task = core.register(NOW, TaskSpec(Every(60, start=NOW + timedelta(seconds=5)), (HttpTarget(URL),)))
    staged = first(task)
    core.clock.now = staged.due_ms - LEAD
    _while_waiting(core, lambda: _set_status(core, task, TaskStatus.PAUSED))
    assert core.deliver(staged).result is Result.SKIPPED
    assert core.receiver.calls[URL] == []
    read = core.repository.get("acme", task.id)
    assert (read.status, to_ms(read.due_at)) == (TaskStatus.PAUSED, staged.due_ms + 60_000)


def test_a_one_shot_paused_while_the_trigger_waits_still_fires_as_its_skip_would_complete_it_unfired() -> None:
    core = firing_core(to_ms(NOW))
    task = one_shot(core)
    staged = first(task)
    core.clock.now = staged.due_ms - LEAD
    _while_waiting(core, lambda: _set_status(core, task, TaskStatus.PAUSED))
    assert core.deliver(staged).result is Result.SUCCEEDED
    assert len(core.receiver.calls[URL]) == 1


def test_a_message_of_a_cancelled_task_whose_trigger_died_firing_ends_its_run_without_a_call() -> None:
    """Found by make verify: the run of a task cancelled while its trigger was dying stayed
    ``firing`` in the API for good (its message, come back, was dropped as stale)."""
    core = firing_core(to_ms(NOW))
    core.receiver.scripts[URL] = [RuntimeError("the trigger died mid-callback")]
    task = one_shot(core)
    staged = first(task)
    core.clock.now = staged.due_ms - LEAD
    with pytest.raises(RuntimeError):
        core.deliver(staged)
    _set_status(core, task, TaskStatus.CANCELLED)
    assert core.repository.live_tasks("acme") == 1  # its run's end gives the place back
    core.clock.now = staged.due_ms + Timing().lease_ms + 1
    fired = core.deliver(staged, receives=2)
    assert fired.result is Result.SKIPPED
    assert fired.reason is not None
    assert fired.reason.startswith("its task was cancelled while it was firing")
    assert len(core.receiver.calls[URL]) == 1  # the call before the crash only
    read = core.repository.get("acme", task.id)
    assert read.status is TaskStatus.CANCELLED
    assert read.run is not None
    assert (read.run.status, read.run.last_error) == (RunStatus.SKIPPED, fired.reason)
    assert core.repository.live_tasks("acme") == 0


def test_a_retry_that_keeps_coming_back_before_its_attempt_is_recorded_waits_longer_each_time() -> None:
    """Found by make verify: a trigger that sent a retry and died before recording its attempt left
    the retry coming back every second for the 12 minutes until its own message came back."""
    core = firing_core(to_ms(NOW))
    staged = first(one_shot(core))
    core.clock.now = staged.due_ms - LEAD
    core.trigger.claimer.claim(staged, "b1")  # attempt 1 claimed; its trigger dies after sending the retry
    retry = replace(staged.next_attempt(), start_ms=staged.due_ms + 2_000)
    delays = []
    core.clock.now = retry.start_ms
    for _ in range(12):
        assert core.deliver(retry).result is Result.EARLY
        (_, delay), *_ = core.queues.sent[-1:]
        delays.append(delay)
        core.clock.now += delay * 1000 + 500  # the claim's pauses and the message's delay
    assert delays[:4] == [1, 1, 1, 1]
    assert delays[-1] > 8
    assert delays == sorted(delays)
