"""``/v1/tasks``: a task, a batch's answers, a run."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from shared.api.responses import BatchError, BatchOut, BatchTask, ParentOut, RetryOut, RunOut, TaskOut
from shared.api.views.errors import error_body
from shared.api.views.forms import alert_shown, schedule_of, targets_shown
from shared.domain.errors import SundialError
from shared.domain.firing import paused_next_fire, running
from shared.domain.registration import notices
from shared.domain.retry import RetryPolicy
from shared.domain.schedules import Flexible
from shared.domain.states import TaskStatus
from shared.domain.tasks import LastRun, Run, Task
from shared.domain.times import from_ms, now_ms, to_ms


def retry_view(retry: RetryPolicy) -> RetryOut:
    return RetryOut(
        max_attempts=retry.max_attempts,
        backoff=retry.backoff,
        interval_seconds=retry.interval_seconds,
        max_age_seconds=retry.max_age_seconds,
    )


def _last_run(run: LastRun | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {"run_id": run.run_id, "scheduled_for": run.scheduled_for, "status": run.status, "fired_at": run.fired_at}


def task_view(task: Task, *, scheduled_now: bool = False) -> TaskOut:
    """A task. ``scheduled_now``: the answer to the write that set its schedule, which carries
    the notices about it (an ``at`` already past fires at once)."""
    said = notices(task.schedule, task.updated_at) if scheduled_now else ()
    return TaskOut.model_validate(
        {
            "id": task.id,
            "name": task.name,
            "status": task.status,
            "last_run": _last_run(task.last_run),
            "schedule": schedule_of(task.schedule),
            **targets_shown(task.targets, task.multicast),
            "payload": task.payload,
            "retry": retry_view(task.retry),
            "misfire": task.misfire,
            "priority": task.priority,
            "next_fire_at": next_fire(task),
            "created_at": task.created_at,
            "updated_at": task.updated_at,
            "version": task.version,
            **alert_shown(task.alert),
            "pause_after_failures": task.pause_after_failures,
            "paused_reason": task.paused_reason,
            "consecutive_failures": task.consecutive_failures,
            "on_success": list(task.on_success) or None,
            "on_failure": list(task.on_failure) or None,
            "notices": [{"field": n.field, "message": n.message} for n in said] or None,
            "eventbridge": _eventbridge(task),
            "tags": dict(task.tags),
        }
    )


def next_fire(task: Task) -> datetime | None:
    """The task's next fire; a paused task's is when resuming it now would fire it
    (docs/api.md, "A paused task's next_fire_at"): never a time gone by while it was paused."""
    if task.status is not TaskStatus.PAUSED or task.next_fire_at is None:
        return task.next_fire_at
    shown = paused_next_fire(task.schedule, to_ms(task.due_at), task.misfire, now_ms(), running(task))
    return None if shown is None else from_ms(shown)


def _eventbridge(task: Task) -> dict[str, Any] | None:
    made = task.eventbridge
    if made is None:
        return None
    window = task.schedule.window_s if isinstance(task.schedule, Flexible) else None
    return {
        "schedule_arn": made.arn,
        "dead_letter_arn": made.dead_letter_arn,
        "delete_after_completion": made.delete_after_completion,
        "flexible_window_seconds": window,
    }


def run_view(run: Run) -> RunOut:
    return RunOut(
        run_id=run.run_id,
        task_id=run.task_id,
        scheduled_for=run.scheduled_for,
        fired_at=run.fired_at,
        status=run.status,
        attempts=run.attempts,
        lateness_ms=run.lateness_ms,
        last_error=run.last_error,
        throttled_ms=run.throttled_ms,
        parent=ParentOut(task_id=run.parent.task_id, run_id=run.parent.run_id, status=run.parent.status)
        if run.parent is not None
        else None,
        started=list(run.started) if run.started else None,
    )


def batch_view(answers: Sequence[Task | SundialError]) -> BatchOut:
    """``POST /v1/tasks:batch``: each spec's task or error, by its index."""
    return BatchOut(
        items=[
            BatchTask(index=i, task=task_view(a, scheduled_now=True))
            if isinstance(a, Task)
            else BatchError(index=i, error=error_body(a))
            for i, a in enumerate(answers)
        ]
    )
