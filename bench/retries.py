"""`make bench ARGS="--retries"`: how close retries keep to their schedule, measured by the receiver.

One-shot tasks due over a window, each to a receiver path answering 500, 500, then 200 (in
``--latency`` seconds), retried with a fixed backoff of ``--interval`` seconds: attempt n is due
``(n - 1) * interval`` after the occurrence (the backoff after the attempt before it was due,
shared/domain/retry.py). Printed: each attempt's lateness from its own due time, first attempts
and retries apart (none may be early), and the gaps between a task's attempts against the interval.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from bench.capacity import percentile
from bench.receivers import iso, local_system
from local.receiver import Call, Receiver

ATTEMPTS = 3


def slowed(receiver: Receiver, path: str, latency_s: float) -> str:
    """A path answering 500, 500, 200, each after ``latency_s``."""
    url = receiver.script(path, 500, 500, 200)
    if latency_s:
        receiver.slow[path] = latency_s
    return url


def retry_gaps(tasks: int, window: float, interval: float, latency_s: float, lead_in: float) -> None:
    print(
        f"\nretries: {tasks} one-shot tasks due over {window:g} s, each answered 500, 500, 200 "
        f"(in {latency_s * 1000:.0f} ms), retried with a fixed {interval:g} s backoff"
    )
    with local_system() as system:
        start = datetime.now(UTC) + timedelta(seconds=lead_in)
        retry = {"max_attempts": ATTEMPTS, "backoff": "fixed", "interval_seconds": interval}
        specs = [
            {
                "schedule": {"at": iso(start + timedelta(seconds=window * i / max(tasks, 1)))},
                "target": {
                    "http": {
                        "url": slowed(system.receiver, f"/retry/{i}", latency_s),
                        "timeout_seconds": 10,
                    }
                },
                "retry": retry,
            }
            for i in range(tasks)
        ]
        registered = system.register(specs)
        system.wait_for(len(registered), start.timestamp() + window + 30)  # every first attempt
        last_due = start.timestamp() + window + (ATTEMPTS - 1) * interval
        time.sleep(max(0.0, last_due + latency_s + 3 - time.time()))  # the last retries, and any late one
        calls = system.receiver.calls()
    by_task: dict[str, list[Call]] = defaultdict(list)
    for call in calls:
        if isinstance(call.body, dict) and call.path.startswith("/retry/"):
            by_task[call.body["task_id"]].append(call)
    first: list[float] = []
    retries: list[float] = []
    gaps: list[float] = []
    early = complete = 0
    for attempts in by_task.values():
        attempts.sort(key=lambda c: c.body["attempt"])
        due = datetime.fromisoformat(attempts[0].body["scheduled_for"].replace("Z", "+00:00")).timestamp()
        for call in attempts:
            late_ms = (call.at - (due + (call.body["attempt"] - 1) * interval)) * 1000
            early += late_ms < 0
            (first if call.body["attempt"] == 1 else retries).append(late_ms)
        gaps += [(b.at - a.at) * 1000 for a, b in itertools.pairwise(attempts)]
        seen = [c.body["attempt"] for c in attempts]
        complete += seen == list(range(1, ATTEMPTS + 1))
        if seen != list(range(1, ATTEMPTS + 1)):
            print(
                f"  task {attempts[0].body['task_id']}: attempts {seen} at {[round(c.at - due, 3) for c in attempts]} s"
            )

    def spread(values: list[float]) -> str:
        shown = " / ".join(f"{percentile(values, p):.1f}" for p in (50, 95, 99))
        return f"p50 / p95 / p99 / max {shown} / {max(values, default=float('nan')):.1f} ms"

    never = {t["id"] for t in registered} - set(by_task)
    if never:
        print(f"  never called: {sorted(never)}")
    print(f"  tasks with all {ATTEMPTS} attempts, in order: {complete} of {tasks};  early attempts: {early}")
    print(f"  first attempts' lateness from their due time: {spread(first)}")
    print(f"  retries' lateness from their own due time:    {spread(retries)}")
    print(
        f"  gap between a task's attempts: min {min(gaps, default=float('nan')):.1f} ms, "
        f"{spread(gaps)} (the interval: {interval * 1000:.0f} ms)"
    )
    if early or complete < tasks:
        raise SystemExit("FAILED: an attempt came before its due time, or a task's attempts are missing")
