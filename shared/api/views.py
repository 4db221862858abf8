"""Domain objects in the API's JSON form."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared.domain.codec import retry_to_dict, schedule_to_dict, target_to_dict
from shared.domain.errors import SundialError
from shared.domain.jobs import JobView
from shared.domain.tasks import DeadLetter, Run, Target, Task
from shared.domain.times import from_ms, iso


def targets_view(targets: tuple[Target, ...], multicast: bool) -> dict[str, Any]:
    as_dicts = [target_to_dict(target) for target in targets]
    return {"targets": as_dicts} if multicast else {"target": as_dicts[0]}


def task_view(task: Task) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": task.id,
        "name": task.name,
        "status": task.status.value,
        "schedule": schedule_to_dict(task.schedule),
    }
    view.update(targets_view(task.targets, task.multicast))
    view.update(
        {
            "payload": task.payload,
            "retry": retry_to_dict(task.retry),
            "misfire": task.misfire.value,
            "next_fire_at": iso(task.next_fire_at) if task.next_fire_at else None,
            "created_at": iso(task.created_at),
            "updated_at": iso(task.updated_at),
            "version": task.version,
        }
    )
    return view


def dead_letter_view(letter: DeadLetter) -> dict[str, Any]:
    return {
        "id": letter.id,
        "task_id": letter.task_id,
        "run_id": letter.run_id,
        "name": letter.name,
        "status": letter.status,
        "reason": letter.reason,
        "scheduled_for": iso(letter.scheduled_for),
        "failed_at": iso(letter.failed_at),
        "attempts": letter.attempts,
        **targets_view(letter.targets, letter.multicast),
        "payload": letter.payload,
        "retry": retry_to_dict(letter.retry),
        "redriven_run_id": letter.redriven_run_id,
        "redriven_at": iso(letter.redriven_at) if letter.redriven_at else None,
    }


def run_view(run: Run) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "task_id": run.task_id,
        "scheduled_for": iso(run.scheduled_for),
        "fired_at": iso(run.fired_at) if run.fired_at else None,
        "status": run.status.value,
        "attempts": run.attempts,
        "lateness_ms": run.lateness_ms,
        "last_error": run.last_error,
    }


def error_view(error: SundialError) -> dict[str, Any]:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.details:
        body["details"] = [{"field": d.field, "message": d.message} for d in error.details]
    return {"error": body}


def job_view(job: JobView) -> dict[str, Any]:
    total = job.total_shards
    percent = (job.done_shards * 100 // total) if total else (100 if job.status == "succeeded" else 0)
    return {
        "id": job.id,
        "name": job.name,
        "status": job.status,
        "progress": {"done_shards": job.done_shards, "total_shards": total, "percent": percent, "level": job.level},
        "result": job.result,
        "error": job.error,
        "created_at": iso(from_ms(job.created_ms)),
        "finished_at": iso(from_ms(job.finished_ms)) if job.finished_ms is not None else None,
    }


def batch_view(answers: Sequence[Task | SundialError]) -> dict[str, Any]:
    """``POST /v1/tasks:batch``: each spec's task or error, by its index."""
    return {
        "items": [
            {"index": i, "task": task_view(a)} if isinstance(a, Task) else {"index": i, **error_view(a)}
            for i, a in enumerate(answers)
        ]
    }


def redrive_view(done: Sequence[tuple[DeadLetter, str]]) -> dict[str, Any]:
    runs = [{"id": letter.id, "task_id": letter.task_id, "run_id": run_id} for letter, run_id in done]
    return {"redriven": len(done), "runs": runs}
