"""moto answers every Query by sorting the whole table (``Table.all_items`` sorts every item by
its key, comparing attribute values in Python) and then filtering it down to the one partition
asked for, which it sorts again. That made a Query cost O(table size · log) instead of
O(partition): with a few thousand tasks stored, the scanner's and the API's queries held the moto
process for tens of milliseconds each, in front of every claim. Wherever moto runs for Sundial
(the local runtime's moto process, the tests) a Query reads the partition it asks for from
moto's own dict (a Query of the table), or the items unsorted (a Query of an index); moto's own
sort of the matches that follows is unchanged, so the results and their order are moto's. An
upstream fix (``Table.query`` looking up ``self.items[hash_key]``) would be the better place.

Within the partition, moto then reads every item, whatever the key condition on the sort key: it
compares each item's key to the hash key, sorts them all (each comparison through
``DynamoType.cast_value``), and measures each one's size (``Item.size``, a walk of its attributes)
before it asks whether its sort key is in range. A scanner's Query of a minute's bucket holding
5,000 tasks for the 6 due in its window took 127 ms of moto. DynamoDB reads only the items whose
sort key meets the condition ("Key condition expressions for query",
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Query.KeyConditionExpressions.html;
its 1 MB page counts the items it read). So a Query of the table's own partition with a
condition on its sort key hands moto only the items in range, found by a binary search of the
partition sorted once by key, and the item next to them on either side: moto's loop still applies
its own condition, and the item after the range is the one at which moto answers a
``LastEvaluatedKey`` when the ``Limit`` was reached on the last item in range, as it does
unpatched. What differs is what was moto's own artefact: a page ended by the size of an item
outside the condition (1 MB in all with the items in range before it).

A Query of an index has no partition in moto's dict to read: moto walks every item of the table,
each one through its loop of key conditions in Python. The items whose index hash key differs
from the one asked for are left out before that loop (a comprehension over the table's items);
moto's own loop still applies every condition to the rest, so its answer is unchanged.

Those it hands its loop, moto sorts by the index's key: a key of ``DynamoType`` objects per item,
whose every comparison converts both values again (``cast_value``, a ``Decimal`` for a number).
The sort here takes each item's converted values once; the order is moto's, as its comparisons
compare the same converted values (a key attribute has one type in every item: its table's
definition says which).

What the Query answers of an index that projects its keys (``KEYS_ONLY``, as Sundial's listing
and status indexes do) or some attributes (``INCLUDE``), moto makes by ``Item.project``: for each
attribute kept, the whole item converted to plain Python (``to_regular_json``), then the kept
values serialized back, four conversions of a task's whole item for each entry a listing reads.
Where every value kept is a string, the round trip gives back the value it started from, and the
projection here copies those values instead; any other type goes through moto's own.

A page of the local runtime's task list queries every list shard's index entries: with 1,500 tasks
stored, moto spent 69, 71 and 79 ms of CPU on one without these three, 52, 56 and 65 with them, in
three pairs run back to back on one machine (``tests/integration/test_moto_fidelity.py`` holds
every answer to moto's own)."""

from __future__ import annotations

import bisect
import functools
import threading
from typing import Any

_QUERYING = threading.local()

_FROM_ITS_VALUE = {"EQ", "=", "GE", ">=", "BETWEEN", "BEGINS_WITH"}
"""Sort key conditions whose first item in range is the first key at or past their (first) value."""
_PAST_ITS_VALUE = {"GT", ">"}
_FROM_THE_START = {"LE", "<=", "LT", "<"}


def _sort_key(item: Any) -> Any:
    key = item.range_key
    return key.value if key.type == "S" else key.cast_value  # a string's cast_value is its value


def _near_range(items: list[Any], comparison: str | None, values: list[Any]) -> list[Any]:
    """The partition's items whose sort key meets ``comparison`` with ``values``, in key order, with
    the item next to them on either side; all of them when the condition is none of the above, or
    its value of another type than the keys' (moto's own answer then)."""
    if comparison not in _FROM_ITS_VALUE | _PAST_ITS_VALUE | _FROM_THE_START or len(items) < 3:
        return items
    try:
        keyed = sorted(items, key=_sort_key)
        if comparison in _FROM_THE_START:
            first = 0
        else:
            keys = [_sort_key(item) for item in keyed]
            find = bisect.bisect_right if comparison in _PAST_ITS_VALUE else bisect.bisect_left
            first = find(keys, values[0].cast_value)
        last = first
        while last < len(keyed) and keyed[last].range_key.compare(comparison, values):
            last += 1
    except (TypeError, AttributeError):  # a value moto compares with its own error: its own loop says it
        return items
    return keyed[max(first - 1, 0) : last + 1]


