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

Key = tuple[str, Any, Any]
"""(table, hash key value, range key value): an item, as the lags remember its writes."""
_PRUNE_AT = 10_000
"""Writes remembered before those older than the lag are dropped (a long run of the runtime)."""


class Lag:
    """A lag after writes (off at 0): each write remembered with its time and what it keeps (the
    read lag's item before the write; nothing for the index lag), until the lag is over."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.clock: Callable[[], float] = time.monotonic
        self.written: dict[Key, tuple[float, Any]] = {}
        self.lock = threading.Lock()

    @contextmanager
    def during(self, seconds: float, clock: Callable[[], float] | None = None) -> Iterator[None]:
        """The lag set to ``seconds`` (``clock``: a fake one), then as it was, its writes forgotten."""
        before = self.seconds, self.clock
        self.seconds, self.clock = seconds, clock or time.monotonic
        try:
            yield
        finally:
            self.seconds, self.clock = before
            with self.lock:
                self.written.clear()

    def remember(self, writes: dict[Key, Any]) -> None:
        now = self.clock()
        with self.lock:
            for key, kept in writes.items():
                self.written[key] = (now, kept)
            if len(self.written) > _PRUNE_AT:  # what every reader has reached is forgotten
                self.written = {key: w for key, w in self.written.items() if now - w[0] < self.seconds}

    def lagging(self, key: Key) -> tuple[float, Any] | None:
        """(when, what was kept) of the item's last write while it is within the lag, else None."""
        with self.lock:
            written = self.written.get(key)
        return written if written is not None and self.clock() - written[0] < self.seconds else None

    def set_from(self, env_name: str) -> None:
        """The lag a process's environment asks for, in milliseconds (unset: none)."""
        lag_ms = int(os.environ.get(env_name, "0") or 0)
        if lag_ms:
            self.seconds = lag_ms / 1000


LAG = Lag()


@contextmanager
def index_lag(seconds: float, clock: Callable[[], float] | None = None) -> Iterator[None]:
    """Queries of an index see an item ``seconds`` after it was put (``clock``: a fake one)."""
    with LAG.during(seconds, clock):
        yield


def _value(attribute: Any) -> Any:
    """A key attribute's value (a moto DynamoType), as a dict key."""
    return None if attribute is None else attribute.value


def _key(table: Any, item: Any) -> Key:
    return table.name, _value(item.hash_key), _value(getattr(item, "range_key", None))


def make_index_queries_lag() -> None:
    from moto.dynamodb.models.table import Table

    if getattr(Table.query, "_sundial_lagging", False):
        return
    put_item, query = Table.put_item, Table.query

    def lagging_put(self: Any, *args: Any, **kwargs: Any) -> Any:
        item = put_item(self, *args, **kwargs)
        if LAG.seconds:
            LAG.remember({_key(self, item): None})
        return item

    def lagging_query(self: Any, *args: Any, **kwargs: Any) -> Any:
        results, scanned, last = query(self, *args, **kwargs)
        # (hash_key, range_comparison, range_objs, limit, exclusive_start_key, scan_index_forward,
        # projection_expressions, index_name, ...) as moto's backend passes them
        index_name = kwargs["index_name"] if "index_name" in kwargs else (args[7] if len(args) > 7 else None)
        if not LAG.seconds or not index_name:
            return results, scanned, last
        table_keys = (self.hash_key_attr, self.range_key_attr)

        def reached(item: Any) -> bool:
            hash_value, range_value = (_value(item.attrs.get(name)) if name else None for name in table_keys)
            return LAG.lagging((self.name, hash_value, range_value)) is None

        return [item for item in results if reached(item)], scanned, last

    functools.update_wrapper(lagging_put, put_item)
    functools.update_wrapper(lagging_query, query)
    lagging_query._sundial_lagging = True  # type: ignore[attr-defined]
    Table.put_item = lagging_put  # type: ignore[method-assign]
    Table.query = lagging_query  # type: ignore[method-assign]
    from local.settings import INDEX_LAG_ENV

    LAG.set_from(INDEX_LAG_ENV)
