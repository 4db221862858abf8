"""What the whole bill (bench/bill.py) counts on the local runtime besides the firing run: the
idle stack's calls per tick and per empty scan, a registration's calls one by one and in batches,
the bytes a fired task leaves in the table, and the deployed stack's template."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import bill
from bench import capacity as cap
from local.attribution import current_function, invocations

Sizes = tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]
"""A table's items and index entries: (pk, sk) -> billed bytes."""

API_MEMORY_GB = 0.25  # infra/api.py (shared.topology.API_FUNCTION_MEMORY_MB)
PIPELINE_MEMORY_GB = 0.25  # infra/pipeline.py, the tick's and the scanner's profile
FIRST_TICKS = 2
"""Ticks the idle count waits for: the first scans every shard (no mark yet)."""


class Snapshot:
    """The counter's and the invocations' state at one moment, to take differences from."""

    def __init__(self, counter: cap.CallCounter) -> None:
        usage = counter.usage
        self.counter = counter
        self.calls = usage.calls.copy()
        self.wru = defaultdict(float, usage.wru)
        self.rru = defaultdict(float, usage.rru)
        self.invocations = {name: list(durations) for name, durations in invocations.items()}

    def since(self, functions: tuple[str, ...], per: float, memory_gb: float, api_requests: float = 0) -> bill.Counted:
        """What ``functions`` (and their event sources) used since this snapshot, per ``per``."""
        usage = self.counter.usage
        calls = usage.calls - self.calls
        mine = {
            key: n
            for key, n in calls.items()
            if key[0] in functions or key[0].removesuffix(" event source") in functions
        }
        durations = [d for name in functions for d in invocations.get(name, [])[len(self.invocations.get(name, [])) :]]
        return bill.Counted(
            wru=sum(usage.wru[f] - self.wru[f] for f in functions) / per,
            rru=sum(usage.rru[f] - self.rru[f] for f in functions) / per,
            sqs=sum(n for (_, service, _), n in mine.items() if service == "sqs") / per,
            invocations=len(durations) / per,
            seconds=sum(durations) / per,
            memory_gb=memory_gb,
            api_requests=api_requests / per,
            calls={f"{fn} {service} {operation}": n / per for (fn, service, operation), n in sorted(mine.items())},
        )


@contextmanager
def metric_names() -> Iterator[Counter[tuple[str, str]]]:
    """The custom metrics sent while active: (function, metric name) -> times added."""
    from shared.observability import metrics

    seen: Counter[tuple[str, str]] = Counter()
    original = metrics.add_metric

    def add_metric(*args: Any, **kwargs: Any) -> Any:
        seen[(current_function.get(), kwargs.get("name", args[0] if args else "?"))] += 1
        return original(*args, **kwargs)

    metrics.add_metric = add_metric  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        metrics.add_metric = original  # type: ignore[method-assign]


def idle(counter: cap.CallCounter, seconds: float, shards: int) -> bill.IdleCounted:
    """Count what the idle runtime does over ``seconds``: per tick (the tick looks at its
    ``shards``), and per scan slot (a shard a tick: an idle stack scans none once every shard has
    its mark). The runtime's first ticks, which scan every shard to set its mark, are let pass."""
    started = time.monotonic()
    while len(invocations.get("tick", [])) < FIRST_TICKS and time.monotonic() - started < 30:
        time.sleep(0.1)
    before = Snapshot(counter)
    with metric_names() as seen:
        time.sleep(seconds)
    ticks = len(invocations.get("tick", [])) - len(before.invocations.get("tick", []))
    if ticks == 0:
        raise RuntimeError(f"no tick in {seconds} s: the local runtime's tick is not running")
    tick = before.since(("tick",), ticks, PIPELINE_MEMORY_GB)
    scan = before.since(("scanner",), ticks * shards, PIPELINE_MEMORY_GB)
    return bill.IdleCounted(tick=tick, scan=scan, metrics=len({name for _, name in seen}), shards=shards)


def registration(
    counter: cap.CallCounter, register: Callable[[list[datetime], int], Any], count: int, batch: int
) -> bill.Counted:
    """Register ``count`` one-shot tasks due tomorrow (one per request, or ``batch`` per request)
    and count what each cost the API (the gateway's local authorizer is left out: on AWS its
    answer is cached per key, bench/bill.py)."""
    due = datetime.now(UTC) + timedelta(days=1)
    before = Snapshot(counter)
    register([due + timedelta(milliseconds=i) for i in range(count)], batch)
    requests = count if not batch else -(-count // batch)
    return before.since(("api",), count, API_MEMORY_GB, api_requests=requests)


def table_bytes(table: str) -> Sizes:
    """Every item of ``table``: (pk, sk) -> its billed bytes, and the same for its index entries
    (items with ``lpk``: the keys-only index holds the table's and the index's keys)."""
    import boto3

    client = boto3.client("dynamodb")
    items: dict[tuple[str, str], int] = {}
    index: dict[tuple[str, str], int] = {}
    for page in client.get_paginator("scan").paginate(TableName=table):
        for item in page["Items"]:
            key = (item["pk"]["S"], item["sk"]["S"])
            items[key] = cap.item_size(item)
            if "lpk" in item:
                index[key] = cap.item_size({k: item[k] for k in ("pk", "sk", "lpk", "lsk") if k in item})
    return items, index


def kept(before: Sizes, after: Sizes, tasks: int) -> tuple[float, float]:
    """Bytes and items per task the table holds now and did not before."""
    new_bytes = 0
    new_items = 0
    for was, now in zip(before, after, strict=True):
        for key, size in now.items():
            if key not in was:
                new_bytes += size
                new_items += 1
    return new_bytes / max(tasks, 1), new_items / max(tasks, 1)


def template() -> dict[str, Any]:
    """The stack's template at the settings cdk.json states (a synth: about 15 s)."""
    from aws_cdk.assertions import Template

    from infra import names
    from infra.app import build_app

    app = build_app(nag=False)
    stack = app.node.find_child(names.STACK_NAME)
    return dict(Template.from_stack(stack).to_json())  # type: ignore[arg-type]
