"""The task repository on DynamoDB, through the PynamoDB models."""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

from pynamodb.exceptions import DoesNotExist, PynamoDBException

from shared.domain.codec import (
    retry_from_dict,
    retry_to_dict,
    schedule_from_dict,
    schedule_to_dict,
    target_from_dict,
    target_to_dict,
)
from shared.domain.errors import ConcurrentUpdate, StorageUnavailable, TaskNotFound
from shared.domain.schedules import After, Every
from shared.domain.states import TaskStatus
from shared.domain.tasks import Misfire, Page, Task
from shared.domain.times import from_ms, to_ms
from shared.store.keys import bucket_pk, decode_cursor, encode_cursor, list_pk, list_sk, task_key
from shared.store.models import TaskItem

COMPACT = {"separators": (",", ":"), "ensure_ascii": False}
FILTERED_WINDOW = 50
"""Index entries read per round when a status filter may discard some."""
MAX_ROUNDS = 20
"""Rounds per listing request; past them the page is returned short with a cursor."""


def _json(value: Any) -> str:
    return json.dumps(value, **COMPACT)  # type: ignore[arg-type]


def _is_conflict(exc: PynamoDBException) -> bool:
    return getattr(exc, "cause_response_code", None) == "ConditionalCheckFailedException"


def _storage_error(exc: PynamoDBException) -> StorageUnavailable:
    return StorageUnavailable(f"the task store did not answer: {exc.msg}")


def to_item(task: Task, list_shards: int) -> TaskItem:
    schedule = task.schedule
    anchor = schedule.anchor if isinstance(schedule, After | Every) else None
    pk, sk = task_key(task.id)
    item = TaskItem(
        pk,
        sk,
        tenant=task.tenant,
        task_id=task.id,
        name=task.name,
        status=task.status.value,
        schedule=_json(schedule_to_dict(schedule)),
        anchor_ms=to_ms(anchor) if anchor else None,
        targets=_json([target_to_dict(target) for target in task.targets]),
        multicast=task.multicast,
        payload=None if task.payload is None else _json(task.payload),
        retry=_json(retry_to_dict(task.retry)),
        misfire=task.misfire.value,
        due_ms=to_ms(task.due_at),
        next_fire_ms=to_ms(task.next_fire_at) if task.next_fire_at else None,
        created_ms=to_ms(task.created_at),
        updated_ms=to_ms(task.updated_at),
        expires_at=task.expires_at,
        lpk=list_pk(task.tenant, task.id, list_shards),
        lsk=list_sk(to_ms(task.created_at), task.id),
    )
    if task.version:
        item.version = task.version
    return item


def to_task(item: TaskItem) -> Task:
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
        status=TaskStatus(item.status),
        due_at=from_ms(int(item.due_ms)),
        next_fire_at=from_ms(int(item.next_fire_ms)) if item.next_fire_ms is not None else None,
        created_at=from_ms(int(item.created_ms)),
        updated_at=from_ms(int(item.updated_ms)),
        version=int(item.version or 0),
        expires_at=expires,
    )


class DynamoTaskRepository:
    def __init__(self, list_shards: int) -> None:
        self.list_shards = list_shards

    def create(self, task: Task) -> Task:
        item = to_item(replace(task, version=0), self.list_shards)
        try:
            item.save(condition=TaskItem.pk.does_not_exist())
        except PynamoDBException as exc:
            if _is_conflict(exc):
                raise ConcurrentUpdate(f"task {task.id} already exists") from exc
            raise _storage_error(exc) from exc
        return to_task(item)

    def get(self, tenant: str, task_id: str) -> Task:
        pk, sk = task_key(task_id)
        try:
            item = TaskItem.get(pk, sk, consistent_read=True)
        except DoesNotExist as exc:
            raise TaskNotFound(f"task {task_id!r} not found") from exc
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        if item.tenant != tenant:
            raise TaskNotFound(f"task {task_id!r} not found")
        return to_task(item)

    def update(self, task: Task) -> Task:
        item = to_item(task, self.list_shards)
        try:
            item.save()  # the version attribute makes this conditional on task.version
        except PynamoDBException as exc:
            if _is_conflict(exc):
                raise ConcurrentUpdate(f"task {task.id} changed meanwhile; read it again") from exc
            raise _storage_error(exc) from exc
        return to_task(item)

    # Listing: merge the tenant's index partitions newest first, then read the items.

    def _positions(self, tenant: str, before: str | None, count: int) -> list[tuple[str, str, str]]:
        """Up to ``count`` (lsk, pk, sk) of the tenant's index entries older than ``before``."""

        def shard(k: int) -> Iterator[tuple[str, str, str]]:
            condition = TaskItem.lsk < before if before is not None else None
            for entry in TaskItem.by_tenant.query(f"L#{tenant}#{k}", condition, scan_index_forward=False, limit=count):
                yield entry.lsk, entry.pk, entry.sk

        streams = [shard(k) for k in range(self.list_shards)]
        merged = heapq.merge(*streams, key=lambda entry: entry[0], reverse=True)
        return [entry for _, entry in zip(range(count), merged, strict=False)]

    def list(self, tenant: str, *, status: TaskStatus | None, limit: int, cursor: str | None) -> Page[Task]:
        position = decode_cursor(cursor) if cursor else None
        window = limit + 1 if status is None else max(limit + 1, FILTERED_WINDOW)
        found: list[tuple[str, Task]] = []
        try:
            for _ in range(MAX_ROUNDS):
                entries = self._positions(tenant, position, window)
                if not entries:
                    return Page([task for _, task in found])
                keys = [(pk, sk) for _, pk, sk in entries]
                items = {(i.pk, i.sk): i for i in TaskItem.batch_get(keys, consistent_read=True)}
                for lsk, pk, sk in entries:
                    item = items.get((pk, sk))
                    position = lsk
                    if item is None or item.tenant != tenant:
                        continue
                    if status is None or item.status == status.value:
                        found.append((lsk, to_task(item)))
                    if len(found) > limit:
                        page = found[:limit]
                        return Page([task for _, task in page], encode_cursor(page[-1][0]))
                if len(entries) < window:
                    return Page([task for _, task in found])
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        # Examined MAX_ROUNDS windows without filling the page: hand back what we have.
        assert position is not None
        return Page([task for _, task in found], encode_cursor(position))


def ensure_table(table_name: str | None = None) -> None:
    """Create the table from the models where it does not exist (the local runtime and tests)."""
    if table_name is not None:
        TaskItem.Meta.table_name = table_name
    if not TaskItem.exists():
        TaskItem.create_table(wait=True)


__all__ = ["DynamoTaskRepository", "bucket_pk", "ensure_table", "to_item", "to_task"]
