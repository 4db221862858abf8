"""`make bench ARGS="--burst"` and `ARGS="--backpressure"`: protecting receivers, measured by
the receiver (docs/receivers.md, section 6).

*burst*: tasks due in the same second, all to one receiver under a limit (default 600 tasks, 20
a second, burst 5, 5 in flight): each must fire once, no one-second window may see more than
``per_second + burst`` calls start, no more than ``max_in_flight`` may be outstanding, and the
last should start within 10 % of the ideal ``tasks / per_second`` seconds. Also what the
firing path wrote and read per fire, against the same flood without a limit.

*backpressure*: a receiver answering ``429 Retry-After: 3`` to its first call and 200 after:
its second attempt must come 3 s or later after the first; then the same under a limit, with
other tasks of that limit due while the receiver asked to wait: none of them may start before.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import capacity as cap
from local.moto_server import free_port
from local.receiver import Call, Receiver


@dataclass
class System:
    """The local runtime, a receiver in its own process, and the AWS calls counted."""

    port: int
    receiver: Any
    counter: cap.CallCounter
    results: Counter[str] = field(default_factory=Counter)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method)
        request.add_header("Content-Type", "application/json")  # a keyless write to make run is JSON
        with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - loopback
            text = answer.read()
        return json.loads(text) if text else None

    def register(self, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Register tasks in batches of 100, four requests at a time."""
        chunks = [specs[i : i + 100] for i in range(0, len(specs), 100)]
        tasks: list[dict[str, Any]] = []
        lock = threading.Lock()

        def post(chunk: list[dict[str, Any]]) -> None:
            items = self.call("POST", "/v1/tasks:batch", {"tasks": chunk})["items"]
            refused = [i for i in items if "error" in i]
            if refused:
                raise RuntimeError(f"the batch refused specs: {refused[:3]}")
            with lock:
                tasks.extend(item["task"] for item in items)

        threads = [threading.Thread(target=post, args=(chunk,)) for chunk in chunks]
        for i in range(0, len(threads), 4):
            for t in threads[i : i + 4]:
                t.start()
            for t in threads[i : i + 4]:
                t.join()
        if len(tasks) != len(specs):
            raise RuntimeError(f"registered {len(tasks)} of {len(specs)}")
        return tasks

    def wait_for(self, tasks: int, until: float) -> None:
        while time.time() < until and self.receiver.tasks_called() < tasks:
            time.sleep(0.5)
        time.sleep(3)  # late duplicates, if any, arrive now


@contextmanager
def local_system() -> Iterator[System]:
    from bench.receiver import receiver_process
    from local.runtime import Runtime
    from local.settings import LocalSettings
    from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND
    from shared.settings.environment import env_name

    os.environ["POWERTOOLS_LOG_LEVEL"] = "ERROR"
    os.environ.setdefault(env_name("tenant_requests_per_second"), str(MAX_REQUESTS_PER_SECOND))
    os.environ.setdefault(env_name("tenant_burst"), str(MAX_BURST))
    counter = cap.CallCounter()
    results: Counter[str] = Counter()
    with counter.active(), receiver_process() as receiver:
        settings = LocalSettings.from_env(port=free_port(), delay_queues=1)
        runtime = Runtime(settings, on_fire=lambda fired: results.update([fired.result.value]))
        runtime.start()
        try:
            yield System(runtime.port, receiver, counter, results)
        finally:
            runtime.stop()


def iso(at: datetime) -> str:
    from shared.domain.times import iso as format_iso

    return format_iso(at)


def measured(calls: list[Call], path: str) -> Receiver:
    """The calls to ``path``, in a receiver's own measures (starts per second, outstanding)."""
    kept = Receiver(url="")
    kept.calls = [c for c in calls if c.path == path]
    return kept


