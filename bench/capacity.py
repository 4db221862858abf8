"""AWS calls counted from what the code really sends (botocore hooks on every client), with
DynamoDB capacity computed from item sizes (moto reports a constant ConsumedCapacity) and the
public prices that turn them into a cost (docs/design.md, section 4)."""

from __future__ import annotations

import math
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import botocore.session
from boto3.dynamodb.types import TypeDeserializer

from bench.prices import (  # the price table, shared with the model (sim/cost.py)
    EVENTBRIDGE_SCHEDULER_PER_MILLION,
    LAMBDA_GB_SECOND,
    LAMBDA_PER_MILLION,
    ON_DEMAND_PER_MILLION_RRU,
    ON_DEMAND_PER_MILLION_WRU,
    PROVISIONED_RCU_HOUR,
    PROVISIONED_UTILISATION,
    PROVISIONED_WCU_HOUR,
    SQS_PER_MILLION,
    provisioned_per_million_reads,
    provisioned_per_million_writes,
)
from local.attribution import current_function

__all__ = [
    "EVENTBRIDGE_SCHEDULER_PER_MILLION",
    "LAMBDA_GB_SECOND",
    "LAMBDA_PER_MILLION",
    "ON_DEMAND_PER_MILLION_RRU",
    "ON_DEMAND_PER_MILLION_WRU",
    "PROVISIONED_RCU_HOUR",
    "PROVISIONED_UTILISATION",
    "PROVISIONED_WCU_HOUR",
    "SQS_PER_MILLION",
    "CallCounter",
    "Usage",
    "item_size",
    "provisioned_per_million_reads",
    "provisioned_per_million_writes",
    "read_units",
    "write_units",
]

_deserialize = TypeDeserializer().deserialize


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank percentile ``p`` of ``values`` (nan when there are none)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def attribute_size(value: Any) -> int:
    """Bytes DynamoDB bills for one attribute value (its documented item-size rules)."""
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bytes | bytearray):
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
    """Size of an item, given plain values or DynamoDB's typed JSON ({"S": ...})."""
    plain = {
        k: _deserialize(v) if isinstance(v, dict) and len(v) == 1 and next(iter(v)) in _TYPES else v
        for k, v in item.items()
    }
    return sum(len(name.encode()) + attribute_size(value) for name, value in plain.items())


_TYPES = {"S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS"}


def write_units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def read_units(size: int, consistent: bool) -> float:
    units = max(1, math.ceil(size / 4096))
    return float(units) if consistent else units / 2


@dataclass
class Usage:
    calls: Counter[tuple[str, str, str]]
    """(function, service, operation) -> calls."""
    wru: defaultdict[str, float]
    """function -> DynamoDB write request units."""
    rru: defaultdict[str, float]


class CallCounter:
    """Counts every AWS API call of clients created while active, per function and operation,
    and the DynamoDB capacity each consumed (writes from item sizes; an UpdateItem bills the
    larger of the item before and after: the item as it ends up is used, items here being
    < 1 KB either way; a failed conditional write bills like a write; a transaction bills each
    of its items twice)."""

    def __init__(self, index_key: str = "lpk") -> None:
        self.usage = Usage(Counter(), defaultdict(float), defaultdict(float))
        self.index_key = index_key
        self._lock = threading.Lock()

    def _before(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        """``params``: the call's API parameters (before-parameter-build), not the HTTP request."""
        function = current_function.get()
        service = model.service_model.service_name
        with self._lock:
            self.usage.calls[(function, service, model.name)] += 1
        if service == "dynamodb":
            self._params_local.params = params

    _params_local = threading.local()

    def _after(self, http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        if model.service_model.service_name != "dynamodb":
            return
        params = getattr(self._params_local, "params", None)
        if params is None:
            return
        function = current_function.get()
        operation = model.name
        wru, rru = self._capacity(operation, params, parsed, len(getattr(http_response, "content", b"") or b""))
        with self._lock:
            self.usage.wru[function] += wru
            self.usage.rru[function] += rru

    def _capacity(
        self, operation: str, params: dict[str, Any], parsed: dict[str, Any], response_bytes: int
    ) -> tuple[float, float]:
        """Writes from item sizes; reads from the response's size (its JSON is larger than the
        items DynamoDB bills, so reads are overestimated, cheaply: they are the small part)."""
        consistent = bool(params.get("ConsistentRead"))
        if operation == "PutItem":
            item = params["Item"]
            index = 1 if self.index_key in item else 0
            return write_units(item_size(item)) + index, 0
        if operation in ("UpdateItem", "DeleteItem"):
            after = parsed.get("Attributes") or {}
            return write_units(item_size(after)) if after else 1, 0
        if operation == "BatchWriteItem":
            units = 0.0
            for requests in params.get("RequestItems", {}).values():
                for request in requests:
                    item = request.get("PutRequest", {}).get("Item", {})
                    units += write_units(item_size(item)) + (1 if self.index_key in item else 0)
            return units, 0
        if operation == "TransactWriteItems":
            # each item twice what it would cost alone; an Update or ConditionCheck's item is
            # not sent, and is taken as under 1 KB (as UpdateItem's are here)
            units = 0.0
            for entry in params.get("TransactItems", []):
                ((kind, body),) = entry.items()
                if kind == "Put":
                    item = body["Item"]
                    units += 2 * (write_units(item_size(item)) + (1 if self.index_key in item else 0))
                else:
                    units += 2
            return units, 0
        if operation in ("GetItem", "Query", "Scan"):
            return 0, read_units(response_bytes, consistent)
        if operation == "BatchGetItem":
            items = sum(len(found) for found in parsed.get("Responses", {}).values())
            per_item = response_bytes / max(items, 1)
            table_consistent = any(t.get("ConsistentRead") for t in params.get("RequestItems", {}).values())
            return 0, items * read_units(round(per_item), table_consistent)
        return 0, 0

    @contextmanager
    def active(self) -> Iterator[CallCounter]:
        original = botocore.session.Session.create_client
        counter = self

        def create_client(session: botocore.session.Session, *args: Any, **kwargs: Any) -> Any:
            client = original(session, *args, **kwargs)
            client.meta.events.register("before-parameter-build", counter._before)
            client.meta.events.register("after-call", counter._after)
            return client

        botocore.session.Session.create_client = create_client
        try:
            yield self
        finally:
            botocore.session.Session.create_client = original
