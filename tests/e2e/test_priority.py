"""`make run` end to end: high-priority tasks fire on time while normal ones flood the runtime
(their own delay queue, poller and workers: docs/receivers.md, section 3)."""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.times import iso
from tests.e2e.test_local_runtime import settled

pytestmark = pytest.mark.e2e

FLOOD = 600
"""Normal tasks due within one second: more than the local runtime fires on time, so the normal
lane falls behind (alone on this machine: the flood's p90 0.7-1.1 s late, the high tasks at most
0.2 s). It was 300 until moto got its own front (local/moto_host/front.py): the runtime then kept pace
with 300 on an idle machine (the flood's p90 0.03 s), and the comparison below meant nothing.
More only loads the machine the other suites share (1,000 made a CPU-starved run time calls out
and fire them again); the figures at 1,500 are ``make bench ARGS="--priority"``'s."""
HIGH = 5


def parse(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_high_priority_tasks_fire_on_time_while_normal_ones_flood(sundial, receiver):
    start = datetime.now(UTC) + timedelta(seconds=10)

    def spec(path: str, offset_s: float, priority: str) -> dict:
        at = start + timedelta(seconds=offset_s)
        return {"schedule": {"at": iso(at)}, "target": {"http": {"url": receiver.url + path}}, "priority": priority}

    flood = [spec("/flood", i / FLOOD, "normal") for i in range(FLOOD)]
    for first in range(0, FLOOD, 100):
        status, answer = sundial.call("POST", "/v1/tasks:batch", {"tasks": flood[first : first + 100]})
        assert status == 200, answer
        assert all("task" in item for item in answer["items"]), answer
    high = {}
    for i in range(HIGH):
        status, task = sundial.call("POST", "/v1/tasks", spec("/high", 0.1 + 0.8 * i / HIGH, "high"))
        assert status == 201, task
        assert task["priority"] == "high"
        high[task["id"]] = parse(task["next_fire_at"])
    assert time.time() < start.timestamp() - 2, "registering took too long for the test to mean anything"

    receiver.wait_for("/flood", FLOOD, timeout=120)
    high_calls = receiver.wait_for("/high", HIGH, timeout=5)
    for task_id in high:  # each run's outcome written: a duplicate would have met its claim
        settled(sundial, task_id, "succeeded")

    assert sorted(c.body["task_id"] for c in receiver.calls_to("/high")) == sorted(high)  # each once
    assert len({c.body["task_id"] for c in receiver.calls_to("/flood")}) == FLOOD == len(receiver.calls_to("/flood"))
    high_late = [call.at - high[call.body["task_id"]] for call in high_calls]
    flood_late = [call.at - parse(call.body["scheduled_for"]) for call in receiver.calls_to("/flood")]
    assert min(high_late) >= 0
    assert min(flood_late) >= 0
    flood_p90 = statistics.quantiles(flood_late, n=10)[-1]
    # the flood is late (the normal lane is over the runtime's pace), the high tasks are not: a
    # comparison between the lanes, not a wall-clock bound (`make bench ARGS="--priority"` measures
    # the figures; a 1 s bound here failed on a busy CI machine with the flood 15 s behind)
    assert max(high_late) < flood_p90, (
        f"high-priority lateness {sorted(high_late)} s; the flood's p90 {flood_p90:.2f} s"
    )
