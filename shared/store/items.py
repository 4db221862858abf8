"""A task's home item: the one builder (:func:`to_item`) and reader (:func:`to_task`) of it
(docs/design.md, section 1, "Attributes of the task home item"), and the builder of the pointer to
a later occurrence (:func:`occurrence_item`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime

from shared.domain.chains import ChainLink
from shared.domain.codec import (
    alert_from_dict,
    alert_to_dict,
    compact_json,
    retry_from_dict,
    retry_to_dict,
    schedule_from_dict,
    schedule_to_dict,
    target_from_dict,
    target_to_dict,
)
from shared.domain.firing import occurrence_key
from shared.domain.ids import parse_task_id
from shared.domain.schedules import After, Every, base
from shared.domain.states import RunStatus, TaskStatus, watched_state
from shared.domain.tasks import EventBridgeSchedule, Misfire, Priority, Task
from shared.domain.times import from_ms, to_ms
from shared.domain.workflows import NodeLink
from shared.store.keys import bucket_pk, list_pk, list_sk, status_pk, task_key
from shared.store.models import OccurrenceItem, RunLogItem, TaskItem
from shared.store.runs import ended_run_of, run_on_item, set_run_fields


def to_item(task: Task, list_shards: int) -> TaskItem:
    schedule = task.schedule
    timed = base(schedule)
    anchor = timed.anchor if isinstance(timed, After | Every) else None
    pk, sk = task_key(task.id)
    item = TaskItem(
        pk,
        sk,
        tenant=task.tenant,
        task_id=task.id,
        name=task.name,
        status=task.status.value,
        schedule=compact_json(schedule_to_dict(schedule)),
        anchor_ms=to_ms(anchor) if anchor else None,
        targets=compact_json([target_to_dict(target) for target in task.targets]),
        multicast=task.multicast,
        payload=None if task.payload is None else compact_json(task.payload),
        retry=compact_json(retry_to_dict(task.retry)),
        misfire=task.misfire.value,
        priority=lane_of(task.priority),
        due_ms=to_ms(task.due_at),
        next_fire_ms=to_ms(task.next_fire_at) if task.next_fire_at else None,
        version=task.version,
        created_ms=to_ms(task.created_at),
        updated_ms=to_ms(task.updated_at),
        expires_at=task.expires_at,
        parent_id=task.parent_id,
        stops_with_parent=task.stops_with_parent or None,
        alert=compact_json(alert_to_dict(task.alert)) if task.alert is not None else None,
        pause_after_failures=task.pause_after_failures,
        paused_reason=task.paused_reason,
        failures=task.consecutive_failures or None,
        on_success=compact_json(list(task.on_success)) if task.on_success else None,
        on_failure=compact_json(list(task.on_failure)) if task.on_failure else None,
        chain=compact_json(task.chain.to_dict()) if task.chain is not None else None,
        workflow=compact_json(task.workflow.to_dict()) if task.workflow is not None else None,
        eventbridge=compact_json(asdict(task.eventbridge)) if task.eventbridge is not None else None,
        tags=compact_json(dict(sorted(task.tags.items()))) if task.tags else None,
        lpk=None if task.parent_id else list_pk(task.tenant, task.id, list_shards),
        lsk=None if task.parent_id else list_sk(to_ms(task.created_at), task.id),
    )
    item.spk, item.ssk = status_keys(task, list_shards) or (None, None)
    if task.run is not None:
        set_run_fields(item, task.run)
    return item


def status_keys(
    task: Task, list_shards: int, status: TaskStatus | None = None, paused_reason: str | None = None
) -> tuple[str, str] | None:
    """The task's keys in the status index (``spk``, ``ssk``: docs/status-index.md) once it is in
    ``status`` (its own status when None, its own ``paused_reason`` with it), or None when that
    status is not indexed there or the task is not listed (an extra run's item)."""
    if status is None:
        status, paused_reason = task.status, task.paused_reason
    listed = task.parent_id is None
    return keys_in_status(task.tenant, task.id, to_ms(task.created_at), listed, status, paused_reason, list_shards)


def keys_in_status(
    tenant: str,
    task_id: str,
    created_ms: int,
    listed: bool,
    status: TaskStatus,
    paused_reason: str | None,
    list_shards: int,
) -> tuple[str, str] | None:
    """:func:`status_keys` from the parts of a task that never change and its new status."""
    state = watched_state(status, paused_reason)
    if state is None or not listed:
        return None
    return status_pk(tenant, "task", state.value, task_id, list_shards), list_sk(created_ms, task_id)


def lane_of(priority: Priority) -> str | None:
    """A task's priority as its items keep it: absent when normal."""
    return None if priority is Priority.NORMAL else priority.value


def priority_of(stored: str | None) -> Priority:
    return Priority(stored) if stored else Priority.NORMAL


def to_task(item: TaskItem, logs: dict[str, RunLogItem] | None = None) -> Task:
    """The task an item holds. A one-shot run recorded in its batch's run log (``logs``, keyed
    by log id) has succeeded and the task is complete (docs/design.md, section 2.4)."""
    run = run_on_item(item, logs)
    status = TaskStatus(item.status)
    next_fire: datetime | None = from_ms(int(item.next_fire_ms)) if item.next_fire_ms is not None else None
    logged_success = run is not None and run.status is RunStatus.SUCCEEDED and item.run_status == RunStatus.FIRING.value
    if logged_success and status is TaskStatus.SCHEDULED and item.next_fire_ms == item.run_due_ms:
        status, next_fire = TaskStatus.COMPLETED, None
    anchor = from_ms(int(item.anchor_ms)) if item.anchor_ms is not None else None
    expires: datetime | None = item.expires_at
    return Task(
        id=item.task_id,
        tenant=item.tenant,
        name=item.name,
        schedule=schedule_from_dict(json.loads(item.schedule), anchor),
        targets=tuple(target_from_dict(t) for t in json.loads(item.targets)),
        multicast=bool(item.multicast),
        payload=None if item.payload is None else json.loads(item.payload),
        retry=retry_from_dict(json.loads(item.retry)),
        misfire=Misfire(item.misfire),
        priority=priority_of(item.priority),
        status=status,
        due_at=from_ms(int(item.due_ms)),
        next_fire_at=next_fire,
        created_at=from_ms(int(item.created_ms)),
        updated_at=from_ms(int(item.updated_ms)),
        version=int(item.version or 0),
        expires_at=expires,
        run=run,
        parent_id=item.parent_id,
        stops_with_parent=bool(item.stops_with_parent),
        alert=alert_from_dict(json.loads(item.alert)) if item.alert is not None else None,
        pause_after_failures=int(item.pause_after_failures) if item.pause_after_failures is not None else None,
        paused_reason=item.paused_reason,
        consecutive_failures=int(item.failures or 0),
        on_success=tuple(json.loads(item.on_success)) if item.on_success is not None else (),
        on_failure=tuple(json.loads(item.on_failure)) if item.on_failure is not None else (),
        chain=ChainLink.from_dict(json.loads(item.chain)) if item.chain is not None else None,
        workflow=NodeLink.from_dict(json.loads(item.workflow)) if item.workflow is not None else None,
        ended_run=ended_run_of(item.ended_run),
        eventbridge=EventBridgeSchedule(**json.loads(item.eventbridge)) if item.eventbridge is not None else None,
        tags=json.loads(item.tags) if item.tags is not None else {},
    )


def occurrence_item(task: Task, due_ms: int, staged: bool) -> OccurrenceItem | None:
    """The pointer to the task's occurrence due at ``due_ms``, in that minute's bucket, for the
    scanners; None when the home item is that pointer (an occurrence at the task's first due
    time: its key is the home item's, which a pointer would overwrite)."""
    home = parse_task_id(task.id)
    if due_ms == home.due_ms:
        return None
    return OccurrenceItem(
        bucket_pk(due_ms, home.shard),
        occurrence_key(task.id, due_ms),
        task_id=task.id,
        due_ms=due_ms,
        staged_ms=due_ms if staged else None,
        priority=lane_of(task.priority),
    )
