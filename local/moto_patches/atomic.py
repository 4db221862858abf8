"""DynamoDB's conditional writes are atomic; moto's are not (two threads can both pass the same
condition). Sundial's exactly-once claim relies on that atomicity, so wherever moto stands in for
DynamoDB (the local runtime's moto process, the tests) its writes are serialized by one lock.

So are the requests that write, whole: DynamoDB answers ReturnValues (ALL_NEW, ALL_OLD, ...) as
of the request's own write (the item's attributes as they appear after, or appeared before, that
UpdateItem operation: ReturnValues in the DynamoDB API reference), but moto's handler reads the old item
before its write and serializes the new one after it, outside the backend: a counter ADDed from
two threads answered both the same count. Sundial's counters rely on the answer (a job's done
shards decide which notify threshold a shard crossed; a limit's booking, a quota's count).

And so are the requests that read: DynamoDB's reads see an item as one write left it (item-level
atomicity), but moto applies an UpdateItem's actions to the stored item one at a time
(``UpdateExpressionExecutor`` on the item itself) while its handler serializes a read outside
any lock, so a GetItem could answer half an update: a task ``failed`` whose run still read
``firing`` (an e2e test saw it). A read request holds the lock while it reads and serializes."""

from __future__ import annotations

import functools
import threading
from typing import Any

LOCK = threading.RLock()
"""Held by every serialized request, and by a patch or a host step that must not interleave with
one (the read lag's copy of what a write replaces, a transaction's copies, a snapshot, the
journal, the clock's looks)."""


_WRITES = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")
_ANSWERED_WRITES = ("put_item", "update_item", "delete_item")
"""The handler methods that read the item around the backend's write to answer ReturnValues."""
_READS = ("get_item", "batch_get_item", "query", "scan", "transact_get_items")
"""The handler methods that read items and serialize them for the answer."""


def make_dynamodb_writes_atomic() -> None:
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.responses import DynamoHandler

    lock_methods(DynamoDBBackend, _WRITES)
    lock_methods(DynamoHandler, (*_ANSWERED_WRITES, *_READS))


def lock_methods(cls: type, names: tuple[str, ...]) -> None:
    """Each of ``cls``'s methods ``names`` run holding :data:`LOCK` (once: a method locked is left as it is)."""
    for name in names:
        original = getattr(cls, name, None)
        if original is None or getattr(original, "_sundial_atomic", False):
            continue

        def locked(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with LOCK:
                return __original(*args, **kwargs)

        functools.update_wrapper(locked, original)
        locked._sundial_atomic = True  # type: ignore[attr-defined]
        setattr(cls, name, locked)
