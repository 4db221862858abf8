"""``sundial tasks``, ``schedules`` and ``dead-letters`` against ``make run``, as tables and as
JSON; each test on a tenant of its own."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.domain.times import iso
from tests.e2e.conftest import ADMIN_KEY
from tests.support.cli import Sundial, new_tenant, rows, until
from tests.support.eventually import eventually

pytestmark = pytest.mark.e2e

NOWHERE = "http://127.0.0.1:9/"
"""A loopback port nothing listens on: for tasks that are never meant to succeed."""


@pytest.fixture
def cli(sundial) -> Sundial:
    _, key = new_tenant(Sundial(sundial.base, ADMIN_KEY), "cli-tasks")
    return Sundial(sundial.base, key)


def test_a_task_made_from_flags_fires_and_its_run_is_listed(cli, receiver):
    url = receiver.script("/cli-fired", 200)
    task = cli.json(
        "tasks", "create", "--name", "close-order-123", "--after", "1", "--url", url,
        "--header", "X-Team=orders", "--payload", '{"order_id": 123}',
    )  # fmt: skip
    assert (task["name"], task["schedule"], task["payload"]) == (
        "close-order-123",
        {"after_seconds": 1.0},
        {"order_id": 123},
    )
    assert task["target"]["http"]["headers"] == {"X-Team": "orders"}

    def succeeded():
        runs = cli.json("tasks", "runs", task["id"])["items"]
        return [run for run in runs if run["status"] == "succeeded"]

    (run,) = until(succeeded)
    (call,) = receiver.calls_to("/cli-fired")
    assert call.body["payload"] == {"order_id": 123}
    table = rows(cli.table("tasks", "runs", task["id"]))
    assert table[0] == [
        "RUN_ID", "SCHEDULED_FOR", "STATUS", "ATTEMPTS", "LATENESS_MS", "LAST_ERROR", "STARTED", "PARENT",
    ]  # fmt: skip
    assert table[1][:4] == [run["run_id"], run["scheduled_for"], "succeeded", "1"]

    record = dict(line.split(None, 1) for line in cli.table("tasks", "get", task["id"]).splitlines())
    assert (record["id"], record["name"], record["status"]) == (task["id"], "close-order-123", "completed")


def test_a_chain_made_from_flags_runs_its_child_whose_run_names_the_parent(cli, receiver):
    child = cli.json("tasks", "create", "--cron", "0 0 1 1 *", "--url", receiver.script("/cli-child", 200))
    parent = cli.json(
        "tasks", "create", "--after", "1", "--url", receiver.script("/cli-parent", 200),
        "--on-success", child["id"], "--on-failure", child["id"],
    )  # fmt: skip
    assert (parent["on_success"], parent["on_failure"]) == ([child["id"]], [child["id"]])
    (run,) = until(lambda: cli.json("tasks", "runs", child["id"])["items"])
    (call,) = receiver.wait_for("/cli-parent", 1, timeout=10)
    assert run["parent"]["run_id"] == call.body["run_id"]
    table = rows(cli.table("tasks", "runs", child["id"]))
    assert table[0][-1] == "PARENT"
    assert table[1][-1] == call.body["run_id"]
    refused = cli.fails(1, "tasks", "update", child["id"], "--on-success", "01J00000000000000000000000")
    assert "on_success[0]" in refused.stderr


def test_a_task_from_a_yaml_file_is_changed_paused_resumed_run_and_cancelled(cli, tmp_path: Path):
    spec = tmp_path / "nightly.yaml"
    spec.write_text(
        "name: nightly-report\n"
        "schedule:\n  cron: '0 3 * * *'\n  timezone: Asia/Shanghai\n"
        f"target:\n  http:\n    url: {NOWHERE}\n"
        "retry: {max_attempts: 2, backoff: fixed, interval_seconds: 1}\n"
    )
    task = cli.json("tasks", "create", "--file", str(spec), "--priority", "high")
    assert task["schedule"] == {"cron": "0 3 * * *", "timezone": "Asia/Shanghai"}
    assert (task["priority"], task["retry"]["backoff"]) == ("high", "fixed")
    task_id = task["id"]

    changed = cli.json("tasks", "update", task_id, "--every", "3600", "--name", "hourly-report", "--if-match", "1")
    assert (changed["schedule"], changed["name"], changed["version"]) == ({"every_seconds": 3600.0}, "hourly-report", 2)
    stale = cli.fails(1, "tasks", "update", task_id, "--name", "late", "--if-match", "1")
    assert "error: version_mismatch:" in stale.stderr

    assert cli.json("tasks", "pause", task_id)["status"] == "paused"

    def listed_paused() -> None:
        assert [task_id, "hourly-report", "paused"] in [
            row[:3] for row in rows(cli.table("tasks", "list", "--status", "paused"))
        ]

    eventually(listed_paused)
    assert rows(cli.table("tasks", "resume", task_id))[2] == ["status", "scheduled"]
    run = cli.json("tasks", "run", task_id)
    assert len(run["run_id"]) == 26
    assert rows(cli.table("tasks", "run", task_id))[0][0] == "run_id"

    cancelled = cli.run("tasks", "cancel", task_id)
    assert (cancelled.exit_code, cancelled.stdout) == (0, "")
    assert cli.run("--output", "json", "tasks", "cancel", task_id).stdout == ""  # twice is harmless
    assert cli.json("tasks", "get", task_id)["status"] == "cancelled"

    def listed_cancelled() -> None:
        listed = rows(cli.table("tasks", "list", "--name-prefix", "hourly-"))
        assert listed[0] == ["ID", "NAME", "STATUS", "LAST_RUN", "NEXT_FIRE_AT", "SCHEDULE"]
        # its run now (to nowhere): not ended yet, skipped by the cancel, or fired first and failed
        assert listed[1][3] in ("-", "firing", "retrying", "skipped", "failed", "dead_lettered"), listed[1]
        assert listed[1][:3] + listed[1][4:] == [task_id, "hourly-report", "cancelled", "-", "every 3600 s"]

    eventually(listed_cancelled)


def test_lists_page_and_filter(cli):
    made = [
        cli.json("tasks", "create", "--name", f"page-{n}", "--after", "3600", "--url", NOWHERE)["id"] for n in range(3)
    ]

    def pages() -> None:
        first = cli.json("tasks", "list", "--limit", "2")
        assert [task["id"] for task in first["items"]] == made[::-1][:2]
        assert first["next_cursor"]
        rest = cli.json("tasks", "list", "--limit", "2", "--cursor", first["next_cursor"])
        assert [task["id"] for task in rest["items"]] == made[:1]
        every = cli.json("tasks", "list", "--limit", "1", "--all", "--name-prefix", "page-")
        assert ([task["id"] for task in every["items"]], every["next_cursor"]) == (made[::-1], None)

    eventually(pages)
    paged = cli.ok("tasks", "list", "--limit", "1")
    assert "--cursor " in paged.stderr
    assert len(rows(paged.stdout)) == 2


def test_idempotent_create_batch_and_errors_naming_the_field(cli, tmp_path: Path):
    once = cli.json("tasks", "create", "--after", "3600", "--url", NOWHERE, "--idempotency-key", "order-123")
    again = cli.ok("tasks", "create", "--after", "3600", "--url", NOWHERE, "--idempotency-key", "order-123")
    assert once["id"] in again.stdout
    assert "replayed" in again.stderr

    batch = {
        "tasks": [
            {"schedule": {"after_seconds": 3600}, "target": {"http": {"url": NOWHERE}}},
            {"schedule": {"cron": "nope"}, "target": {"http": {"url": NOWHERE}}},
        ]
    }
    answer = cli.json("tasks", "batch", "--file", "-", stdin=json.dumps(batch))
    assert [sorted(item) for item in answer["items"]] == [["index", "task"], ["error", "index"]]
    assert answer["items"][1]["error"]["details"][0]["field"] == "schedule.cron"
    table = rows(cli.table("tasks", "batch", "--file", "-", stdin=json.dumps(batch)))
    assert table[1][2] == "scheduled"
    assert table[2][:3] == ["1", "-", "error"]
    assert table[2][3].startswith("validation_error: schedule.cron:")

    refused = cli.fails(1, "tasks", "create", "--cron", "61 * * * *", "--url", "http://169.254.169.254/")
    assert refused.stdout == ""
    details = [line.strip().split(":")[0] for line in refused.stderr.splitlines()[1:]]
    assert refused.stderr.startswith("error: validation_error:")
    assert "schedule.cron" in details
    missing = cli.fails(3, "tasks", "get", "01J0000000000000000000000A")
    assert missing.stderr.startswith("error: task_not_found:")
    cli.fails(3, "tasks", "runs", "01J0000000000000000000000A")
    cli.fails(2, "tasks", "create", "--at", "2030-01-01T00:00:00Z", "--after", "5")
    cli.fails(2, "tasks", "batch", "--file", str(tmp_path / "absent.json"))


def test_schedule_preview_from_flags_and_a_file(cli, tmp_path: Path):
    times = cli.json("schedules", "preview", "--cron", "0 9 * * 1-5", "--timezone", "UTC", "--count", "3",
                     "--from", "2030-03-01T00:00:00Z")["times"]  # fmt: skip
    assert times == ["2030-03-01T09:00:00.000Z", "2030-03-04T09:00:00.000Z", "2030-03-05T09:00:00.000Z"]
    rule = tmp_path / "workdays.json"
    rule.write_text(json.dumps({"schedule": {"repeat": {"level": "workday", "calendar": "CN", "time": "09:00"}}}))
    table = rows(
        cli.table("schedules", "preview", "--file", str(rule), "--count", "2", "--from", "2030-03-01T00:00:00Z")
    )
    assert table == [["TIME"], ["2030-03-01T09:00:00.000Z"], ["2030-03-04T09:00:00.000Z"]]
    cli.fails(2, "schedules", "preview", "--count", "2")
    bad = cli.fails(1, "schedules", "preview", "--every", "0")
    assert "schedule.every_seconds" in bad.stderr


def test_dead_letters_are_listed_read_and_redriven(cli):
    task = cli.json("tasks", "create", "--name", "doomed", "--after", "1", "--url", NOWHERE, "--max-attempts", "1")
    (letter,) = until(lambda: cli.json("dead-letters", "list")["items"])
    assert (letter["task_id"], letter["status"], letter["attempts"]) == (task["id"], "dead_lettered", 1)

    def waiting() -> list[list[str]] | None:  # the status index: a moment behind the letter's write
        table = rows(cli.table("dead-letters", "list", "--status", "dead_lettered"))
        return table if len(table) > 1 else None

    table = until(waiting)
    assert table[0][:5] == ["ID", "TASK_ID", "WORKFLOW NODE", "NAME", "STATUS"]
    assert table[1][:5] == [letter["id"], task["id"], "-", "doomed", "dead_lettered"]  # a task's: no workflow node
    assert cli.json("dead-letters", "get", letter["id"])["reason"] == letter["reason"]
    assert (
        dict(line.split(None, 1) for line in cli.table("dead-letters", "get", letter["id"]).splitlines())["name"]
        == "doomed"
    )

    redriven = cli.json("dead-letters", "redrive", "--id", letter["id"])
    assert redriven["redriven"] == 1
    assert [run["id"] for run in redriven["runs"]] == [letter["id"]]
    again = cli.ok("dead-letters", "redrive", "--all")
    assert "redriven: 0" in again.stderr
    assert cli.json("dead-letters", "list", "--status", "redriven", "--all")["items"][0]["id"] == letter["id"]
    cli.fails(2, "dead-letters", "redrive")
    cli.fails(3, "dead-letters", "get", "01J0000000000000000000000A")


def test_a_past_at_is_said_to_fire_at_once(cli):
    past = iso(datetime.now(UTC) - timedelta(seconds=30))
    created = cli.ok("tasks", "create", "--at", past, "--url", NOWHERE, "--max-attempts", "1")
    assert f"notice: schedule.at: {past} was " in created.stderr
    assert "fires at once" in created.stderr
    assert "notices" not in created.stdout  # the table shows the task; the notice is said once, on stderr
    future = cli.ok("tasks", "create", "--after", "3600", "--url", NOWHERE)
    assert "notice" not in future.stderr


NEWER = 1000
"""Tasks registered after the ones a filtered list looks for: five times what a filtered page of
the listing index reads in a request (docs/status-index.md)."""


def register_newer(cli: Sundial, count: int = NEWER) -> None:
    """``count`` tasks that never fire in the test, through the batch route (100 a request)."""
    spec = {"schedule": {"after_seconds": 86400}, "target": {"http": {"url": NOWHERE}}}
    for start in range(0, count, 100):
        batch = {"tasks": [{**spec, "name": f"newer-{n}"} for n in range(start, min(start + 100, count))]}
        answer = cli.json("tasks", "batch", "--file", "-", stdin=json.dumps(batch))
        assert all("task" in item for item in answer["items"]), answer


def test_a_filtered_list_shows_its_items_however_many_newer_tasks_there_are(cli):
    once = ("--max-attempts", "1", "--url", NOWHERE)
    failed = cli.json("tasks", "create", "--name", "failed-far-down", "--after", "1", *once)
    paused = cli.json(
        "tasks", "create", "--name", "paused-far-down", "--every", "2", "--pause-after-failures", "1", *once
    )
    cancelled = cli.json("tasks", "create", "--name", "cancelled-far-down", "--after", "86400", "--url", NOWHERE)
    cli.ok("tasks", "cancel", cancelled["id"])
    node = {"id": "load", "target": {"http": {"url": NOWHERE}}, "retry": {"max_attempts": 1}}
    workflow = cli.json("workflows", "create", "--file", "-", stdin=json.dumps({"nodes": [node], "edges": []}))
    run = cli.json("workflows", "run", workflow["id"])
    register_newer(cli)
    assert until(lambda: cli.json("tasks", "get", failed["id"])["status"] == "failed")
    assert until(lambda: cli.json("tasks", "get", paused["id"]).get("paused_reason"))
    assert until(lambda: cli.json("workflows", "run-status", workflow["id"], run["run_id"])["status"] == "failed")

    def listed(status: str, task: dict[str, Any], shown_as: str) -> None:
        shown = rows(cli.table("tasks", "list", "--status", status))
        assert [task["id"], task["name"], shown_as] in [row[:3] for row in shown[1:]], (status, shown)

    # failed and paused_after_failures come from the status index; cancelled from the listing
    # index, whose pages come back empty with a cursor until the read reaches it: read on
    eventually(lambda: listed("failed", failed, "failed"), timeout=10, poll=0.5)
    eventually(lambda: listed("paused_after_failures", paused, "paused"), timeout=10, poll=0.5)
    eventually(lambda: listed("cancelled", cancelled, "cancelled"), timeout=10, poll=0.5)

    def run_listed() -> None:
        shown = rows(cli.table("workflow-runs", "list", "--status", "failed"))
        assert [[run["run_id"], workflow["id"], "failed"]] == [row[:3] for row in shown[1:]], shown

    eventually(run_listed, timeout=10, poll=0.5)
    counted = cli.json("overview")
    assert (counted["tasks"]["failed"], counted["tasks"]["paused_after_failures"]) == (1, 1)
    assert counted["workflow_runs"]["failed"] == 1
    assert rows(cli.table("overview"))[5][:2] == ["failed workflow runs", "1"]
