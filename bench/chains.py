"""`make bench ARGS="--chains"`: what one hop of a chain costs (docs/chains.md, section 4).

Starts hops with the code the trigger runs (``TaskService.start_chained``) against moto in this
process, and counts every AWS call each kind of hop makes: a hop started, the same hop started
again (a duplicate delivery of the parent, a retried recording step), and a hop skipped (its
task paused). DynamoDB capacity is worked out from the items as they are sent, by DynamoDB's
published rules: a strongly consistent read is 1 RRU per 4 KB; a write 1 WRU per 1 KB, twice
that inside a transaction (a transaction refused by its condition is charged as well). The
parent's answer the child carries is 0, 1 and 4 KB.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import botocore.client

from shared.domain.chains import ChainStart

REGION = "us-east-1"


def _size(value: dict[str, Any]) -> int:
    """A DynamoDB value's size by the published rules (names and values in UTF-8, numbers ~1 byte
    per two digits + 1, a map or list 3 bytes + 1 per element + its elements)."""
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(str(inner).encode())
    if kind == "N":
        return len(str(inner).lstrip("-").replace(".", "")) // 2 + 2
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS"):
        return sum(_size({kind[0]: v}) for v in inner)
    if kind == "M":
        return 3 + sum(len(k.encode()) + _size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(_size(v) + 1 for v in inner)
    return 0


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + _size(value) for name, value in item.items())


@dataclass
class Tally:
    calls: Counter[str] = field(default_factory=Counter)
    rru: float = 0.0
    wru: float = 0.0
    items_written: int = 0

    def add(self, service: str, operation: str, params: dict[str, Any]) -> None:
        self.calls[f"{service} {operation}"] += 1
        if operation == "GetItem":
            self.rru += 1 if params.get("ConsistentRead") else 0.5  # items here are under 4 KB
        elif operation == "TransactWriteItems":
            for entry in params["TransactItems"]:
                ((kind, body),) = entry.items()
                self.items_written += kind in ("Put", "Update")
                size = item_size(body.get("Item", {})) if kind == "Put" else 1024
                self.wru += 2 * max(1, math.ceil(size / 1024))
        elif operation in ("PutItem", "UpdateItem"):
            self.items_written += 1
            self.wru += max(1, math.ceil(item_size(params.get("Item", {})) / 1024))


def _outcome(start: ChainStart) -> str:
    return "started" if start.run_id else "duplicate" if start.duplicate else "skipped"


@contextmanager
def counting() -> Iterator[Tally]:
    """Every AWS call any client of this process makes while inside, tallied."""
    tally = Tally()
    real = botocore.client.BaseClient._make_api_call

    def spy(self: Any, operation: str, params: dict[str, Any]) -> Any:
        tally.add(self.meta.service_model.service_name, operation, params)
        return real(self, operation, params)

    botocore.client.BaseClient._make_api_call = spy
    try:
        yield tally
    finally:
        botocore.client.BaseClient._make_api_call = real


def chain_costs(hops: int) -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    from moto import mock_aws

    with mock_aws():
        for response_bytes in (0, 1024, 4096):
            _measure(max(hops, 1), response_bytes)


def _measure(hops: int, response_bytes: int) -> None:
    import boto3

    from local.queues import create_queues
    from shared.domain.chains import Branch, ChainLink, ParentRun
    from shared.domain.firing import run_id_for
    from shared.domain.schedules import Cron, Every
    from shared.domain.states import RunStatus
    from shared.domain.tasks import HttpTarget, TaskSpec
    from shared.queues import SqsStager
    from shared.services.tasks import TaskService
    from shared.store.dynamo import DynamoTaskRepository, ensure_table
    from shared.store.models import bind_table
    from shared.topology import queues

    bind_table("sundial-bench-chains")
    ensure_table("sundial-bench-chains")
    sqs = boto3.client("sqs", region_name=REGION)
    urls, _ = create_queues(sqs, queues(1, 180))
    service = TaskService(
        repository=DynamoTaskRepository(list_shards=4, retention=timedelta(days=7), default_max_tasks=1_000_000),
        bucket_shards=16,
        retention=timedelta(days=7),
        stager=SqsStager([urls["delay-0"]], urls["dead-letters"], 2000, client=lambda: sqs),
    )
    target = (HttpTarget("https://receiver.example/hook"),)
    child = service.register("bench", TaskSpec(Cron("0 0 1 1 *"), target, payload={"order_id": 123}))
    paused = service.register("bench", TaskSpec(Cron("0 0 1 1 *"), target, payload={"order_id": 123}))
    service.pause("bench", paused.id)
    parent = service.register("bench", TaskSpec(Every(60), target, on_success=(child.id,)))
    answer = "x" * max(response_bytes - 2, 0) or None  # a JSON string of that many bytes

    def link(i: int) -> ChainLink:
        run_id = run_id_for(parent.id, 1_800_000_000_000 + i * 60_000)
        return ChainLink(ParentRun(parent.id, run_id, RunStatus.SUCCEEDED), hop=1, response=answer)

    def series(name: str, start: Callable[[int], ChainStart]) -> tuple[str, Tally]:
        with counting() as tally:
            outcomes = Counter(_outcome(start(i)) for i in range(hops))
        return f"{name} ({', '.join(outcomes)})", tally

    rows = [
        series("a hop started", lambda i: service.start_chained(parent, link(i), child.id, Branch.SUCCESS)),
        series("the same hop again", lambda i: service.start_chained(parent, link(i), child.id, Branch.SUCCESS)),
        series(
            "a hop skipped (task paused)", lambda i: service.start_chained(parent, link(i), paused.id, Branch.SUCCESS)
        ),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"\nOne hop of a chain, per hop ({hops} hops each; the parent's answer {response_bytes} bytes):")
    for name, tally in rows:
        calls = ", ".join(f"{count / hops:g} {op}" for op, count in sorted(tally.calls.items()))
        print(
            f"  {name:{width}} {calls}; {tally.rru / hops:g} RRU, {tally.wru / hops:g} WRU "
            f"({tally.items_written / hops:g} items sent)"
        )
