"""`make bench`: measured figures for the README.

Today it measures registration (the firing pipeline is not built yet): N tasks registered through
the API Lambda handler against moto running as its own process, the registration rate, the AWS
calls each registration makes (counted by a botocore hook), and the write units each costs,
computed from the stored items' sizes (moto's ConsumedCapacity is a constant).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from bench.capacity import (
    ON_DEMAND_PER_MILLION_WRU,
    CallCounter,
    item_size,
    provisioned_per_million_writes,
    write_units,
)
from local.moto_server import MotoServer, quiet_metrics


def main() -> None:
    parser = argparse.ArgumentParser(prog="make bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000, help="tasks to register (default 1000)")
    parser.add_argument("--window", type=float, default=120, help="due times spread over this many seconds")
    args = parser.parse_args()

    moto = MotoServer()
    moto.start()
    moto.use()
    try:
        run(args.tasks, args.window)
    finally:
        moto.stop()


def run(count: int, window: float) -> None:
    import os

    os.environ.update(POWERTOOLS_TRACE_DISABLED="1", POWERTOOLS_LOG_LEVEL="ERROR")
    import boto3

    from functions.api.handler import handler
    from local.apigw import LocalContext, proxy_event
    from shared.settings import from_env
    from shared.store.dynamo import ensure_table

    quiet_metrics()
    settings = from_env()
    ensure_table(settings.table_name)
    counter = CallCounter()
    latencies: list[float] = []
    with counter.active():
        from functions.api.handler import service
        from shared.store.models import TaskItem

        service.cache_clear()
        TaskItem._connection = None  # a client made from now on is counted
        started = time.perf_counter()
        for i in range(count):
            body: dict[str, Any] = {
                "name": f"bench-{i}",
                "schedule": {"after_seconds": 60 + window * i / count},
                "target": {"http": {"url": "http://127.0.0.1:9/hook", "headers": {"X-Bench": "1"}}},
                "payload": {"order_id": i, "note": "a typical small payload"},
            }
            t0 = time.perf_counter()
            answer = handler(proxy_event("POST", "/v1/tasks", body=json.dumps(body)), LocalContext())
            latencies.append(time.perf_counter() - t0)
            if answer["statusCode"] != 201:
                raise SystemExit(f"registration {i} failed: {answer['body']}")
        elapsed = time.perf_counter() - started

    items = boto3.resource("dynamodb").Table(settings.table_name).scan()["Items"]
    sizes = [item_size(item) for item in items]
    index_sizes = [item_size({k: item[k] for k in ("pk", "sk", "lpk", "lsk")}) for item in items]
    base_wru = statistics.mean(write_units(s) for s in sizes)
    index_wru = statistics.mean(write_units(s) for s in index_sizes)
    per_task = base_wru + index_wru
    latencies.sort()
    print(
        f"registered {count} tasks in {elapsed:.1f} s: {count / elapsed:.0f} registrations/s (one client, in-process)"
    )
    print(
        f"  handler latency p50 {latencies[len(latencies) // 2] * 1000:.1f} ms, "
        f"p99 {latencies[int(len(latencies) * 0.99) - 1] * 1000:.1f} ms (moto server on loopback)"
    )
    print("AWS calls per registration:")
    for (service_name, operation), calls in sorted(counter.calls.items()):
        print(f"  {service_name:10} {operation:20} {calls / count:.2f}")
    print(f"task item size: mean {statistics.mean(sizes):.0f} B, max {max(sizes)} B; index entry {max(index_sizes)} B")
    print(f"write units per registration: {base_wru:.2f} (item) + {index_wru:.2f} (by_tenant index) = {per_task:.2f}")
    print(
        f"registration writes per million tasks: ${per_task * ON_DEMAND_PER_MILLION_WRU:.2f} on-demand, "
        f"${per_task * provisioned_per_million_writes():.2f} provisioned (70 % utilisation)"
    )


if __name__ == "__main__":
    main()
