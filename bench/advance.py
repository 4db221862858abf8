"""`make bench ARGS="--advance --tasks 20"`: how fast the virtual clock moves `make run`
(docs/virtual-clock.md): ``--tasks`` hourly tasks (each at its own minute) called on a local
receiver, advanced 7 days a day at a time; the results the trigger recorded per second of
wall time, and each advance's duration."""

from __future__ import annotations

import time
from pathlib import Path

from sundial_receiver.testing import running_sundial

from local.receiver import running_receiver

ROOT = Path(__file__).resolve().parents[1]
DAYS = 7


def advance_bench(tasks: int) -> None:
    with running_receiver() as receiver, running_sundial(ROOT) as sundial:
        for index in range(tasks):
            task = {
                "name": f"hourly-{index}",
                "schedule": {"cron": f"0 {index % 60} * * * *"},
                "target": {"http": {"url": f"{receiver.url}/hourly"}},
            }
            status, answer = sundial.call("POST", "/v1/tasks", task)
            if status != 201:
                raise RuntimeError(f"registration answered {status}: {answer}")
        durations = []
        fired = 0
        for _ in range(DAYS):  # a day an advance
            started = time.perf_counter()
            fired += sundial.advance(days=1)
            durations.append(time.perf_counter() - started)
        wall = sum(durations)
        calls = len(receiver.calls_to("/hourly"))
    print(f"\nthe virtual clock: {tasks} hourly tasks advanced {DAYS} days, a day an advance")
    print(f"  results {fired}, calls received {calls} (expected {tasks * 24 * DAYS})")
    print(f"  {fired / wall:.0f} results a second of wall time ({wall:.1f} s in all)")
    durations.sort()
    print(f"  a day's advance: p50 {durations[len(durations) // 2]:.2f} s, max {durations[-1]:.2f} s")
