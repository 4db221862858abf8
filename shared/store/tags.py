"""The tag index: one small item a (task, tag), ``TG#<tenant>#<k>#<key>:<value>`` / the task's listing
position ``<created ms>#<task id>`` (``TagEntryItem``), so that ``GET /v1/tasks?tag=team:orders``
and a bulk operation by tag read that tag's tasks newest first and nothing else, however many
other tasks the tenant has (docs/bulk.md).

Why items and not an index: a global secondary index keys an item once, and a task has up to ten
tags. The entries are plain items of the table, read with strongly consistent Queries.

* ``<k>`` is the task's list shard (``crc32(id) % list_shards``, as the listing index's): the
  entries of one popular tag spread over ``list_shards`` partitions, and a read merges them.
* A tag key holds no ``:`` and no ``#`` (shared/domain/tags.py), so the partition key is read
  one way only.
* Written **before** the task (a registration) or the change that gives the tag (a PATCH), so a
  written task is always found under its tags; an entry whose task does not hold the tag (the
  task was never written, a change took the tag away and its entry's deletion did not happen, or
  the task expired) is skipped by the read, which reads each task again.
* An entry expires (TTL) when its task can no longer be listed: with the task's own expiry once
  it has one, else after the last time it can be due and its retention, and :data:`PAGE_SLACK`
  (a one-shot: its due time; a recurring task with an ``end``: that end; one without: never,
  until a client's write ends it and rewrites its entries).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from pynamodb.exceptions import PynamoDBException

from shared.domain.errors import StorageUnavailable
from shared.domain.schedules import base
from shared.domain.tasks import Task
from shared.domain.times import to_ms
from shared.store.keys import list_shard, list_sk, task_key
from shared.store.listing import PAGE_SLACK
from shared.store.models import TagEntryItem

TAG_PREFIX = "TG#"
BATCH_WRITE_ITEMS = 25
"""Items per BatchWriteItem call (DynamoDB's limit)."""
WRITE_ROUNDS = 5
FIRST_PAUSE_S = 0.05

Position = tuple[str, str, str]
"""(listing position, the task's home item pk, sk)."""


def tag_pk(tenant: str, tag: tuple[str, str], k: int) -> str:
    key, value = tag
    return f"{TAG_PREFIX}{tenant}#{k}#{key}:{value}"


def entry_expiry(task: Task, retention: timedelta) -> datetime | None:
    """When the task's entries expire (the module's note): None while it may fire forever."""
    if task.expires_at is not None:
        return task.expires_at
    if not task.recurring:
        return task.due_at + retention + PAGE_SLACK
    end: datetime | None = getattr(base(task.schedule), "end", None)
    return end + retention + PAGE_SLACK if end is not None else None


def entries_of(task: Task, list_shards: int, retention: timedelta) -> list[TagEntryItem]:
    """The index entries of the task's tags (none for an extra run, which is never listed)."""
    if task.parent_id is not None:
        return []
    k = list_shard(task.id, list_shards)
    position = list_sk(to_ms(task.created_at), task.id)
    expires = entry_expiry(task, retention)
    return [TagEntryItem(tag_pk(task.tenant, tag, k), position, expires_at=expires) for tag in task.tags.items()]


def dropped_entries(task: Task, dropped: Mapping[str, str], list_shards: int) -> list[TagEntryItem]:
    """The entries of tags the task no longer has (``dropped``), to delete."""
    k = list_shard(task.id, list_shards)
    position = list_sk(to_ms(task.created_at), task.id)
    return [TagEntryItem(tag_pk(task.tenant, tag, k), position) for tag in dropped.items()]


def write(
    puts: Sequence[TagEntryItem],
    deletes: Sequence[TagEntryItem] = (),
    sleep: Callable[[float], None] = time.sleep,  # wall: DynamoDB's backoff
) -> None:
    """Put and delete entries, 25 per BatchWriteItem; what DynamoDB leaves unprocessed (throttling)
    is sent again after 50, 100, 200, 400 ms; :class:`StorageUnavailable` if some is still not."""
    requests: list[dict[str, Any]] = [{"PutRequest": {"Item": item.serialize()}} for item in puts]
    requests += [{"DeleteRequest": {"Key": {"pk": {"S": item.pk}, "sk": {"S": item.sk}}}} for item in deletes]
    for start in range(0, len(requests), BATCH_WRITE_ITEMS):
        _write_batch(requests[start : start + BATCH_WRITE_ITEMS], sleep)


def _write_batch(requests: list[dict[str, Any]], sleep: Callable[[float], None]) -> None:
    connection = TagEntryItem._get_connection()
    pause = FIRST_PAUSE_S
    pending = requests
    for round_ in range(1, WRITE_ROUNDS + 1):
        puts = [r["PutRequest"]["Item"] for r in pending if "PutRequest" in r]
        deletes = [r["DeleteRequest"]["Key"] for r in pending if "DeleteRequest" in r]
        try:
            answer = connection.batch_write_item(put_items=puts, delete_items=deletes) or {}
        except PynamoDBException as exc:
            raise StorageUnavailable(f"the tag index did not answer: {exc.msg}") from exc
        pending = answer.get("UnprocessedItems", {}).get(TagEntryItem.Meta.table_name, [])
        if not pending:
            return
        if round_ < WRITE_ROUNDS:
            sleep(pause)
            pause *= 2
    raise StorageUnavailable(f"the tag index left {len(pending)} entries unwritten (throttled); try again")


def positions(tenant: str, tag: tuple[str, str], list_shards: int, before: str | None, count: int) -> list[Position]:
    """Up to ``count`` of the listing positions of the tenant's tasks that have ``tag``, older than
    ``before``, newest first: each list shard's partition read newest first, merged."""
    streams = [_shard_entries(tag_pk(tenant, tag, k), before, count) for k in range(list_shards)]
    found: list[Position] = []
    for position in heapq.merge(*streams, key=lambda entry: entry[0], reverse=True):
        found.append(position)
        if len(found) == count:
            break
    return found


def _shard_entries(pk: str, before: str | None, count: int) -> Iterator[Position]:
    condition = TagEntryItem.sk < before if before is not None else None
    start: dict[str, Any] | None = None
    remaining = count
    connection = TagEntryItem._get_connection()
    while remaining > 0:
        page = connection.query(
            pk,
            range_key_condition=condition,
            scan_index_forward=False,
            consistent_read=True,
            limit=remaining,
            exclusive_start_key=start,
        )
        for raw in page.get("Items", []):
            remaining -= 1
            position = raw["sk"]["S"]
            yield (position, *task_key(position.partition("#")[2]))
        start = page.get("LastEvaluatedKey")
        if start is None:
            break
