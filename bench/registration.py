"""`make bench ARGS="--registration"`: how fast a client registers tasks on the local runtime.

Starts the local runtime (moto as its own process; the default tenant's rate limit raised to its
highest, as the firing benchmark does), then registers ``--tasks`` one-shot tasks due tomorrow
(none fires during the run) over HTTP, as the default tenant (no key: the authorizer reads the
tenant's limits, per request), after a warm-up of 20:

* one client, one request after another (a new connection each, as ``urllib`` opens them);
* ``--clients`` clients at once, one task a request;
* one client in batches of 100 (``POST /v1/tasks:batch``).

Each line gives the rate, the median and p99 of a request, moto's CPU per task (user + system
time of its process over the series, from /proc) and the AWS calls per task the runtime made.
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from local.moto_server import free_port

WARM_UP = 20
BATCH = 100


def _post(port: int, path: str, body: Any) -> Any:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback
        return json.loads(answer.read())


def _spec(i: int) -> dict[str, Any]:
    from shared.domain.times import iso

    due = datetime.now(UTC) + timedelta(days=1, seconds=i)
    return {"schedule": {"at": iso(due)}, "target": {"http": {"url": "http://127.0.0.1:9/hook"}}, "payload": {"i": i}}


def registration_bench(count: int, clients: int) -> None:
    import os

    from bench.capacity import CallCounter
    from local.runtime import Runtime
    from local.settings import LocalSettings
    from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND
    from shared.settings.environment import env_name

    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
    rate, burst = env_name("tenant_requests_per_second"), env_name("tenant_burst")
    os.environ.setdefault(rate, str(MAX_REQUESTS_PER_SECOND))
    os.environ.setdefault(burst, str(MAX_BURST))
    print(f"default tenant's rate limit: {os.environ[rate]} requests/s, burst {os.environ[burst]} ({rate}, {burst})")
    counter = CallCounter()
    with counter.active():
        runtime = Runtime(LocalSettings.from_env(port=free_port(), delay_queues=1))
        runtime.start()
        try:
            _series(runtime.port, runtime.moto.pid, counter, count, clients)
        finally:
            runtime.stop()


def _api_calls(counter: Any) -> int:
    """The AWS calls the API function and its authorizer made so far (not the tick's, nor the pollers')."""
    return sum(n for (function, _, _), n in counter.usage.calls.items() if function in ("api", "authorizer"))


def _series(port: int, moto_pid: int, counter: Any, count: int, clients: int) -> None:
    from bench.capacity import percentile
    from bench.costs import cpu_s

    def one(i: int) -> None:
        assert "id" in _post(port, "/v1/tasks", _spec(i))

    def batch(i: int) -> None:
        items = _post(port, "/v1/tasks:batch", {"tasks": [_spec(i + j) for j in range(BATCH)]})["items"]
        assert all("task" in item for item in items), [item for item in items if "task" not in item][:3]

    def series(name: str, tasks: int, step: Callable[[int], None], starts: list[int], workers: int) -> None:
        samples: list[float] = []

        def timed(i: int) -> None:
            started = time.perf_counter()
            step(i)
            samples.append((time.perf_counter() - started) * 1000)

        calls_before = _api_calls(counter)
        cpu_before, started = cpu_s(moto_pid), time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(timed, starts))
        took = time.perf_counter() - started
        moto_ms = (cpu_s(moto_pid) - cpu_before) / tasks * 1000
        calls = (_api_calls(counter) - calls_before) / tasks
        print(
            f"  {name:28} {tasks / took:6.0f} tasks/s   a request p50 {statistics.median(samples):6.1f} ms, "
            f"p99 {percentile(samples, 99):6.1f} ms   a task: moto {moto_ms:4.2f} ms CPU, {calls:4.2f} AWS calls"
        )

    for i in range(WARM_UP):
        one(i)
    print(f"\nregistration on the local runtime, {count} tasks a series (due tomorrow):")
    series("one client, one by one", count, one, list(range(count)), 1)
    series(f"{clients} clients, one by one", count, one, list(range(count)), clients)
    batches = max(1, count // BATCH)
    series(f"one client, batches of {BATCH}", batches * BATCH, batch, [i * BATCH for i in range(batches)], 1)
