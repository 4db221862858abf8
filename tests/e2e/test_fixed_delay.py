"""A fixed delay over `make run` (``"every_seconds": n, "after": "end"``, docs/api.md): a real
HTTP receiver that takes 1.5 s to answer each call, a task made through the CLI that fires 2 s
after each run ends. Each occurrence is due the period after the slow call before it was
answered, never two at once; the preview says the later times depend on the runs; bad input is a
400 naming ``schedule.after``."""

from __future__ import annotations

import itertools

import pytest

from tests.e2e.conftest import ADMIN_KEY
from tests.e2e.test_local_runtime import parse
from tests.support.cli import Sundial, new_tenant, until

pytestmark = pytest.mark.e2e

PERIOD_S = 2.0
SLOW_S = 1.5
RECORD_S = 1.0
"""How long after a call's answer its run's end may be recorded on a loaded machine (the trigger
settles and writes it; the next occurrence counts from that write)."""


@pytest.fixture
def cli(sundial) -> Sundial:
    _, key = new_tenant(Sundial(sundial.base, ADMIN_KEY), "fixed-delay")
    return Sundial(sundial.base, key)


def test_each_occurrence_is_due_the_period_after_the_slow_run_before_it_ended_never_two_at_once(cli, receiver):
    url = receiver.script("/e2e-fixed-delay", 200)
    receiver.slow["/e2e-fixed-delay"] = SLOW_S
    task = cli.json("tasks", "create", "--every", str(PERIOD_S), "--after-end", "--url", url)
    assert task["schedule"] == {"every_seconds": PERIOD_S, "after": "end"}
    calls = receiver.wait_for("/e2e-fixed-delay", 3, timeout=30)
    assert len(calls) >= 3, [c.body for c in calls]
    cli.ok("tasks", "cancel", task["id"])
    until(lambda: all(c.answered is not None for c in receiver.calls_to("/e2e-fixed-delay")), timeout=10)
    calls = receiver.calls_to("/e2e-fixed-delay")
    assert receiver.most_outstanding("/e2e-fixed-delay") == 1  # never two at once
    assert calls[0].body["scheduled_for"] == task["next_fire_at"]
    for before, after in itertools.pairwise(calls):
        assert before.answered is not None
        due = parse(after.body["scheduled_for"])
        # the period after the call before ended (its answer, then its end recorded), not after it was due
        assert before.answered + PERIOD_S - 0.05 <= due <= before.answered + PERIOD_S + RECORD_S, (
            before.answered,
            due,
        )
        assert due - parse(before.body["scheduled_for"]) >= PERIOD_S + SLOW_S - 0.05
        assert after.at >= due  # never early
    ran = {run["scheduled_for"]: run["status"] for run in cli.json("tasks", "runs", task["id"])["items"]}
    assert all(ran.get(c.body["scheduled_for"]) == "succeeded" for c in calls), ran
    preview = cli.json("schedules", "preview", "--every", "600", "--after-end", "--count", "5")
    assert len(preview["times"]) == 1
    assert preview["depends_on_runs"] is True
    assert any("depend on the runs" in note for note in preview["notes"])
    assert cli.json("schedules", "preview", "--every", "600", "--count", "3")["depends_on_runs"] is False


@pytest.mark.parametrize(
    "schedule",
    [
        {"every_seconds": 60, "after": "later"},
        {"every_seconds": 60, "after": None},
        {"every_seconds": 60, "after": 1},
        {"cron": "* * * * *", "after": "end"},
        {"after_seconds": 60, "after": "end"},
    ],
)
def test_a_bad_after_is_refused_with_a_400_naming_it(sundial, schedule):
    body = {"schedule": schedule, "target": {"http": {"url": "http://127.0.0.1:9/"}}}
    status, answer = sundial.call("POST", "/v1/tasks", body)
    assert status == 400, answer
    assert "schedule.after" in [detail["field"] for detail in answer["error"]["details"]], answer
    status, answer = sundial.call("POST", "/v1/schedules:preview", {"schedule": schedule})
    assert status == 400, answer
