"""Reading the status index ``by_status`` (docs/status-index.md): the items of a tenant in a
status somebody must look at, newest first, and how many there are. Each item of such a status
carries ``spk`` (its tenant, kind, state and list shard) and ``ssk`` (its position, newest last),
written with the status itself; a state's entries are spread over the tenant's list shards, so a
read queries each shard's partition and merges them by position."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any

from pynamodb.expressions.update import Action

from shared.store.keys import status_shard_pk
from shared.store.listing import keys_only_entries
from shared.store.models import STATUS_INDEX_NAME, TaskItem

Entry = tuple[str, str, str]
"""(position ``ssk``, the item's pk, the item's sk)."""


def partitions(tenant: str, kind: str, states: Iterable[str], list_shards: int) -> list[str]:
    """Every index partition of ``states`` of the tenant's ``kind`` of item."""
    return [status_shard_pk(tenant, kind, state, k) for state in states for k in range(list_shards)]


def entries(
    tenant: str, kind: str, states: Sequence[str], list_shards: int, before: str | None, count: int
) -> list[Entry]:
    """Up to ``count`` index entries of the tenant's items of ``kind`` in any of ``states``,
    positioned before ``before``, newest first."""
    streams = [
        keys_only_entries(STATUS_INDEX_NAME, pk, TaskItem.ssk, before, count)
        for pk in partitions(tenant, kind, states, list_shards)
    ]
    found: list[Entry] = []
    for entry in heapq.merge(*streams, key=lambda e: e[0], reverse=True):
        if found and found[-1] == entry:
            continue  # one item in two states' partitions for a moment: listed once
        found.append(entry)
        if len(found) == count:
            break
    return found


def count(tenant: str, kind: str, states: Sequence[str], list_shards: int) -> int:
    """How many of the tenant's items of ``kind`` the index holds in ``states``: a Query with
    ``Select: COUNT`` of each partition, paged on ``LastEvaluatedKey`` (a Query reads at most 1 MB
    of entries a call, "Query" in the DynamoDB API Reference)."""
    total = 0
    connection = TaskItem._get_connection()
    for pk in partitions(tenant, kind, states, list_shards):
        start: dict[str, object] | None = None
        while True:
            page = connection.query(pk, index_name=STATUS_INDEX_NAME, select="COUNT", exclusive_start_key=start)
            total += int(page.get("Count", 0))
            start = page.get("LastEvaluatedKey")
            if start is None:
                break
    return total


def actions(model: Any, keys: tuple[str, str] | None) -> list[Action]:
    """The update actions that put an item's keys in the status index (``keys``: ``spk``, ``ssk``)
    or take them away (None): ``model`` is the item's PynamoDB model (a task's, a job's, a
    letter's, a workflow run's), each of which carries the two attributes."""
    if keys is None:
        return [model.spk.remove(), model.ssk.remove()]
    return [model.spk.set(keys[0]), model.ssk.set(keys[1])]
