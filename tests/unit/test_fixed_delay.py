"""A fixed delay (``"every_seconds": n, "after": "end"``): each occurrence is due the period after
the run before it ended, whatever its final state, so two never run at once. The pure rules
(shared/domain/schedules.py, firing.py, registration.py) at their edges, then the trigger's four
steps on the in-memory store under a fake clock: a slow call moves the next occurrence by as long
as it took, a retry arms nothing, and every final state (succeeded, dead-lettered, failed,
skipped) arms the next one from its end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.delivery import Envelope, Outcome
from shared.domain import schedules as sched
from shared.domain.claims import Claimed, Result
from shared.domain.codec import schedule_from_dict, schedule_to_dict
from shared.domain.errors import ValidationFailed
from shared.domain.firing import Timing, next_occurrence, paused_next_fire, resume_due, running, staged_for
from shared.domain.registration import first_due, preview
from shared.domain.retry import Backoff, RetryPolicy
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import HttpTarget, Misfire, Target, Task, TaskSpec
from shared.domain.times import from_ms, to_ms
from shared.services.firing.claim import Claim
from shared.services.firing.settle import Succeeded, ended_run
from shared.services.tasks import TaskService
from tests.support.firing import FiringCore, firing_core

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
T0 = to_ms(NOW)
TIMING = Timing(look_ahead_ms=120_000, misfire_tolerance_ms=60_000)
DELAY = sched.Every(600, start=NOW, after=sched.FROM_END)
"""Ten minutes after each run ends, the first at NOW."""
RATE = sched.Every(600, start=NOW)
URL = "https://example.com/slow"


def test_the_next_occurrence_is_the_period_after_the_run_ended_not_after_it_was_due() -> None:
    # due at T0, ended 7 minutes later (a slow call, or its retries): due 10 minutes after that
    assert next_occurrence(DELAY, T0, T0 + 420_000, TIMING) == T0 + 420_000 + 600_000
    assert next_occurrence(RATE, T0, T0 + 420_000, TIMING) == T0 + 600_000  # a fixed rate keeps its grid
    # an end long after its due time (an outage) is no misfire burst: still the period after it
    assert next_occurrence(DELAY, T0, T0 + 86_400_000, TIMING) == T0 + 86_400_000 + 600_000
    # past the schedule's end: none (the task completes)
    ending = sched.Every(600, start=NOW, end=NOW + timedelta(minutes=15), after=sched.FROM_END)
    assert next_occurrence(ending, T0, T0 + 300_000, TIMING) == T0 + 900_000  # exactly at its end: still one
    assert next_occurrence(ending, T0, T0 + 300_001, TIMING) is None


def test_a_resumed_fixed_delay_fires_a_missed_one_by_its_misfire_or_else_the_period_from_the_resume() -> None:
    missed, ahead = T0 - 90_000, T0 + 30_000
    for misfire in Misfire:
        assert resume_due(DELAY, ahead, misfire, T0) == ahead  # still ahead: as armed
    assert resume_due(DELAY, missed, Misfire.FIRE_NOW, T0) == missed  # fired late, at its own time
    assert resume_due(DELAY, missed, Misfire.SKIP, T0) == T0 + 600_000  # skipped: the period from now
    assert paused_next_fire(DELAY, missed, Misfire.SKIP, T0) == T0 + 600_000
    ending = sched.Every(600, start=NOW - timedelta(hours=1), end=NOW + timedelta(minutes=5), after=sched.FROM_END)
    assert resume_due(ending, missed, Misfire.SKIP, T0) is None  # the period from now is past its end


def test_only_the_first_time_is_known_ahead_and_a_start_already_past_fires_at_once() -> None:
    anchored = sched.anchored(sched.Every(600, after=sched.FROM_END), NOW)
    assert first_due(anchored, Misfire.SKIP, NOW) == NOW + timedelta(minutes=10)  # one period after registration
    assert preview(sched.Every(600, after=sched.FROM_END), 5, NOW) == [NOW + timedelta(minutes=10)]
    assert preview(RATE, 3, NOW) == [NOW, NOW + timedelta(minutes=10), NOW + timedelta(minutes=20)]
    later = NOW + timedelta(minutes=10, milliseconds=1)
    assert preview(sched.Every(600, after=sched.FROM_END), 5, NOW, after=later) == []  # after its first: unknown
    assert preview(sched.Every(600, after=sched.FROM_END), 5, NOW, after=NOW) == [NOW + timedelta(minutes=10)]
    assert sched.upcoming(DELAY, NOW, 5) == []
    past = sched.Every(600, start=NOW - timedelta(minutes=25), after=sched.FROM_END)
    assert first_due(past, Misfire.SKIP, NOW) == NOW  # no grid to step on: at once
    assert first_due(sched.Every(600, start=NOW - timedelta(minutes=25)), Misfire.SKIP, NOW) == NOW + timedelta(
        minutes=5
    )  # a fixed rate steps on its grid
    over = sched.Every(600, start=NOW - timedelta(hours=1), end=NOW - timedelta(minutes=1), after=sched.FROM_END)
    with pytest.raises(ValidationFailed):
        first_due(over, Misfire.SKIP, NOW)  # ended before now: nothing to fire
    assert sched.after_runs(DELAY)
    assert not sched.after_runs(RATE)
    assert not sched.after_runs(sched.Cron("* * * * *"))


def test_the_stored_form_keeps_after_end_and_says_nothing_of_a_fixed_rate() -> None:
    assert schedule_to_dict(DELAY) == {"every_seconds": 600, "after": "end", "start": "2026-11-30T09:00:00.000Z"}
    assert schedule_from_dict(schedule_to_dict(DELAY)) == DELAY
    assert "after" not in schedule_to_dict(RATE)
    assert schedule_from_dict({"every_seconds": 60}).after == sched.FROM_START  # stored before it existed


# --- the trigger's four steps -----------------------------------------------------------------------


def fixed_delay(core: FiringCore, retry: RetryPolicy | None = None) -> Task:
    spec = TaskSpec(
        sched.Every(600, start=NOW + timedelta(seconds=5), after=sched.FROM_END),
        (HttpTarget(URL),),
        **({"retry": retry} if retry else {}),  # type: ignore[arg-type]
    )
    return core.register(NOW, spec)


def taking(core: FiringCore, ms: int, *answers: Outcome) -> None:
    """Each call to URL takes ``ms`` on the clock, answered in turn (the last repeats)."""
    core.receiver.scripts[URL] = list(answers)
    answer = core.receiver.deliver

    def slow(target: Target, envelope: Envelope) -> Outcome:
        core.clock.advance(ms)
        return answer(target, envelope)

    core.receiver.deliver = slow  # type: ignore[method-assign]


def armed(core: FiringCore, task: Task) -> Task:
    return core.repository.get("acme", task.id)


def test_a_slow_success_arms_the_next_occurrence_the_period_after_the_call_ended() -> None:
    core = firing_core(T0)
    task = fixed_delay(core)
    due = to_ms(task.due_at)
    taking(core, 45_000, Outcome.success(200))
    core.clock.now = due
    handled = core.deliver(staged_for(task.id, due, one_shot=False))
    assert handled.result is Result.SUCCEEDED
    ended = core.clock.now
    assert ended >= due + 45_000
    after = armed(core, task)
    assert (after.status, to_ms(after.due_at)) == (TaskStatus.SCHEDULED, ended + 600_000)
    assert core.queues.staged == []  # ten minutes ahead: the scanners' to stage
    (run,) = core.repository.runs(after, limit=10, cursor=None).items
    assert (run.status, run.scheduled_for) == (RunStatus.SUCCEEDED, from_ms(due))


def test_a_retried_run_arms_nothing_until_its_last_attempt_ends_then_the_period_after_that() -> None:
    core = firing_core(T0)
    task = fixed_delay(core, RetryPolicy(max_attempts=2, backoff=Backoff.FIXED, interval_seconds=30))
    due = to_ms(task.due_at)
    taking(core, 1_000, Outcome.retry("HTTP 503", status=503))
    core.clock.now = due
    first = core.deliver(staged_for(task.id, due, one_shot=False))
    assert first.result is Result.RETRYING
    assert to_ms(armed(core, task).due_at) == due  # still this occurrence's: nothing else is armed
    run = armed(core, task).run
    assert run is not None
    assert run.status is RunStatus.RETRYING
    ((retry, _),) = core.queues.sent
    core.clock.now = retry.start_ms or due
    last = core.deliver(retry)
    assert last.result is Result.DEAD_LETTERED
    assert to_ms(armed(core, task).due_at) == core.clock.now + 600_000


def test_a_final_failure_arms_the_next_occurrence_from_its_end_too() -> None:
    core = firing_core(T0)
    task = fixed_delay(core)
    due = to_ms(task.due_at)
    taking(core, 2_500, Outcome.fail("HTTP 400", status=400))
    core.clock.now = due
    assert core.deliver(staged_for(task.id, due, one_shot=False)).result is Result.FAILED
    assert to_ms(armed(core, task).due_at) == core.clock.now + 600_000


def test_a_skipped_occurrence_arms_the_next_one_the_period_after_the_skip() -> None:
    core = firing_core(T0)
    task = fixed_delay(core)  # misfire defaults to skip for a recurring task
    due = to_ms(task.due_at)
    core.clock.now = due + 90_000  # claimed past the misfire tolerance: skipped, not called
    handled = core.deliver(staged_for(task.id, due, one_shot=False))
    assert handled.result is Result.SKIPPED
    assert core.receiver.calls[URL] == []
    assert to_ms(armed(core, task).due_at) == core.clock.now + 600_000


def test_a_fixed_delay_paused_and_resumed_mid_run_stays_armed_for_that_run_whose_end_arms_the_next() -> None:
    core = firing_core(T0)
    task = fixed_delay(core)  # misfire skip: a resume would otherwise arm the period from the resume
    due = to_ms(task.due_at)
    service = TaskService(
        core.repository, bucket_shards=8, retention=timedelta(days=30), clock=lambda: from_ms(core.clock.now)
    )
    staged = staged_for(task.id, due, one_shot=False)
    core.clock.now = due
    taken = core.store.claim(staged, now_ms=due, lease_until_ms=due + 150_000, log_id="b1")
    assert isinstance(taken, Claimed)  # its call is going (a slow receiver)
    service.pause("acme", task.id)
    core.clock.advance(30_000)
    assert running(armed(core, task))
    resumed = service.resume("acme", task.id)
    assert to_ms(resumed.due_at) == due  # not the period from the resume: the run is still going
    core.clock.advance(40_000)  # the call ends
    claim = Claim(staged, taken, due)
    run = ended_run(staged, task.id, RunStatus.SUCCEEDED, attempts=1, fired_ms=due, lateness_ms=0)
    core.trigger.recorder.record(claim, Succeeded(run, 0b1, 0, (), None))
    after = armed(core, task)
    assert (after.status, to_ms(after.due_at)) == (TaskStatus.SCHEDULED, core.clock.now + 600_000)
    assert not running(after)
    assert resume_due(DELAY, due, Misfire.SKIP, due + 1, running=False) == due + 1 + 600_000
    assert resume_due(RATE, T0, Misfire.SKIP, T0 + 1, running=True) == T0 + 600_000  # a fixed rate: its grid
