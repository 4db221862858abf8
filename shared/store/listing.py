"""Where a tenant's tasks are listed from, newest first: index entries and listing pages.

Every task a client registers is listed at its position ``<created ms>#<task id>``
(``keys.list_sk``). A task registered alone, or a recurring one, is listed through the sparse
keys-only index ``by_tenant``: its home item carries ``lpk``/``lsk``, and DynamoDB writes the
index entry with it, one more write unit per task ("Managing global secondary indexes": a write
to an item with the index's keys writes the index too). The one-shot tasks of a batch
registration are listed through one **listing page** instead (``ListPageItem``): a plain item of
the table that names them all, about 27 bytes a task, so a hundred tasks cost about three write
units in all instead of a hundred (docs/design.md, section 3). The page is written before its
tasks, so a written task is always listed; a page entry whose task was never written, or has
expired, is skipped as a missing index entry's item is.

A page's tasks were created in one instant, so its entries sit side by side in the listing order:
pages with different creation instants never interleave, and the pages of one instant (two batches
registered in the same millisecond) are merged. A listing reads each list shard's index entries
and pages as two streams in position order and merges them (:func:`positions`).

A page expires (TTL) ``PAGE_SLACK`` after the last of its tasks could have ended and outlived its
retention: a one-shot task nobody changes ends within hours of its due time (ten attempts at most,
each retry at most 15 minutes later, a ``Retry-After`` at most an hour). A client's change (an
update, a pause, a resume, a cancel) can make a task live on, so every such write gives the task
its own index entry (``DynamoTaskRepository.update`` writes ``lpk``/``lsk``, which costs an index
write only the first time); from then on both name it, at the same position, and
:func:`positions` lists it once."""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Iterator, Sequence
from datetime import timedelta
from itertools import groupby
from typing import Any

from shared.domain.tasks import Task
from shared.domain.times import from_ms
from shared.store.keys import list_sk, page_pk, task_key
from shared.store.models import LIST_INDEX_NAME, ListPageItem, TaskItem

PAGE_SLACK = timedelta(days=30)
"""How long a page outlives the latest due time of its tasks and their retention."""
MIN_PAGE = 2
"""A page names at least this many tasks: one task alone costs one write either way, and its index
entry needs no page."""
PAGES_PER_READ = 10
"""Pages a listing reads per Query call (each about 3 KB): it reads only as far as it lists."""

Position = tuple[str, str, str]
"""(listing position, home item pk, home item sk)."""


def pages_for(written: Sequence[tuple[Task, TaskItem]], list_shards: int, retention: timedelta) -> list[ListPageItem]:
    """The listing pages of a batch registration's tasks and their items: its one-shot tasks, by
    tenant and creation instant, at least :data:`MIN_PAGE` of them a page. The items a page
    names lose their index keys (no index entry is written with them)."""
    candidates = sorted(
        (item for task, item in written if item.lpk is not None and not task.recurring),
        key=lambda item: (item.tenant, item.created_ms),
    )
    pages = []
    for (tenant, created_ms), group in groupby(candidates, key=lambda item: (item.tenant, item.created_ms)):
        named = list(group)
        if len(named) < MIN_PAGE:
            continue
        newest = max(item.task_id for item in named)
        last_due = int(max(item.due_ms for item in named))
        pages.append(
            ListPageItem(
                page_pk(tenant, zlib.crc32(newest.encode()) % list_shards),
                list_sk(created_ms, newest),
                tenant=tenant,
                created_ms=created_ms,
                ids={item.task_id for item in named},
                expires_at=from_ms(last_due) + retention + PAGE_SLACK,
            )
        )
        for item in named:
            item.lpk = item.lsk = None
    return pages


def positions(tenant: str, list_shards: int, before: str | None, count: int) -> list[Position]:
    """Up to ``count`` of the tenant's listing positions older than ``before``, newest first, each
    task once."""
    streams = [
        stream
        for k in range(list_shards)
        for stream in (_index_entries(tenant, k, before, count), _page_entries(tenant, k, before))
    ]
    found: list[Position] = []
    for position in heapq.merge(*streams, key=lambda entry: entry[0], reverse=True):
        if found and found[-1][0] == position[0]:
            continue  # a paged task a client changed since: its index entry names it too
        found.append(position)
        if len(found) == count:
            break
    return found


def _index_entries(tenant: str, k: int, before: str | None, count: int) -> Iterator[Position]:
    return keys_only_entries(LIST_INDEX_NAME, f"L#{tenant}#{k}", TaskItem.lsk, before, count)


def keys_only_entries(index: str, pk: str, sort_key: Any, before: str | None, count: int) -> Iterator[Position]:
    """Up to ``count`` entries of the partition ``pk`` of the keys-only index ``index`` whose sort
    key (the attribute ``sort_key``) is before ``before``, newest first: (sort key, item pk, item
    sk). The low-level query: the model-level one filters on ``kind``, which a keys-only index does
    not project."""
    condition = sort_key < before if before is not None else None
    start: dict[str, object] | None = None
    remaining = count
    while remaining > 0:
        page = TaskItem._get_connection().query(
            pk,
            range_key_condition=condition,
            index_name=index,
            scan_index_forward=False,
            limit=remaining,
            exclusive_start_key=start,
        )
        for raw in page.get("Items", []):
            remaining -= 1
            yield raw[sort_key.attr_name]["S"], raw["pk"]["S"], raw["sk"]["S"]
        start = page.get("LastEvaluatedKey")
        if start is None:
            break


def _page_entries(tenant: str, k: int, before: str | None) -> Iterator[Position]:
    """The entries of list shard ``k``'s pages older than ``before``, newest first: pages come
    newest first by their newest entry, and the pages of one creation instant are merged (their
    entries may interleave)."""
    # A page holding entries older than `before` was created at or before its instant (the first
    # 13 characters; "$" sorts right after the "#" that follows them).
    condition = ListPageItem.sk < before[:13] + "$" if before is not None else None
    pages = ListPageItem.query(
        page_pk(tenant, k),
        range_key_condition=condition,
        scan_index_forward=False,
        consistent_read=True,
        page_size=PAGES_PER_READ,
    )
    for created_ms, same_instant in groupby(pages, key=lambda page: page.created_ms):
        entries = sorted((list_sk(created_ms, task_id) for page in same_instant for task_id in page.ids), reverse=True)
        for position in entries:
            if before is None or position < before:
                yield (position, *task_key(position.partition("#")[2]))