def _with_hash_keys(items: list[Any], conditions: tuple[tuple[str, Any], ...]) -> list[Any]:
    """The items whose attributes equal each (name, value) of ``conditions``: those moto's loop
    would not skip on them (it skips an item without the attribute, or with another value)."""
    if not conditions:
        return items
    kept = items
    for name, wanted in conditions:
        kept = [item for item in kept if (value := item.attrs.get(name)) is not None and value == wanted]
    return kept


def _project_directly() -> None:
    from moto.dynamodb.models.dynamo_type import Item
    from moto.dynamodb.models.table import SecondaryIndex

    project = SecondaryIndex.project

    def projected(self: Any, item: Any) -> Any:
        kind = self.projection.get("ProjectionType") if self.projection else None
        if kind not in ("KEYS_ONLY", "INCLUDE"):
            return project(self, item)
        names = [*self.table_key_attrs, *self.schema_key_attrs]
        if kind == "INCLUDE":
            names += self.projection.get("NonKeyAttributes", [])
        kept = {name: item.attrs[name] for name in names if name in item.attrs}
        if any(value.type != "S" for value in kept.values()):
            return project(self, item)
        return Item(item.hash_key, item.range_key, {name: {"S": value.value} for name, value in kept.items()})

    functools.update_wrapper(projected, project)
    SecondaryIndex.project = projected  # type: ignore[method-assign]


def make_query_partitioned() -> None:
    from moto.dynamodb.models.table import Table

    if getattr(Table.query, "_sundial_partitioned", False):
        return
    query, all_items = Table.query, Table.all_items

    def partitioned_query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = kwargs["index_name"] if "index_name" in kwargs else (args[6] if len(args) > 6 else None)
        comparison = kwargs["range_comparison"] if "range_comparison" in kwargs else (args[0] if args else None)
        values = kwargs["range_objs"] if "range_objs" in kwargs else (args[1] if len(args) > 1 else [])
        _QUERYING.partition = () if index_name else (hash_key,)
        _QUERYING.range = (comparison, values)
        _QUERYING.hash_conditions = tuple(kwargs.get("hash_key_conditions") or ()) if index_name else ()
        try:
            return query(self, hash_key, *args, **kwargs)
        finally:
            del _QUERYING.partition, _QUERYING.range, _QUERYING.hash_conditions

    def items_for_query(self: Any) -> list[Any]:
        partition = getattr(_QUERYING, "partition", None)
        if partition is None:  # a Scan, an export, a transaction: moto's own, sorted
            items: list[Any] = all_items(self)
            return items
        if partition:  # the table's own partition: what moto keeps under its hash key
            found = self.items.get(partition[0])
            if not self.range_key_attr:
                return [found] if found is not None else []
            return _near_range(list(found.values()), *_QUERYING.range) if found else []
        # an index: every item whose index hash key is the one asked for, left for moto's own
        # conditions and its sort by the index's key
        if self.range_key_attr:
            every = [item for hash_set in self.items.values() for item in hash_set.values()]
        else:
            every = list(self.items.values())
        return _with_hash_keys(every, _QUERYING.hash_conditions)

    _project_directly()
    sorted_items = Table.sorted_items

    def sorted_once(self: Any, hash_key_attrs: list[str], range_key_attrs: list[Any], items: list[Any]) -> list[Any]:
        names = self._generate_attr_to_sort_by(hash_key_attrs, range_key_attrs)
        try:
            items.sort(key=lambda item: tuple(item.attrs[name].cast_value for name in names))
        except TypeError:  # values moto cannot order either: its own sort says so, as it would
            return sorted_items(self, hash_key_attrs, range_key_attrs, items)
        return items

    functools.update_wrapper(sorted_once, sorted_items)
    Table.sorted_items = sorted_once  # type: ignore[method-assign]
    functools.update_wrapper(partitioned_query, query)
    functools.update_wrapper(items_for_query, all_items)
    partitioned_query._sundial_partitioned = True  # type: ignore[attr-defined]
    Table.query = partitioned_query  # type: ignore[method-assign]
    Table.all_items = items_for_query  # type: ignore[method-assign]
