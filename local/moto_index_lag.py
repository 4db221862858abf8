"""moto's global secondary indexes answer a Query with every item written so far; DynamoDB's do
not: an index is updated asynchronously and a Query of it is eventually consistent ("Using Global
Secondary Indexes in DynamoDB": a GSI supports eventually consistent reads only, and an item
written may take a short while, normally a fraction of a second, to reach it). Sundial lists tasks
and jobs through its ``by_tenant`` GSI, so a list may not show a task just registered.

With a lag set (:func:`index_lag`, or ``local.settings.INDEX_LAG_ENV`` for the local runtime's
moto process), a Query of an index leaves out the items put less than the lag ago: what a client of
AWS may see. Off (0) by default, so a test that wants read-after-write on a list says so by not
setting it; tests/integration/test_moto_fidelity.py pins the behaviour."""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class _Lag:
    def __init__(self) -> None:
        self.seconds = 0.0
        self.clock: Callable[[], float] = time.monotonic
        self.written: dict[tuple[str, Any, Any], float] = {}
        self.lock = threading.Lock()


LAG = _Lag()
_PRUNE_AT = 10_000
"""Writes remembered before those older than the lag are dropped (a long run of the runtime)."""


def _value(attribute: Any) -> Any:
    """A key attribute's value (a moto DynamoType), as a dict key."""
    return None if attribute is None else attribute.value


def _key(table: Any, item: Any) -> tuple[str, Any, Any]:
    return table.name, _value(item.hash_key), _value(getattr(item, "range_key", None))


@contextmanager
def index_lag(seconds: float, clock: Callable[[], float] | None = None) -> Iterator[None]:
    """Queries of an index see an item ``seconds`` after it was put (``clock``: a fake one)."""
    before = LAG.seconds, LAG.clock
    LAG.seconds, LAG.clock = seconds, clock or time.monotonic
    try:
        yield
    finally:
        LAG.seconds, LAG.clock = before
        with LAG.lock:
            LAG.written.clear()


def make_index_queries_lag() -> None:
    from moto.dynamodb.models.table import Table

    if getattr(Table.query, "_sundial_lagging", False):
        return
    put_item, query = Table.put_item, Table.query

    def lagging_put(self: Any, *args: Any, **kwargs: Any) -> Any:
        item = put_item(self, *args, **kwargs)
        if LAG.seconds:
            now = LAG.clock()
            with LAG.lock:
                LAG.written[_key(self, item)] = now
                if len(LAG.written) > _PRUNE_AT:  # what every index has reached is forgotten
                    LAG.written = {key: at for key, at in LAG.written.items() if now - at < LAG.seconds}
        return item

    def lagging_query(self: Any, *args: Any, **kwargs: Any) -> Any:
        results, scanned, last = query(self, *args, **kwargs)
        # (hash_key, range_comparison, range_objs, limit, exclusive_start_key, scan_index_forward,
        # projection_expressions, index_name, ...) as moto's backend passes them
        index_name = kwargs["index_name"] if "index_name" in kwargs else (args[7] if len(args) > 7 else None)
        if not LAG.seconds or not index_name:
            return results, scanned, last
        now = LAG.clock()
        with LAG.lock:
            written = dict(LAG.written)
        table_keys = (self.hash_key_attr, self.range_key_attr)

        def reached(item: Any) -> bool:
            key = tuple(_value(item.attrs.get(name)) if name else None for name in table_keys)
            at = written.get((self.name, *key))
            return at is None or now - at >= LAG.seconds

        return [item for item in results if reached(item)], scanned, last

    functools.update_wrapper(lagging_put, put_item)
    functools.update_wrapper(lagging_query, query)
    lagging_query._sundial_lagging = True  # type: ignore[attr-defined]
    Table.put_item = lagging_put  # type: ignore[method-assign]
    Table.query = lagging_query  # type: ignore[method-assign]
    from local.settings import INDEX_LAG_ENV

    lag_ms = int(os.environ.get(INDEX_LAG_ENV, "0") or 0)
    if lag_ms:
        LAG.seconds = lag_ms / 1000
