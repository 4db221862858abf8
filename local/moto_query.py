"""moto answers every Query by sorting the whole table (``Table.all_items`` sorts every item by
its key, comparing attribute values in Python) and then filtering it down to the one partition
asked for, which it sorts again. That made a Query cost O(table size · log) instead of
O(partition): with a few thousand tasks stored, the scanner's and the API's queries held the moto
process for tens of milliseconds each, in front of every claim. Wherever moto runs for Sundial
(the local runtime's moto process, the tests) a Query reads the partition it asks for from
moto's own dict (a Query of the table), or the items unsorted (a Query of an index); moto's own
sort of the matches that follows is unchanged, so the results and their order are moto's. An
upstream fix (``Table.query`` looking up ``self.items[hash_key]``) would be the better place."""

from __future__ import annotations

import functools
import threading
from typing import Any

_QUERYING = threading.local()


def make_query_partitioned() -> None:
    from moto.dynamodb.models.table import Table

    if getattr(Table.query, "_sundial_partitioned", False):
        return
    query, all_items = Table.query, Table.all_items

    def partitioned_query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = kwargs["index_name"] if "index_name" in kwargs else (args[6] if len(args) > 6 else None)
        _QUERYING.partition = () if index_name else (hash_key,)
        try:
            return query(self, hash_key, *args, **kwargs)
        finally:
            del _QUERYING.partition

    def items_for_query(self: Any) -> list[Any]:
        partition = getattr(_QUERYING, "partition", None)
        if partition is None:  # a Scan, an export, a transaction: moto's own, sorted
            items: list[Any] = all_items(self)
            return items
        if partition:  # the table's own partition: what moto keeps under its hash key
            found = self.items.get(partition[0])
            if not self.range_key_attr:
                return [found] if found is not None else []
            return list(found.values()) if found else []
        if self.range_key_attr:  # an index: every item, left for moto's own sort by the index's key
            return [item for hash_set in self.items.values() for item in hash_set.values()]
        return list(self.items.values())

    functools.update_wrapper(partitioned_query, query)
    functools.update_wrapper(items_for_query, all_items)
    partitioned_query._sundial_partitioned = True  # type: ignore[attr-defined]
    Table.query = partitioned_query  # type: ignore[method-assign]
    Table.all_items = items_for_query  # type: ignore[method-assign]
