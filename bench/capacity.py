"""DynamoDB capacity from item sizes (moto reports a constant ConsumedCapacity), and AWS calls
counted from what the code really sends (a botocore ``before-call`` hook on every client)."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import botocore.session

# Public us-east-1 prices (see docs/design.md, section 4).
ON_DEMAND_PER_MILLION_WRU = 0.625
ON_DEMAND_PER_MILLION_RRU = 0.125
PROVISIONED_WCU_HOUR = 0.00065
PROVISIONED_UTILISATION = 0.7


def attribute_size(value: Any) -> int:
    """Bytes DynamoDB bills for one attribute value (its documented item-size rules)."""
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, int | float | Decimal):
        digits = len(str(abs(Decimal(str(value)))).replace(".", "").lstrip("0")) or 1
        return math.ceil(digits / 2) + 1
    if isinstance(value, dict):
        return 3 + sum(len(k.encode()) + 1 + attribute_size(v) for k, v in value.items())
    if isinstance(value, list | set | tuple):
        return 3 + sum(1 + attribute_size(v) for v in value)
    raise TypeError(f"no DynamoDB size for {type(value).__name__}")


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


def write_units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def provisioned_per_million_writes() -> float:
    writes_per_wcu_hour = 3600 * PROVISIONED_UTILISATION
    return PROVISIONED_WCU_HOUR / writes_per_wcu_hour * 1_000_000


class CallCounter:
    """Counts every AWS API call by (service, operation), from every client created while active."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def _count(self, model: Any, **_: Any) -> None:
        with self._lock:
            self.calls[(model.service_model.service_name, model.name)] += 1

    @contextmanager
    def active(self) -> Iterator[CallCounter]:
        original = botocore.session.Session.create_client
        counter = self

        def create_client(session: botocore.session.Session, *args: Any, **kwargs: Any) -> Any:
            client = original(session, *args, **kwargs)
            client.meta.events.register("before-call", counter._count)
            return client

        botocore.session.Session.create_client = create_client
        try:
            yield self
        finally:
            botocore.session.Session.create_client = original