def once_each(calls: list[Call], tasks: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(fired, lost, duplicated) of ``tasks`` among ``calls``."""
    per_task = Counter(c.body["task_id"] for c in calls if isinstance(c.body, dict))
    ids = {t["id"] for t in tasks}
    fired = sum(1 for t in ids if per_task[t])
    return fired, len(ids) - fired, sum(n - 1 for t, n in per_task.items() if t in ids)


def burst(tasks: int, per_second: float, burst_size: int, in_flight: int, latency_s: float, lead_in: float) -> None:
    limited = f"limited to {per_second:g}/s (burst {burst_size})" if per_second else "with no limit (a baseline)"
    capped = f" and {in_flight} in flight" if in_flight and per_second else ""
    print(
        f"\nburst: {tasks} one-shot tasks due in the same second to one receiver {limited}{capped}; "
        f"the receiver takes {latency_s * 1000:.0f} ms a call"
    )
    with local_system() as system:
        url = system.receiver.script("/burst", 200, slow=latency_s)
        limit: dict[str, Any] = {"origin": system.receiver.url, "per_second": per_second, "burst": burst_size}
        if in_flight:
            limit["max_in_flight"] = in_flight
        if per_second:
            system.call("PUT", "/v1/limits/bench-burst", limit)
        due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=lead_in)
        spec = {"schedule": {"at": iso(due)}, "target": {"http": {"url": url, "timeout_seconds": 5}}}
        started = time.perf_counter()
        registered = system.register([spec] * tasks)
        took = time.perf_counter() - started
        before = _usage(system.counter)
        ideal = tasks / per_second if per_second else 0.0
        system.wait_for(tasks, due.timestamp() + ideal * 2 + 30)
        after = _usage(system.counter)
        calls = system.receiver.calls()
    print(f"  registered {tasks} in {took:.1f} s (batches of 100); due at {iso(due)}")
    seen = measured(calls, "/burst")
    fired, lost, duplicated = once_each(seen.calls, registered)
    early = sum(1 for c in seen.calls if c.at < due.timestamp())
    starts = seen.most_starts_per_second("/burst")
    outstanding = seen.most_outstanding("/burst")
    last = max((c.at for c in seen.calls), default=float("nan")) - due.timestamp()
    print(f"  fired {fired}   lost {lost}   duplicated {duplicated}   early {early}")
    rate_cap = math.floor(per_second) + burst_size if per_second else tasks
    flight_cap = in_flight if in_flight and per_second else tasks
    bounds = f" (limit {per_second:g} + burst {burst_size} = {rate_cap})" if per_second else ""
    capped_at = f" (limit {flight_cap})" if flight_cap < tasks else ""
    print(
        f"  most calls started in any one second: {starts}{bounds};  most outstanding at once: {outstanding}{capped_at}"
    )
    versus = f"; ideal {ideal:.1f} s ({(last / ideal - 1) * 100:+.1f} %, target within 10 %)" if ideal else ""
    print(f"  the last call started {last:.2f} s after the due second{versus}")
    _busiest(seen.calls, due.timestamp())
    print(f"  trigger results: {dict(system.results)}")
    _per_fire(before, after, fired)
    failed = [
        problem
        for problem, bad in (
            ("lost", lost),
            ("duplicated", duplicated),
            ("early", early),
            ("over the rate", starts > rate_cap),
            ("over max_in_flight", outstanding > flight_cap),
        )
        if bad
    ]
    if failed:
        raise SystemExit(f"FAILED: {', '.join(failed)}")


def backpressure(lead_in: float) -> None:
    print("\nbackpressure: a receiver answers 429 Retry-After: 3 to its first call, then 200")
    with local_system() as system:
        alone = system.receiver.script("/alone", (429, {"Retry-After": "3"}), 200)
        first = system.receiver.script("/first", (429, {"Retry-After": "3"}), 200)
        others = system.receiver.script("/others", 200)
        system.call("PUT", "/v1/limits/bench-backpressure", {"per_second": 50, "burst": 5})
        due = datetime.now(UTC) + timedelta(seconds=lead_in)
        retry = {"max_attempts": 3, "backoff": "fixed", "interval_seconds": 1}
        limited = {"timeout_seconds": 5, "limit": "bench-backpressure"}
        specs = [
            {"schedule": {"at": iso(due)}, "target": {"http": {"url": alone, "timeout_seconds": 5}}, "retry": retry},
            {"schedule": {"at": iso(due)}, "target": {"http": {"url": first, **limited}}, "retry": retry},
        ] + [
            {
                "schedule": {"at": iso(due + timedelta(seconds=0.5 + i * 0.1))},
                "target": {"http": {"url": others, **limited}},
            }
            for i in range(20)
        ]
        tasks = system.register(specs)
        system.wait_for(len(tasks), due.timestamp() + 30)
        calls = system.receiver.calls()
    by_path = {
        path: sorted((c for c in calls if c.path == path), key=lambda c: c.at)
        for path in ("/alone", "/first", "/others")
    }
    fired, lost, duplicated = once_each([c for c in calls if c.path == "/others"], tasks[2:])
    gap = _gap(by_path["/alone"])
    limited_gap = _gap(by_path["/first"])
    refused_at = by_path["/first"][0].at if by_path["/first"] else float("nan")
    during = sum(1 for c in by_path["/others"] if c.at < refused_at + 3)
    print(f"  alone: second attempt {gap:.2f} s after the first (at least 3 s: the task's own backoff is 1 s)")
    print(f"  under a limit: the receiver's second attempt after {limited_gap:.2f} s; of 20 other tasks of the")
    print(
        f"  limit due 0.5-2.4 s after the 429, {during} started before the receiver's 3 s were over "
        f"(fired {fired}, lost {lost}, duplicated {duplicated})"
    )
    if not (gap >= 3 and limited_gap >= 3 and during == 0 and not lost and not duplicated):
        raise SystemExit("FAILED: a call came before the receiver's Retry-After, or a task was lost or duplicated")


def _gap(calls: list[Call]) -> float:
    return calls[1].at - calls[0].at if len(calls) >= 2 else float("nan")


def _usage(counter: cap.CallCounter) -> tuple[Counter[tuple[str, str, str]], float, float]:
    usage = counter.usage
    return Counter(usage.calls), usage.wru["trigger"], usage.rru["trigger"]


def _per_fire(
    before: tuple[Counter[tuple[str, str, str]], float, float],
    after: tuple[Counter[tuple[str, str, str]], float, float],
    fired: int,
) -> None:
    calls = after[0] - before[0]
    n = max(fired, 1)
    print(f"  per fire, the trigger: {(after[1] - before[1]) / n:.2f} WRU, {(after[2] - before[2]) / n:.2f} RRU")
    for (function, service, operation), count in sorted(calls.items()):
        if function.startswith("trigger"):
            print(f"    {function:22} {service:9} {operation:22} {count / n:7.3f}")


def _busiest(calls: list[Call], due: float) -> None:
    """Where the busiest one-second window of starts lies, and how the starts in it are spaced."""
    times = sorted(c.at for c in calls)
    best, first, at = 0, 0, 0
    for last, t in enumerate(times):
        while t - times[first] >= 1.0:
            first += 1
        if last - first + 1 > best:
            best, at = last - first + 1, first
    window = times[at : at + best]
    if window:
        gaps = [round((b - a) * 1000) for a, b in itertools.pairwise(window)]
        print(f"  the busiest second begins {window[0] - due:.2f} s after the due second; gaps (ms): {gaps}")
