"""`make bench ARGS="--peer"` judges both schedulers by one rule (bench/peer.py ``figures``): a
task's lateness is its first call's arrival minus its due time, a call before it is early, a
second call is a duplicate, a task never called is lost, and calls of other tasks do not count."""

from __future__ import annotations

import pytest

from bench.peer import figures
from local.receiver import Call

pytestmark = pytest.mark.unit


def call(task_id: str, at: float) -> Call:
    return Call("/peer", "POST", {}, {"task_id": task_id}, at)


def test_lateness_early_duplicates_and_lost_are_counted_per_task() -> None:
    due = {"a": 100.0, "b": 200.0, "c": 300.0}
    calls = [call("a", 100.002), call("a", 100.5), call("b", 199.9), call("stranger", 1.0)]

    judged = figures(due, calls, cpu_s=0.03)

    assert (judged.fired, judged.lost, judged.duplicated, judged.early) == (2, 1, 1, 1)
    assert judged.lateness_ms == pytest.approx([2.0, -100.0])  # the first call of each, to the millisecond
    assert "CPU 15.00 ms a fire" in judged.line("Sundial")
