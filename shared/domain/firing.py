"""Pure rules of the firing pipeline: windows, delays, run ids, misfire, re-arming."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from shared.domain import schedules as sched
from shared.domain.ids import parse_task_id, random_part, ulid
from shared.domain.states import RunStatus
from shared.domain.tasks import Misfire, Priority, Task
from shared.domain.times import from_ms, to_ms

MAX_DELAY_SECONDS = 900
"""SQS's largest DelaySeconds: nothing due further ahead is ever sent to a queue."""
_RUN_MASK = (1 << 80) - 1 ^ 0x5A5A_5A5A_5A5A_5A5A_5A5A


class Decision(StrEnum):
    FIRE = "fire"
    SKIP = "skip"


@dataclass(frozen=True)
class Timing:
    """The pipeline's clock settings (milliseconds)."""

    look_ahead_ms: int = 120_000
    """Scanners stage what falls due within this much of now (a late tick still lands on time)."""
    guard_ms: int = 60_000
    """Writers stage themselves what falls due before now + look_ahead + guard."""
    lead_ms: int = 2_000
    """Messages become receivable this much (+ < 1 s: SQS delays are whole seconds) before they
    are due, and the trigger waits out the rest. It covers the trigger event source's batching
    window (1 s, topology.TRIGGER_BATCHING_WINDOW_S) and its polling latency."""
    misfire_tolerance_ms: int = 60_000
    """An occurrence claimed later than this after its due time is a misfire."""
    max_catch_up_ms: int = 3_600_000
    """A scan covers at most this much of a backlog; the next scan continues from its mark."""
    lease_ms: int = 150_000
    """How long a claim holds a run from its due time: longer than a trigger can live (its
    function's 120 s timeout), so a live trigger is never overtaken; shorter than the delay
    queues' visibility timeout (720 s), so the redelivered message of a crashed one finds it run
    out and fires the occurrence."""


def run_id_for(task_id: str, due_ms: int) -> str:
    """The run id of a task's occurrence at ``due_ms``: the same for every copy of its message,
    so two scanners staging one occurrence agree on it (and on the receiver's Idempotency-Key)."""
    home = parse_task_id(task_id)
    random_bits = int.from_bytes(task_id.encode()[-10:], "big") ^ home.shard ^ _RUN_MASK
    return ulid(due_ms, random_bits)


