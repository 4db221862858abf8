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


def is_final(status: TaskStatus) -> bool:
    return status in ENDED


def ended_as(run: RunStatus) -> TaskStatus:
    """What a task that will never fire again by itself is once its last occurrence ended ``run``:
    ``failed`` when that occurrence failed, else ``completed``."""
    return TaskStatus.FAILED if run in (RunStatus.FAILED, RunStatus.DEAD_LETTERED) else TaskStatus.COMPLETED


def check_task_transition(current: TaskStatus, target: TaskStatus) -> TaskStatus:
    if target not in TASK_TRANSITIONS[current]:
        raise InvalidTransition(f"a {current.value} task cannot become {target.value}")
    return target
