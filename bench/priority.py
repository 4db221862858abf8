"""`make bench ARGS="--priority"`: the priority lane under a flood (docs/receivers.md, section 3).

On one local runtime (moto as its own process, the real handlers, the receiver in a process of
its own), two runs of ``high`` tasks with ``"priority": "high"`` due over ``spread`` seconds:

1. unloaded: nothing else is due;
2. in a flood: ``flood`` normal tasks due over the same few seconds (registered in batches of
   100), with the high ones spread among them.

It prints the high tasks' lateness in both runs (p50, p99, max) and the ratio of the p99s (the
target: the flood at most doubles it), and the flood's own lateness. Lateness is measured at the
receiver: the call's arrival minus the due time. Every task must fire once and never early.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.capacity import percentile
from local.moto_server import free_port

BATCH = 100
"""Normal tasks per ``POST /v1/tasks:batch``."""
TARGET_RATIO = 2.0
"""The flood may at most double the high tasks' p99 lateness."""


@dataclass(frozen=True)
class Lateness:
    """One group's lateness (ms) at the receiver, and what went wrong with it."""

    values: list[float]
    lost: int
    duplicated: int
    early: int

    @property
    def p50(self) -> float:
        return percentile(self.values, 50)

    @property
    def p99(self) -> float:
        return percentile(self.values, 99)

    def line(self) -> str:
        worst = max(self.values) if self.values else float("nan")
        return f"p50 {self.p50:7.1f}  p99 {self.p99:7.1f}  max {worst:7.1f} ms  ({len(self.values)} fired)"


class Api:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def post(self, path: str, body: Any) -> Any:
        data = json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method="POST")  # noqa: S310 - loopback
        request.add_header("Content-Type", "application/json")  # a keyless write to make run is JSON
        with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - loopback
            return json.loads(answer.read())


def _spec(url: str, at: datetime, priority: str) -> dict[str, Any]:
    from shared.domain.times import iso

    return {
        "schedule": {"at": iso(at)},
        "target": {"http": {"url": url, "timeout_seconds": 5}},
        "payload": {"bench": "priority"},
        "priority": priority,
    }


def _due(task: dict[str, Any]) -> float:
    return datetime.fromisoformat(task["next_fire_at"].replace("Z", "+00:00")).timestamp()


def register(api: Api, url: str, times: list[datetime], priority: str, clients: int = 8) -> dict[str, float]:
    """task id -> due (epoch seconds); normal tasks in batches of 100, high ones one by one."""
    registered: dict[str, float] = {}

    def batch(chunk: list[datetime]) -> None:
        items = api.post("/v1/tasks:batch", {"tasks": [_spec(url, at, priority) for at in chunk]})["items"]
        refused = [item for item in items if "error" in item]
        if refused:
            raise RuntimeError(f"the batch refused specs: {refused[:3]}")
        registered.update({item["task"]["id"]: _due(item["task"]) for item in items})

    def one(at: datetime) -> None:
        task = api.post("/v1/tasks", _spec(url, at, priority))
        registered[task["id"]] = _due(task)

    with ThreadPoolExecutor(max_workers=clients) as pool:
        if priority == "high":
            list(pool.map(one, times))
        else:
            list(pool.map(batch, [times[i : i + BATCH] for i in range(0, len(times), BATCH)]))
    return registered


def spread_over(start: datetime, seconds: float, count: int) -> list[datetime]:
    return [start + timedelta(seconds=seconds * (i + 0.5) / count) for i in range(count)]


def measure(registered: dict[str, float], calls: list[Any]) -> Lateness:
    first: dict[str, float] = {}
    seen: dict[str, int] = {}
    early = 0
    for call in calls:
        task_id = call.body.get("task_id") if isinstance(call.body, dict) else None
        if task_id not in registered:
            continue
        seen[task_id] = seen.get(task_id, 0) + 1
        if call.at < registered[task_id]:
            early += 1
        first.setdefault(task_id, (call.at - registered[task_id]) * 1000)
    return Lateness(
        list(first.values()),
        lost=len(registered) - len(first),
        duplicated=sum(n - 1 for n in seen.values()),
        early=early,
    )


