"""`make bench ARGS="--ceiling"`: how many claims per second moto's DynamoDB serves on this machine.

Every fire costs one claim (a conditional UpdateItem returning the task), so this is the local
runtime's ceiling however the rest of the pipeline performs. Registers N tasks due in an hour
through the HTTP API of a running local runtime, then claims them with the trigger's own store
from 1 and from 4 threads, and prints claims per second and the client's CPU per claim.
"""

from __future__ import annotations

import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from local.moto_server import free_port


def ceiling(count: int) -> None:
    from local.runtime import Runtime
    from local.settings import LocalSettings

    runtime = Runtime(LocalSettings.from_env(port=free_port(), delay_queues=1))
    runtime.start()
    try:
        from functions.trigger.handler import trigger
        from shared.domain.firing import staged_for

        due = datetime.now(UTC) + timedelta(hours=1)
        ids = [register(runtime.port, due) for _ in range(2 * count)]
        store = trigger().claimer.store
        due_ms = int(due.timestamp() * 1000)
        print(f"\nmoto's DynamoDB, claims (conditional UpdateItem, ReturnValues ALL_NEW) of {count} tasks:")
        for threads, chunk in ((1, ids[:count]), (4, ids[count:])):
            started, cpu = time.perf_counter(), time.process_time()

            def claim(task_id: str) -> None:
                store.claim(
                    staged_for(task_id, due_ms, True), now_ms=due_ms, lease_until_ms=due_ms + 60_000, log_id="c"
                )

            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(claim, chunk))
            elapsed = time.perf_counter() - started
            print(
                f"  {threads} thread(s): {count / elapsed:5.0f} claims/s, {elapsed / count * 1000:5.1f} ms each; "
                f"client CPU {(time.process_time() - cpu) / count * 1000:.1f} ms per claim"
            )
    finally:
        runtime.stop()


def register(port: int, due: datetime) -> str:
    """A one-shot task due at ``due`` through the runtime's API (its target is never called)."""
    from shared.domain.times import iso

    body = json.dumps({"schedule": {"at": iso(due)}, "target": {"http": {"url": "http://127.0.0.1:9/"}}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/tasks", data=body, method="POST")
    request.add_header("Content-Type", "application/json")  # a keyless write to make run is JSON
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback
        task_id: str = json.loads(answer.read())["id"]
    return task_id
