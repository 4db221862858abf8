"""Task and run statuses, and the transitions a task may make between its statuses."""

from __future__ import annotations

from enum import StrEnum

from shared.domain.errors import InvalidTransition


class TaskStatus(StrEnum):
    SCHEDULED = "scheduled"
    PAUSED = "paused"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"
    """It will never fire again by itself, and its last occurrence failed (``failed`` or
    ``dead_lettered``): a one-shot task whose run failed, a recurring one whose last ended so."""


class TaskFilter(StrEnum):
    """What ``GET /v1/tasks?status=`` takes: a task status, or ``paused_after_failures``, the
    paused tasks Sundial paused itself after failures in a row (``paused_reason`` set;
    ``paused`` lists them with the ones a client paused)."""

    SCHEDULED = "scheduled"
    PAUSED = "paused"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"
    PAUSED_AFTER_FAILURES = "paused_after_failures"


WATCHED_TASKS: dict[TaskFilter, tuple[TaskFilter, ...]] = {
    TaskFilter.FAILED: (TaskFilter.FAILED,),
    TaskFilter.PAUSED: (TaskFilter.PAUSED, TaskFilter.PAUSED_AFTER_FAILURES),
    TaskFilter.PAUSED_AFTER_FAILURES: (TaskFilter.PAUSED_AFTER_FAILURES,),
}
"""The task filters the status index answers, each with the index states it reads
(docs/status-index.md): the statuses somebody must look at. The others read the listing index."""


def watched_state(status: TaskStatus, paused_reason: str | None) -> TaskFilter | None:
    """The status index's state of a task in ``status`` (None: not indexed): failed, paused by a
    client, or paused by Sundial after failures in a row (it says why in ``paused_reason``)."""
    if status is TaskStatus.FAILED:
        return TaskFilter.FAILED
    if status is TaskStatus.PAUSED:
        return TaskFilter.PAUSED_AFTER_FAILURES if paused_reason else TaskFilter.PAUSED
    return None


def passes(status: TaskStatus, paused_reason: str | None, wanted: TaskFilter) -> bool:
    """Whether a task in ``status`` passes the filter ``wanted``."""
    if wanted is TaskFilter.PAUSED_AFTER_FAILURES:
        return status is TaskStatus.PAUSED and bool(paused_reason)
    return status.value == wanted.value


class RunStatus(StrEnum):
    STAGED = "staged"
    FIRING = "firing"
    SUCCEEDED = "succeeded"
    RETRYING = "retrying"
    FAILED = "failed"
    DEAD_LETTERED = "dead_lettered"
    SKIPPED = "skipped"
    THROTTLED = "throttled"
    """Held back by a limit per destination: it fires when the limit allows (no attempt used)."""


class LetterStatus(StrEnum):
    """A dead letter's: failed for good, then redriven (once)."""

    DEAD_LETTERED = "dead_lettered"
    REDRIVEN = "redriven"


TASK_TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.SCHEDULED: frozenset({TaskStatus.PAUSED, TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}),
    TaskStatus.PAUSED: frozenset({TaskStatus.SCHEDULED, TaskStatus.CANCELLED}),
    TaskStatus.COMPLETED: frozenset(),
    TaskStatus.CANCELLED: frozenset(),
    # a redriven run that succeeds; a cancel puts it aside (off the failed list)
    TaskStatus.FAILED: frozenset({TaskStatus.COMPLETED, TaskStatus.CANCELLED}),
}

ENDED = frozenset({TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED})
"""A task in one of these never fires again by itself (a client cannot change it; a failed one
becomes completed when a redrive of its run succeeds, and cancelled when a client puts it aside)."""


def ended_as(run: RunStatus) -> TaskStatus:
    """What a task that will never fire again by itself is once its last occurrence ended ``run``:
    ``failed`` when that occurrence failed, else ``completed``."""
    return TaskStatus.FAILED if run in (RunStatus.FAILED, RunStatus.DEAD_LETTERED) else TaskStatus.COMPLETED


def check_task_transition(current: TaskStatus, target: TaskStatus) -> TaskStatus:
    if target not in TASK_TRANSITIONS[current]:
        raise InvalidTransition(f"a {current.value} task cannot become {target.value}")
    return target
