"""`make bench ARGS="--costs"`: moto's CPU per kind of call the firing path makes, on the local
runtime's moto process, as the local model of `make simulate ARGS=--local` takes them
(sim/local.py, ``MotoCosts``; docs/scale.md, section 7).

Each kind is called N times from one thread with the shapes the pipeline sends (Sundial's own
stores for the claim, the scan's lease and its Query; items and messages of Sundial's sizes for
the rest). moto's CPU is read from /proc (its user and system time) around each series, less
what the idle runtime costs it per second over the same time (the tick, the long polls), and
divided by N. The round trip outside moto is the claim's wall time from one thread less its moto
time.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.ceiling import register
from local.moto_server import free_port

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """A process's user + system CPU time, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def costs(count: int) -> None:
    import boto3

    from local.runtime import Runtime
    from local.settings import LocalSettings

    runtime = Runtime(LocalSettings.from_env(port=free_port(), delay_queues=1))
    runtime.start()
    try:
        pid = runtime.moto.pid
        idle_started, idle_cpu = time.monotonic(), cpu_s(pid)
        time.sleep(3)
        idle_per_s = (cpu_s(pid) - idle_cpu) / (time.monotonic() - idle_started)
        series, items = _series(runtime, count, boto3.client("dynamodb"), boto3.client("sqs"))
        print(
            f"\nmoto's CPU per call (ms), {count} calls each from one thread, idle {idle_per_s * 1000:.0f} ms/s less:"
        )
        measured: dict[str, tuple[float, float]] = {}
        for name, calls, call in series:
            started, cpu = time.monotonic(), cpu_s(pid)
            for i in range(count):
                call(i)
            wall = time.monotonic() - started
            moto_ms = (cpu_s(pid) - cpu - idle_per_s * wall) / (count * calls) * 1000
            measured[name] = moto_ms, wall / (count * calls) * 1000
            print(f"  {name:44} {moto_ms:6.2f} ms of moto, {measured[name][1]:6.2f} ms a round trip")
        claim_ms, claim_wall = measured["claim"]
        per_item = (measured["Query (the partition's items)"][0] - measured["Query (nothing due)"][0]) / max(items, 1)
        print(f"  {'Query, per item returned':44} {per_item:6.3f} ({items} items)")
        both = measured["ReceiveMessage + DeleteMessageBatch"][0] - measured["SendMessageBatch of 10 (500 queued)"][0]
        print(f"  {'ReceiveMessage + DeleteMessageBatch less the send':44} {both:6.2f}")
        print(f"  {'round trip outside moto (a claim)':44} {claim_wall - claim_ms:6.2f}")
    finally:
        runtime.stop()


def _series(
    runtime: Any, count: int, dynamodb: Any, sqs: Any
) -> tuple[list[tuple[str, int, Callable[[int], Any]]], int]:
    """Each kind of call (its name, the calls one step makes, the step) and how many items the
    partition's Query returns."""
    from functions.trigger.handler import trigger
    from shared.domain.firing import staged_for
    from shared.settings.environment import from_env

    settings = from_env()
    due = datetime.now(UTC) + timedelta(hours=1)
    ids = [register(runtime.port, due) for _ in range(count)]
    store = trigger().claimer.store
    due_ms = int(due.timestamp() * 1000)
    table = settings.table_name
    queue = sqs.create_queue(QueueName="sundial-costs")["QueueUrl"]
    body = json.dumps({"t": "01" + "X" * 24, "d": due_ms, "r": "01" + "Y" * 24, "a": 1, "o": True})
    item = {"pk": {"S": "COSTS#0"}, "sk": {"S": "RUNLOG"}, "runs": {"S": "x" * 600}}
    for start in range(0, 500, 10):  # a delay queue's staged messages, delayed past the run
        sqs.send_message_batch(
            QueueUrl=queue,
            Entries=[{"Id": str(i), "MessageBody": body, "DelaySeconds": 900} for i in range(start, start + 10)],
        )

    def claim(i: int, chunk: list[str]) -> Any:
        return store.claim(
            staged_for(chunk[i], due_ms, True), now_ms=due_ms, lease_until_ms=due_ms + 60_000, log_id="c"
        )

    def send(i: int) -> Any:
        return sqs.send_message_batch(
            QueueUrl=queue, Entries=[{"Id": str(j), "MessageBody": body, "DelaySeconds": 900} for j in range(10)]
        )

    visible = sqs.create_queue(QueueName="sundial-costs-visible")["QueueUrl"]

    def scan_lease(i: int) -> Any:
        taken = store.begin_scan(7, due_ms + i, 50_000)
        assert taken is not None
        return store.end_scan(7, taken[1], due_ms + i)

    def receive_and_delete(i: int) -> Any:  # and the send that makes them receivable
        sqs.send_message_batch(QueueUrl=visible, Entries=[{"Id": str(j), "MessageBody": body} for j in range(10)])
        got = sqs.receive_message(QueueUrl=visible, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        return sqs.delete_message_batch(
            QueueUrl=visible,
            Entries=[
                {"Id": str(j), "ReceiptHandle": m["ReceiptHandle"]} for j, m in enumerate(got.get("Messages", []))
            ],
        )

    items = len(store.due(0, due_ms - 1000, due_ms + 1000))  # before the claims below
    series: list[tuple[str, int, Callable[[int], Any]]] = [
        ("UpdateItem (a scan's lease, then its mark)", 2, scan_lease),
        ("Query (nothing due)", 1, lambda i: store.due(0, due_ms + 600_000, due_ms + 601_000)),
        ("Query (the partition's items)", 1, lambda i: store.due(0, due_ms - 1000, due_ms + 1000)),
        ("claim", 1, lambda i: claim(i, ids)),
        ("PutItem (600 B)", 1, lambda i: dynamodb.put_item(TableName=table, Item=item)),
        ("SendMessageBatch of 10 (500 queued)", 1, send),
        ("ReceiveMessage + DeleteMessageBatch", 1, receive_and_delete),
    ]
    return series, items
