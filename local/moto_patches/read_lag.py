"""moto answers every GetItem with the item as last written; DynamoDB does only when asked to.
"Read consistency" (DynamoDB developer guide): a read is eventually consistent unless it sets
``ConsistentRead``, and an eventually consistent read "might not reflect the results of a recently
completed write operation" (the copies of an item converge, usually within a second). Sundial's
claim, re-claim and take-over read the task's item and decide from it; read without
``ConsistentRead`` they could decide on the version before the last write (a lease already taken,
a run already ended). On moto no test could see that.

With a lag set (:func:`read_lag`), an eventually consistent GetItem of an item written less than
the lag ago answers with the item as it was before that write (absent, if the write created it);
a strongly consistent one answers with the item as it is. Writes are remembered at the API: a
PutItem, UpdateItem, DeleteItem, BatchWriteItem or TransactWriteItems that succeeded keeps the
versions it replaced. Off (0) by default (``local.settings.READ_LAG_ENV`` sets it for the local
runtime's moto process); tests/integration/test_moto_fidelity.py pins it and
tests/integration/test_pipeline_store_contract.py runs the DynamoDB pipeline store under it."""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from local.moto_patches.atomic import LOCK
from local.moto_patches.index_lag import Key, Lag


class _ReadLag(Lag):
    """The read lag: what a write replaced, kept for the lag, and which GetItems may see it."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = threading.local()
        """``eventual``: the GetItem being answered on this thread did not ask for ``ConsistentRead``."""


LAG = _ReadLag()


@contextmanager
def read_lag(seconds: float, clock: Callable[[], float] | None = None) -> Iterator[None]:
    """Eventually consistent GetItems see a write ``seconds`` after it (``clock``: a fake one)."""
    with LAG.during(seconds, clock):
        yield


def _keys_of(handler: Any, action: str, body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(table name, key attributes) of every item a write request writes."""

    def from_item(table_name: str, item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        table = handler.dynamodb_backend.get_table(table_name)
        names = [table.hash_key_attr, *([table.range_key_attr] if table.range_key_attr else [])]
        return table_name, {name: item[name] for name in names if name in item}

    if action in ("put_item",):
        yield from_item(body["TableName"], body["Item"])
    elif action in ("update_item", "delete_item"):
        yield body["TableName"], body["Key"]
    elif action == "batch_write_item":
        for table_name, requests in body.get("RequestItems", {}).items():
            for request in requests:
                if "PutRequest" in request:
                    yield from_item(table_name, request["PutRequest"]["Item"])
                elif "DeleteRequest" in request:
                    yield table_name, request["DeleteRequest"]["Key"]
    elif action == "transact_write_items":
        for entry in body.get("TransactItems", []):
            if "Put" in entry:
                yield from_item(entry["Put"]["TableName"], entry["Put"]["Item"])
            for kind in ("Update", "Delete"):
                if kind in entry:
                    yield entry[kind]["TableName"], entry[kind]["Key"]


def _current(handler: Any, writes: Iterable[tuple[str, dict[str, Any]]]) -> dict[Key, Any]:
    """The items the writes are about to replace, as they are now (copies; None: absent)."""
    found: dict[Key, Any] = {}
    for table_name, key in writes:
        located = _locate(handler.dynamodb_backend, table_name, key)
        if located is not None:  # else the request is invalid: moto answers it as it would
            table, hash_key, range_key = located
            item = table.get_item(hash_key, range_key)
            found[(table_name, hash_key.value, range_key.value if range_key is not None else None)] = copy.deepcopy(
                item
            )
    return found


def _locate(backend: Any, table_name: str, key: dict[str, Any]) -> tuple[Any, Any, Any] | None:
    """The table and the moto key values of ``key`` (None: no such table, or not its key)."""
    from moto.dynamodb.exceptions import MockValidationException, ResourceNotFoundException

    try:
        table = backend.get_table(table_name)
        hash_key, range_key = backend.get_keys_value(table, key)
    except (MockValidationException, ResourceNotFoundException):
        return None
    return table, hash_key, range_key


def make_reads_lag() -> None:
    from moto.dynamodb.models.table import Table
    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler.get_item, "_sundial_lagging", False):
        return

    def remembering(action: str) -> None:
        original = getattr(DynamoHandler, action)

        def write(self: Any) -> Any:
            if not LAG.seconds:
                return original(self)
            # the copy, the write and its record as one step: a write on another thread must not
            # change the item while it is copied, nor land between this write and its record
            with LOCK:
                replaced = _current(self, _keys_of(self, action, self.body))
                answer = original(self)  # raises when nothing was written (a failed condition)
                LAG.remember(replaced)
            return answer

        setattr(DynamoHandler, action, functools.update_wrapper(write, original))

    for action in ("put_item", "update_item", "delete_item", "batch_write_item", "transact_write_items"):
        remembering(action)

    get_item, table_get_item = DynamoHandler.get_item, Table.get_item

    def lagging_get_item(self: Any) -> Any:
        LAG.reading.eventual = bool(LAG.seconds) and not self.body.get("ConsistentRead", False)
        try:
            return get_item(self)
        finally:
            LAG.reading.eventual = False

    def stale_get_item(self: Any, hash_key: Any, range_key: Any = None, projection_expression: Any = None) -> Any:
        if getattr(LAG.reading, "eventual", False):
            key = (self.name, hash_key.value, range_key.value if range_key is not None else None)
            if (written := LAG.lagging(key)) is not None:
                item = written[1]  # as it was before the write
                return item.project(projection_expression) if projection_expression and item else item
        return table_get_item(self, hash_key, range_key, projection_expression)

    functools.update_wrapper(lagging_get_item, get_item)
    lagging_get_item._sundial_lagging = True  # type: ignore[attr-defined]
    DynamoHandler.get_item = lagging_get_item  # type: ignore[method-assign]
    Table.get_item = functools.update_wrapper(stale_get_item, table_get_item)  # type: ignore[method-assign]
    from local.settings import READ_LAG_ENV

    LAG.set_from(READ_LAG_ENV)
