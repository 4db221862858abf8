"""Backfill against ``make run`` through the real pipeline (scanners, delay queues, trigger) and a
real HTTP receiver (docs/backfill.md): a recurring task's past occurrences are called oldest first,
each at or after its place in the pace and once, with its own ``scheduled_for``, as runs of the
task; with the task's own occurrences and a second, overlapping backfill in the same window, every
occurrence is called exactly once; a cancel from the CLI stops the runs not fired yet, and every
occurrence not called can be backfilled again (then each is called once). Each test on a tenant
of its own."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest

from shared.domain.times import iso
from tests.e2e.conftest import ADMIN_KEY
from tests.support.cli import Sundial, new_tenant, until
from tests.support.receiver import Call, Receiver

pytestmark = pytest.mark.e2e

EVERY_SECOND = {"cron": "* * * * * *"}
WAIT_S = 30
"""How long a test waits for calls it expects: the first run is due 6 s after the request on make
run (its look-ahead and guard, 5 s, and 1 s: the scanners stage it), then one every 1/per_second s."""


@pytest.fixture
def cli(sundial) -> Sundial:
    _, key = new_tenant(Sundial(sundial.base, ADMIN_KEY), "backfill")
    return Sundial(sundial.base, key)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def seconds(start: datetime, count: int) -> list[str]:
    """``count`` whole seconds from ``start`` (rounded up to a whole second), as the API writes times."""
    first = start.replace(microsecond=0) + (timedelta(seconds=1) if start.microsecond else timedelta())
    return [iso(first + timedelta(seconds=i)) for i in range(count)]


def calls_before(receiver: Receiver, path: str, moment: datetime) -> list[Call]:
    """The calls of occurrences scheduled before ``moment`` (the backfill's: the task's own come after)."""
    return [c for c in receiver.calls_to(path) if at(c.body["scheduled_for"]) < moment]


def wait_calls(receiver: Receiver, path: str, moment: datetime, count: int) -> list[Call]:
    """Those calls once there are ``count`` (woken by each arrival), or those there are after WAIT_S."""
    with receiver.arrived:
        receiver.arrived.wait_for(lambda: len(calls_before(receiver, path, moment)) >= count, WAIT_S)
    return calls_before(receiver, path, moment)


def register(cli: Sundial, receiver: Receiver, path: str) -> dict[str, Any]:
    return cli.json("tasks", "create", "--cron", "* * * * * *", "--url", receiver.script(path, 200), "--name", path)


def test_past_occurrences_are_called_oldest_first_at_their_pace_each_once_as_runs_of_the_task(cli, receiver):
    task = register(cli, receiver, "/backfill-paced")
    created = at(task["created_at"])
    start = created - timedelta(seconds=10)
    wanted = seconds(start, 6)  # six whole seconds before the task existed
    end = at(wanted[-1]) + timedelta(milliseconds=1)
    started = cli.json("tasks", "backfill", task["id"], "--from", iso(start), "--to", iso(end), "--per-second", "2")
    assert (started["occurrences"], started["in_window"], started["left_out"]) == (6, 6, {})

    calls = sorted(wait_calls(receiver, "/backfill-paced", created, 6), key=lambda c: c.body["fired_at"])
    assert [c.body["scheduled_for"] for c in calls] == wanted  # called oldest first, each once
    assert len({c.headers["Idempotency-Key"] for c in calls}) == 6
    assert {c.body["task_id"] for c in calls} == {task["id"]}
    first_due = at(started["first_fire_at"])
    for k, call in enumerate(calls):  # never ahead of its place in the pace: k/2 s after the first
        assert at(call.body["fired_at"]) >= first_due + timedelta(milliseconds=500 * k), (k, call.body)

    def done() -> dict[str, Any] | None:
        read = cli.json("tasks", "backfills", task["id"], started["backfill_id"])
        return read if read["status"] == "done" else None

    finished = until(done, timeout=WAIT_S)
    assert finished, "the backfill never said it was done"
    assert finished["progress"]["succeeded"] == 6
    runs = {run["scheduled_for"]: run for run in cli.json("tasks", "runs", task["id"], "--all")["items"]}
    assert all(runs[time]["status"] == "succeeded" for time in wanted)
    assert {runs[time]["run_id"] for time in wanted} == {c.body["run_id"] for c in calls}
    cli.ok("tasks", "cancel", task["id"])


def test_with_the_tasks_own_occurrences_and_an_overlapping_backfill_every_occurrence_is_called_once(cli, receiver):
    path = "/backfill-once"
    task = register(cli, receiver, path)
    created = at(task["created_at"])
    live = receiver.wait_for(path, 4, timeout=WAIT_S)  # the task's own: four of its seconds called
    assert len(live) >= 4
    last_live = at(live[3].body["scheduled_for"])
    end = last_live + timedelta(milliseconds=1)

    first = cli.json(
        "tasks",
        "backfill",
        task["id"],
        "--from",
        iso(created - timedelta(seconds=3)),
        "--to",
        iso(end),
        "--per-second",
        "5",
    )
    own = first["left_out"].get("fired_by_task", 0) + first["left_out"].get("task_armed", 0)
    assert own >= 4, first  # the task's own seconds are left to it
    assert first["occurrences"] == first["in_window"] - own
    second = cli.json(
        "tasks", "backfill", task["id"], "--from", iso(created - timedelta(seconds=5)),
        "--to", iso(created - timedelta(seconds=1)), "--per-second", "5",
    )  # fmt: skip
    assert second["left_out"].get("backfilled", 0) >= 2, second  # what the first took, it does not take again

    def settled() -> bool:
        reads = [cli.json("tasks", "backfills", task["id"], b["backfill_id"]) for b in (first, second)]
        return all(read["status"] == "done" for read in reads)

    assert until(settled, timeout=WAIT_S), "the backfills never ended"
    cli.ok("tasks", "cancel", task["id"])
    counted = Counter(c.body["scheduled_for"] for c in receiver.calls_to(path))
    window = seconds(created - timedelta(seconds=5), int((last_live - created).total_seconds()) + 6)
    window = [time for time in window if at(time) <= last_live]
    assert {time: counted[time] for time in window} == dict.fromkeys(window, 1)


def test_a_backfill_cancelled_from_the_cli_stops_and_its_occurrences_can_be_backfilled_again(cli, receiver):
    path = "/backfill-cancelled"
    task = register(cli, receiver, path)
    created = at(task["created_at"])
    start = created - timedelta(seconds=30)
    end = created - timedelta(seconds=10)
    started = cli.json("tasks", "backfill", task["id"], "--from", iso(start), "--to", iso(end), "--per-second", "1")
    assert started["occurrences"] == 20

    assert len(wait_calls(receiver, path, created, 2)) >= 2
    cancelled = cli.json("tasks", "backfill-cancel", task["id"], started["backfill_id"])
    at_cancel = len(calls_before(receiver, path, created))
    assert cancelled["status"] == "cancelled"
    progress = cancelled["progress"]
    assert progress["cancelled"] >= 20 - at_cancel - 2, progress
    assert sum(progress.values()) == 20
    # a task due after the cancelled runs' next places: once it is called, they would have been too
    probe = cli.json("tasks", "create", "--after", "4", "--url", receiver.script("/backfill-probe", 200))
    assert receiver.wait_for("/backfill-probe", 1, timeout=WAIT_S), probe
    called = len(calls_before(receiver, path, created))
    assert called <= at_cancel + 1  # at most the one being called

    again = cli.json("tasks", "backfill", task["id"], "--from", iso(start), "--to", iso(end), "--per-second", "20")
    # every occurrence not called is taken again: the cancelled runs gave theirs back, and a run claimed
    # before the cancel and then skipped (never called) gives its up too
    assert again["occurrences"] == 20 - called
    assert again["left_out"] == {"backfilled": called}
    calls = wait_calls(receiver, path, created, 20)
    assert sorted(Counter(c.body["scheduled_for"] for c in calls).values()) == [1] * 20
    table = cli.table("tasks", "backfills", task["id"])
    assert started["backfill_id"] in table
    assert again["backfill_id"] in table
    cli.ok("tasks", "cancel", task["id"])


def test_bad_windows_are_refused_by_the_api_through_the_cli(cli, receiver):
    task = register(cli, receiver, "/backfill-refused")
    created = at(task["created_at"])
    refused = cli.fails(
        1,
        "tasks",
        "backfill",
        task["id"],
        "--from",
        iso(created),
        "--to",
        iso(created - timedelta(seconds=5)),
        "--per-second",
        "1",
    )
    assert "to:" in refused.stderr
    later = iso(created + timedelta(hours=1))
    refused = cli.fails(1, "tasks", "backfill", task["id"], "--from", iso(created), "--to", later, "--per-second", "1")
    assert "to:" in refused.stderr
    one_shot = cli.json("tasks", "create", "--after", "600", "--url", receiver.url + "/never")
    refused = cli.fails(
        1,
        "tasks",
        "backfill",
        one_shot["id"],
        "--from",
        iso(created - timedelta(seconds=9)),
        "--to",
        iso(created),
        "--per-second",
        "1",
    )
    assert "invalid_state" in refused.stderr
    cli.ok("tasks", "cancel", task["id"])
    cli.ok("tasks", "cancel", one_shot["id"])