def priority_bench(high: int = 20, flood: int = 1500, spread: float = 5.0, delay_queues: int = 1) -> None:
    from bench.receiver import receiver_process
    from local.runtime import Runtime
    from local.settings import LocalSettings
    from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND
    from shared.settings.environment import env_name

    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
    rate, burst = env_name("tenant_requests_per_second"), env_name("tenant_burst")
    os.environ.setdefault(rate, str(MAX_REQUESTS_PER_SECOND))
    os.environ.setdefault(burst, str(MAX_BURST))
    woke: dict[str, float] = {}  # the trigger's own lateness: when it stopped waiting, before the call

    def on_fire(fired: Any) -> None:
        if fired.lateness_ms is not None and fired.staged.attempt == 1:
            woke.setdefault(fired.staged.task_id, float(fired.lateness_ms))

    with receiver_process() as receiver:
        settings = LocalSettings.from_env(port=free_port(), delay_queues=delay_queues)
        runtime = Runtime(settings, on_fire=on_fire)
        runtime.start()
        api = Api(runtime.port)
        try:
            print(
                f"priority lane: {high} high-priority tasks due over {spread:.0f} s, alone and then in a flood of "
                f"{flood} normal ones; {delay_queues} normal delay queue(s), the high lane's own queue, poller and "
                f"{settings.high_priority_concurrency} workers",
                flush=True,
            )
            # 1. unloaded
            start = datetime.now(UTC) + timedelta(seconds=8)
            alone = register(api, receiver.url + "/alone", spread_over(start, spread, high), "high")
            _wait(receiver, len(alone), start.timestamp() + spread + 30)
            # 2. in a flood (registered well ahead: the scanners stage it, as they would in AWS)
            lead_in = 10 + flood / 150
            start = datetime.now(UTC) + timedelta(seconds=lead_in)
            registering = time.perf_counter()
            flooded = register(api, receiver.url + "/flood", spread_over(start, spread, flood), "normal")
            among = register(api, receiver.url + "/high", spread_over(start, spread, high), "high")
            took = time.perf_counter() - registering
            if time.time() > start.timestamp() - 3:
                print(f"  warning: registering took {took:.1f} s, the flood was due {lead_in:.0f} s after it began")
            _wait(receiver, len(alone) + len(flooded) + len(among), start.timestamp() + spread + 180)
            time.sleep(3)  # late duplicates, if any, arrive now
        finally:
            runtime.stop()
            calls = receiver.calls()
    report(measure(alone, calls), measure(among, calls), measure(flooded, calls), high, flood, spread)
    waking = [woke[task] for task in among if task in woke]
    if waking:
        print(
            f"  the high tasks' trigger in the flood woke (due to the call) p50 {percentile(waking, 50):.0f}  "
            f"p99 {percentile(waking, 99):.0f}  max {max(waking):.0f} ms: the rest is the call to the receiver"
        )


def _wait(receiver: Any, total: int, deadline: float) -> None:
    while time.time() < deadline and receiver.tasks_called() < total:
        time.sleep(0.5)


def report(alone: Lateness, among: Lateness, flooded: Lateness, high: int, flood: int, spread: float) -> None:
    print(f"\nSundial priority lane: {high} high-priority tasks due over {spread:.0f} s")
    print(f"  unloaded                    high   {alone.line()}")
    print(f"  in a flood of {flood:5d} normal  high   {among.line()}")
    print(f"  {'':27} flood  {flooded.line()}")
    ratio = among.p99 / alone.p99 if alone.p99 > 0 else float("inf")
    verdict = "within" if ratio <= TARGET_RATIO else "NOT within"
    print(
        f"  high-priority p99 in the flood / unloaded: {ratio:.2f}x ({verdict} the {TARGET_RATIO:.0f}x target); "
        f"the flood's p50 is {flooded.p50 / max(among.p50, 1):.0f}x the high tasks' p50 beside it"
    )
    problems = {
        name: (group.lost, group.duplicated, group.early)
        for name, group in (("unloaded", alone), ("high in the flood", among), ("flood", flooded))
        if group.lost or group.duplicated or group.early
    }
    if problems:
        raise SystemExit(f"FAILED (lost, duplicated, early): {problems}")
