"""Where a run lives, and the one builder and reader of each stored shape (docs/design.md, 2.6,
"Where a run lives"):

* the **task's item** holds the run in flight (``run_*`` fields: claimed, retrying, held) and,
  for a one-shot task, its run for good once it ends (``finish_one_shot``);
* a **run log** (``RL#<batch>``) holds a trigger batch's one-shot successes, one write for the
  batch: a task item whose run is ``firing`` under a log that lists the run has succeeded;
* a **run record** (``R#<task>``) holds each ended occurrence of a recurring task (written by
  its re-arm) and the place of each extra run in its parent's history (written with it);
* the task item's ``ended_run`` holds its latest ended occurrence in brief (``last_run``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

from pynamodb.expressions.update import Action

from shared.domain.chains import ChainLink, ParentRun
from shared.domain.codec import compact_json
from shared.domain.states import RunStatus
from shared.domain.tasks import LastRun, Run
from shared.domain.times import from_ms, to_ms
from shared.store.models import RunItem, RunLogItem, TaskItem


def run_position(run: Run) -> str:
    """Where a run sorts in its task's history: the sort key of its ``R#`` item."""
    return f"{to_ms(run.scheduled_for):013d}#{run.run_id}"


def run_item(task_id: str, tenant: str, run: Run, expires_at: datetime, *, child: str | None = None) -> RunItem:
    """The record of ``run`` in the history of ``task_id``; ``child``: the extra run's own task,
    whose item holds its state (the record only places it)."""
    parent = run.parent
    return RunItem(
        f"R#{task_id}",
        run_position(run),
        tenant=tenant,
        task_id=task_id,
        run_id=run.run_id,
        status=run.status.value,
        scheduled_ms=to_ms(run.scheduled_for),
        fired_ms=to_ms(run.fired_at) if run.fired_at else None,
        attempts=run.attempts,
        lateness_ms=run.lateness_ms,
        throttled_ms=run.throttled_ms or None,
        last_error=run.last_error,
        child=child,
        started=started_json(run.started),
        parent=compact_json({"task_id": parent.task_id, "run_id": parent.run_id, "status": parent.status.value})
        if parent is not None
        else None,
        expires_at=expires_at,
    )


def run_from_item(item: RunItem) -> Run:
    return Run(
        run_id=item.run_id,
        task_id=item.task_id,
        scheduled_for=from_ms(int(item.scheduled_ms)),
        status=RunStatus(item.status),
        attempts=int(item.attempts or 0),
        fired_at=from_ms(int(item.fired_ms)) if item.fired_ms is not None else None,
        lateness_ms=int(item.lateness_ms) if item.lateness_ms is not None else None,
        last_error=item.last_error,
        throttled_ms=int(item.throttled_ms or 0),
        parent=_parent_of(item.parent),
        started=started_of(item.started),
    )


def started_json(started: tuple[str, ...]) -> str | None:
    """What a run's targets started, as its items keep it (None: nothing, nothing written)."""
    return compact_json(list(started)) if started else None


def started_of(text: str | None) -> tuple[str, ...]:
    return tuple(json.loads(text)) if text else ()


def _parent_of(text: str | None) -> ParentRun | None:
    if text is None:
        return None
    data = json.loads(text)
    return ParentRun(data["task_id"], data["run_id"], RunStatus(data["status"]))


def set_run_fields(item: TaskItem, run: Run) -> None:
    """Put ``run`` on its task's item (a new item: an extra run born ended, a copy in tests)."""
    item.run_due_ms = to_ms(run.scheduled_for)
    item.run_id = run.run_id
    item.run_status = run.status.value
    item.attempts = run.attempts
    item.fired_ms = to_ms(run.fired_at) if run.fired_at else None
    item.lateness_ms = run.lateness_ms
    item.last_error = run.last_error


def run_on_item(item: TaskItem, logs: dict[str, RunLogItem] | None = None) -> Run | None:
    """The run a task's item holds: as its fields say, or succeeded when it is ``firing`` under a
    batch whose run log (``logs``, by log id: :func:`run_logs`) lists it."""
    if item.run_id is None or item.run_due_ms is None or item.run_status is None:
        return None
    run = Run(
        run_id=item.run_id,
        task_id=item.task_id,
        scheduled_for=from_ms(int(item.run_due_ms)),
        status=RunStatus(item.run_status),
        attempts=int(item.attempts or 0),
        fired_at=from_ms(int(item.fired_ms)) if item.fired_ms is not None else None,
        lateness_ms=int(item.lateness_ms) if item.lateness_ms is not None else None,
        last_error=item.last_error,
        throttled_ms=int(item.throttled_ms or 0),
        parent=ChainLink.from_dict(json.loads(item.chain)).parent if item.chain is not None else None,
        started=started_of(item.run_started),
    )
    logged = (logs or {}).get(item.run_log or "")
    if run.status is not RunStatus.FIRING or logged is None or run.run_id not in logged.runs:
        return run
    entry = logged.runs[run.run_id]
    return replace(
        run,
        status=RunStatus.SUCCEEDED,
        fired_at=from_ms(int(entry["fired_ms"])),
        lateness_ms=int(entry["lateness_ms"]),
        attempts=int(entry["attempts"]),
        throttled_ms=int(entry.get("throttled_ms", 0)),
    )


def run_logs(items: list[TaskItem]) -> dict[str, RunLogItem]:
    """The run logs that may hold the outcome of these items' firing runs (one BatchGetItem)."""
    wanted = {i.run_log for i in items if i.run_status == RunStatus.FIRING.value and i.run_log}
    if not wanted:
        return {}
    keys = [(f"RL#{log}", "RL") for log in sorted(wanted)]
    return {log.pk.removeprefix("RL#"): log for log in RunLogItem.batch_get(keys)}


def ended_run_json(run: Run) -> str:
    """A task's latest ended occurrence, in brief, as its item's ``ended_run`` keeps it."""
    fired = to_ms(run.fired_at) if run.fired_at is not None else None
    return compact_json(
        {"run_id": run.run_id, "scheduled_ms": to_ms(run.scheduled_for), "status": run.status.value, "fired_ms": fired}
    )


def ended_run_of(text: str | None) -> LastRun | None:
    if text is None:
        return None
    data = json.loads(text)
    fired = data.get("fired_ms")
    return LastRun(
        data["run_id"],
        from_ms(int(data["scheduled_ms"])),
        RunStatus(data["status"]),
        from_ms(int(fired)) if fired is not None else None,
    )


def throttled_actions(throttled_ms: int) -> list[Action]:
    """How long limits held the run back so far, on its task's item (nothing written for none)."""
    return [TaskItem.throttled_ms.set(throttled_ms)] if throttled_ms else []


def started_actions(started: tuple[str, ...]) -> list[Action]:
    """What the run's targets started so far, on its task's item (nothing written when nothing started)."""
    text = started_json(started)
    return [TaskItem.run_started.set(text)] if text is not None else []
