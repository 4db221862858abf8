"""Reading the status index ``by_status`` (docs/status-index.md): the items of a tenant in a
status somebody must look at, newest first, and how many there are. Each item of such a status
carries ``spk`` (its tenant, kind, state and list shard) and ``ssk`` (its position, newest last),
written with the status itself; a state's entries are spread over the tenant's list shards, so a
read queries each shard's partition and merges them by position."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
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


def page(
    model: Any,
    tenant: str,
    kind: str,
    states: Sequence[str],
    list_shards: int,
    keep: Callable[[Any], bool],
    limit: int,
    position: str | None,
    budget: int,
) -> tuple[list[tuple[str, Any]], str | None]:
    """A page of the tenant's items of ``kind`` in ``states``, newest first, positioned before
    ``position``: up to ``limit`` (position, item) and the position to go on from (None once the
    index is read to its end). The items are read by key (``model``'s BatchGetItem, strongly
    consistent) and checked again with ``keep``: the index is eventually consistent, so an item
    that left the status since (or another tenant's, or one past its retention) is left out and
    the page reads on, each round asking for what it still lacks, for at most ``budget`` entries
    (a page may then come back short, even empty, with a position to go on from)."""
    found: list[tuple[str, Any]] = []
    read = 0
    while read < budget:
        want = limit + 1 - len(found)
        named = entries(tenant, kind, states, list_shards, position, want)
        if not named:
            return found, None
        items = {(i.pk, i.sk): i for i in model.batch_get([(pk, sk) for _, pk, sk in named], consistent_read=True)}
        read += len(named)
        for at, pk, sk in named:
            position = at
            item = items.get((pk, sk))
            if item is None or not keep(item):
                continue
            found.append((at, item))
            if len(found) > limit:
                return found[:limit], found[limit - 1][0]
        if len(named) < want:
            return found, None
    return found, position


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
