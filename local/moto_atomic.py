"""DynamoDB's conditional writes are atomic; moto's are not (two threads can both pass the same
condition). Sundial's exactly-once claim relies on that atomicity, so wherever moto stands in for
DynamoDB (the local runtime's moto process, the tests) its writes are serialized by one lock."""

from __future__ import annotations

import functools
import threading
from typing import Any

_LOCK = threading.RLock()
_WRITES = ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item")


def make_dynamodb_writes_atomic() -> None:
    from moto.dynamodb.models import DynamoDBBackend

    for name in _WRITES:
        original = getattr(DynamoDBBackend, name, None)
        if original is None or getattr(original, "_sundial_atomic", False):
            continue

        def locked(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with _LOCK:
                return __original(*args, **kwargs)

        functools.update_wrapper(locked, original)
        locked._sundial_atomic = True  # type: ignore[attr-defined]
        setattr(DynamoDBBackend, name, locked)
