"""moto makes a TransactWriteItems all-or-nothing by deep-copying every table the transaction
names before it starts, and putting the copies back if an action fails: O(table size) for every
transaction, under the lock that serializes every write (local/moto_patches/atomic.py). Extra runs,
redrives and a task's end that gives back its quota place are transactions (registration was one
too, when this was measured), so they slowed down as the table grew and held every claim behind
them (a `make bench` of 6,000 tasks: 45 % of the moto process's time deep-copying the table).
Wherever moto runs for Sundial (the local runtime's moto process, the tests) a transaction
instead keeps a copy of only the items it touches and puts those back: the same all-or-nothing
outcome, at the cost of the items written. An upstream fix would be the better place."""

from __future__ import annotations

import copy
import functools
import threading
from typing import Any

from local.moto_patches.atomic import LOCK

_SNAPSHOTTING = threading.local()


class _TablesKept:
    """What moto's ``transact_write_items`` calls as ``copy``: hands back a table itself (not a
    copy) while a transaction of this thread keeps its own item copies; anything else, and any
    other time, as ``copy.deepcopy`` would."""

    @staticmethod
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        from moto.dynamodb.models.table import Table

        if isinstance(value, Table) and getattr(_SNAPSHOTTING, "active", False):
            return value
        return copy.deepcopy(value, memo)

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


def make_transactions_copy_items() -> None:
    from moto.dynamodb import models
    from moto.dynamodb.models import DynamoDBBackend

    original = DynamoDBBackend.transact_write_items
    if getattr(original, "_sundial_item_copies", False):
        return
    models.copy = _TablesKept()  # type: ignore[assignment]

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with LOCK:
            kept = _touched(self, transact_items)
            if kept is None:  # a request moto will refuse anyway: its own way, tables copied
                return original(self, transact_items)
            _SNAPSHOTTING.active = True
            try:
                return original(self, transact_items)
            except Exception:
                for table, hash_key, range_key, item in kept:
                    _restore(table, hash_key, range_key, item)
                raise
            finally:
                _SNAPSHOTTING.active = False

    functools.update_wrapper(transact_write_items, original)
    transact_write_items._sundial_item_copies = True  # type: ignore[attr-defined]
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def _touched(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[Any, Any, Any, Any]] | None:
    """A copy of every item the transaction names, as it is now (None: not there)."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    kept = []
    try:
        for action in transact_items:
            (op_type, op), *more = action.items()
            if more:
                return None
            table = backend.tables[op["TableName"]]
            key = op["Item"] if op_type == "Put" else op["Key"]
            hash_key = DynamoType(key[table.hash_key_attr])
            range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
            stored = table.items.get(hash_key)
            if range_key is not None and stored is not None:
                stored = stored.get(range_key)
            kept.append((table, hash_key, range_key, copy.deepcopy(stored)))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return kept


def _restore(table: Any, hash_key: Any, range_key: Any, item: Any) -> None:
    if range_key is None:
        if item is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = item
        return
    if item is None:
        partition = table.items.get(hash_key)
        if partition is not None:
            partition.pop(range_key, None)
            if not partition:
                del table.items[hash_key]
    else:
        table.items[hash_key][range_key] = item