def delay_seconds(due_ms: int, now_ms: int, lead_ms: int) -> int:
    """Whole seconds of SQS delay that land a message at most ``lead_ms`` (+1 s rounding) early."""
    return max(0, min(MAX_DELAY_SECONDS, (due_ms - now_ms - lead_ms) // 1000))


def writer_stages(due_ms: int, now_ms: int, timing: Timing) -> bool:
    """Whether whoever writes an occurrence due at ``due_ms`` must stage it itself: the scanners
    may already have passed its window (or be passing it now)."""
    return due_ms < now_ms + timing.look_ahead_ms + timing.guard_ms


def scan_window(watermark_ms: int | None, now_ms: int, timing: Timing) -> tuple[int, int]:
    """The due times ``[start, end)`` a scan stages: from the shard's mark to now + look-ahead,
    at most ``max_catch_up_ms`` of it at once. A first scan starts one look-ahead back."""
    end = now_ms + timing.look_ahead_ms
    start = watermark_ms if watermark_ms is not None else now_ms - timing.look_ahead_ms
    start = min(start, end)
    return start, min(end, start + timing.max_catch_up_ms)


def misfire_decision(policy: Misfire, due_ms: int, now_ms: int, timing: Timing) -> Decision:
    late = now_ms - due_ms > timing.misfire_tolerance_ms
    return Decision.SKIP if late and policy is Misfire.SKIP else Decision.FIRE


def next_occurrence(schedule: sched.Schedule, due_ms: int, now_ms: int, timing: Timing) -> int | None:
    """The occurrence to arm after the one due at ``due_ms`` ran (or was skipped) at ``now_ms``.

    The next occurrence normally; but when it is already past by more than the misfire tolerance
    (an outage, a long pause) the first one from now on: a recurring task never fires a burst of
    missed occurrences. A fixed delay's (``after: end``) is the period after ``now_ms``: this is
    asked only once the run has ended (its final state recorded: succeeded, failed, dead-lettered
    after its retries, skipped), so its next occurrence never overlaps it."""
    if sched.after_runs(schedule):
        ended = sched.after_run_ended(schedule, from_ms(now_ms))
        return to_ms(ended) if ended is not None else None
    following = sched.next_after(schedule, from_ms(due_ms))
    if following is not None and to_ms(following) < now_ms - timing.misfire_tolerance_ms:
        following = sched.at_or_after(schedule, from_ms(now_ms))
    return to_ms(following) if following is not None else None


@dataclass(frozen=True)
class Staged:
    """An occurrence on its way through the delay queue: what a staged message carries (its wire
    form: shared/messages.py)."""

    task_id: str
    due_ms: int
    run_id: str
    attempt: int = 1
    one_shot: bool = True
    priority: Priority = Priority.NORMAL
    """The lane it travels (its own delay queue when high); a retry and a held copy stay on it."""
    held: bool = False
    """Put back by a limit per destination (docs/receivers.md): its run waits, ``throttled``, for
    this message, which claims it without using an attempt."""
    start_ms: int | None = None
    """No call of this attempt starts before it: a retry's due start (its backoff after the
    attempt before started, or a receiver's Retry-After), or a held occurrence's booked start
    (None there: it books again when it comes back)."""
    booked: tuple[tuple[str, int], ...] = ()
    """The limits (name, version) its start was booked under: a limit changed since is booked again."""
    ready_ms: int | None = None
    """A held attempt: when it would have started without limits (it is throttled from then)."""
    throttled_ms: int = 0
    """How long limits held this run's earlier attempts back."""
    writer_ms: int | None = None
    """When a task's writer (a create, a resume, a PATCH: ``TaskService``) staged it, ahead of its
    own write; None when a scanner did. Such a message can overtake the write it goes before: a
    claim that finds the task not armed for it yet looks again while the writer may still be
    writing (:func:`shared.domain.claims.writer_may_still_arm`)."""

    @property
    def earliest_ms(self) -> int:
        """No call of this attempt starts before: its due time, or a receiver's Retry-After
        that outlasted SQS's longest delay (a retry's ``start_ms``). A held copy's start is a
        limit's booking, kept by the limits, not by this."""
        return self.due_ms if self.held else max(self.due_ms, self.start_ms or 0)

    def next_attempt(self, throttled_ms: int | None = None) -> Staged:
        """The next attempt of the run (on the same lane); ``throttled_ms``: the run's throttled
        time so far."""
        throttled = self.throttled_ms if throttled_ms is None else throttled_ms
        return replace(
            self,
            attempt=self.attempt + 1,
            held=False,
            start_ms=None,
            booked=(),
            ready_ms=None,
            throttled_ms=throttled,
        )

    def hold(self, start_ms: int | None, booked: tuple[tuple[str, int], ...], ready_ms: int) -> Staged:
        """This attempt put back until ``start_ms`` (None: to book again when it comes back);
        ``ready_ms``: when it would have started without limits (the first hold's stays)."""
        return replace(
            self,
            held=True,
            start_ms=start_ms,
            booked=booked,
            ready_ms=self.ready_ms if self.ready_ms is not None else ready_ms,
        )


def staged_for(task_id: str, due_ms: int, one_shot: bool, priority: Priority = Priority.NORMAL) -> Staged:
    return Staged(task_id, due_ms, run_id_for(task_id, due_ms), 1, one_shot, priority=priority)


def occurrence_key(task_id: str, due_ms: int) -> str:
    """The sort key of a later occurrence's pointer: ULID(due, the task's random bits)."""
    return ulid(due_ms, random_part(task_id))


def paused_next_fire(
    schedule: sched.Schedule, due_ms: int, misfire: Misfire, now_ms: int, running: bool = False
) -> int | None:
    """A paused task's ``next_fire_at`` at ``now_ms``: when a resume then would fire it, never a time
    gone by. The occurrence it is armed for while still ahead; once that went by, ``fire_now``
    fires it at once (``now_ms``) and ``skip`` at the schedule's first time from then on (None: a
    one-shot skipped, which the resume completes). :func:`resume_due` is what the resume arms
    (a recurring task's missed occurrence keeps its own time, fired late)."""
    due = resume_due(schedule, due_ms, misfire, now_ms, running)
    return None if due is None else max(due, now_ms)


def resume_due(
    schedule: sched.Schedule, due_ms: int, misfire: Misfire, now_ms: int, running: bool = False
) -> int | None:
    """The occurrence a task resumed at ``now_ms`` is armed for, given the one it was armed for
    when paused: that one if it is still ahead; if it was missed, ``fire_now`` fires it once now
    and ``skip`` moves to the first occurrence from now on (``None``: a one-shot skipped, done).
    A fixed delay whose occurrence's run is still going (``running``: paused mid-run) stays armed
    for it: that run's end arms the next, so none starts beside it."""
    if due_ms >= now_ms or (running and sched.after_runs(schedule)):
        return due_ms
    if misfire is Misfire.FIRE_NOW:
        return now_ms if not sched.is_recurring(schedule) else due_ms
    if not sched.is_recurring(schedule):
        return None
    if sched.after_runs(schedule):  # a fixed delay skips the missed one: the period from now
        ended = sched.after_run_ended(schedule, from_ms(now_ms))
        return to_ms(ended) if ended is not None else None
    following = sched.at_or_after(schedule, from_ms(now_ms))
    return to_ms(following) if following is not None else None


IN_FLIGHT = (RunStatus.FIRING, RunStatus.RETRYING, RunStatus.THROTTLED)
"""A run in these has not ended: an attempt is going, or one is still to come."""


def running(task: Task) -> bool:
    """Whether the occurrence the task is armed for has a run that has not ended."""
    run = task.run
    return run is not None and run.status in IN_FLIGHT and run.scheduled_for == task.due_at
