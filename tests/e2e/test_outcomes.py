"""`make run` end to end: what a task says about how it went is true. A one-shot task whose
occurrence failed for good is ``failed`` (never ``completed``), listed by ``?status=failed``, and
``completed`` once a redrive of it succeeds; a recurring task whose occurrences fail stays
``scheduled`` with its ``last_run`` saying so; ``last_run`` is null before the first occurrence.
A real receiver answers 500, then 200."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.test_tenants import Tenant, create
from tests.support.cli import Sundial
from tests.support.eventually import eventually

pytestmark = pytest.mark.e2e

ONCE = {"max_attempts": 1, "backoff": "fixed", "interval_seconds": 1}


def settled(tenant: Tenant, task_id: str, status: str) -> dict[str, Any]:
    def check() -> dict[str, Any]:
        task = tenant.ok("GET", f"/v1/tasks/{task_id}")
        assert task["status"] == status, task
        return task

    return eventually(check, timeout=20)


def test_a_failed_one_shot_is_failed_listed_so_and_completed_by_a_redrive_that_works(sundial, receiver):
    tenant = Tenant(sundial, create(sundial, "outcomes"))
    url = receiver.script("/flaky", 500, 500, 200)
    body = {"schedule": {"after_seconds": 1}, "target": {"http": {"url": url}}, "retry": {**ONCE, "max_attempts": 2}}
    task = tenant.ok("POST", "/v1/tasks", body)
    assert task["last_run"] is None  # before its first occurrence
    failed = settled(tenant, task["id"], "failed")
    assert failed["last_run"]["status"] == "dead_lettered"
    assert failed["last_run"]["fired_at"] is not None
    assert failed["next_fire_at"] is None

    def listed(status: str) -> list[str]:
        return [t["id"] for t in tenant.ok("GET", f"/v1/tasks?status={status}")["items"]]

    eventually(lambda: assert_in(task["id"], listed("failed")), timeout=10)
    assert task["id"] not in listed("completed")
    assert tenant.call("PATCH", f"/v1/tasks/{task['id']}", {"name": "x"})[0] == 409  # as a completed one

    (letter,) = tenant.ok("GET", "/v1/dead-letters")["items"]
    assert tenant.ok("POST", "/v1/dead-letters/redrive", {"ids": [letter["id"]]})["redriven"] == 1
    healed = settled(tenant, task["id"], "completed")
    assert healed["last_run"]["status"] == "succeeded"
    assert healed["last_run"]["run_id"] != failed["last_run"]["run_id"]
    assert len(receiver.calls_to("/flaky")) == 3


def test_a_failed_task_can_be_put_aside(sundial, receiver):
    tenant = Tenant(sundial, create(sundial, "outcomes-aside"))
    url = receiver.script("/gone", 400)
    task = tenant.ok("POST", "/v1/tasks", {"schedule": {"after_seconds": 1}, "target": {"http": {"url": url}}})
    assert settled(tenant, task["id"], "failed")["last_run"]["status"] == "failed"
    assert tenant.call("DELETE", f"/v1/tasks/{task['id']}")[0] == 204
    assert tenant.ok("GET", f"/v1/tasks/{task['id']}")["status"] == "cancelled"


def test_a_recurring_task_whose_occurrences_fail_stays_scheduled_and_says_so(sundial, receiver):
    tenant = Tenant(sundial, create(sundial, "outcomes-recurring"))
    url = receiver.script("/down", *([500] * 50))
    body = {"schedule": {"every_seconds": 1}, "target": {"http": {"url": url}}, "retry": ONCE}
    task = tenant.ok("POST", "/v1/tasks", body)

    def failing() -> dict[str, Any]:
        seen = tenant.ok("GET", f"/v1/tasks/{task['id']}")
        assert (seen["last_run"] or {}).get("status") == "dead_lettered", seen
        return seen

    seen = eventually(failing, timeout=20)
    assert seen["status"] == "scheduled"  # it will fire again
    assert seen["next_fire_at"] is not None
    assert tenant.call("DELETE", f"/v1/tasks/{task['id']}")[0] == 204


def assert_in(item: str, items: list[str]) -> None:
    assert item in items, items


def test_the_cli_shows_the_last_outcome(sundial, receiver):
    from tests.e2e.conftest import ADMIN_KEY
    from tests.support.cli import new_tenant

    _, key = new_tenant(Sundial(sundial.base, ADMIN_KEY), "outcomes-cli")
    cli = Sundial(sundial.base, key)
    url = receiver.script("/cli-down", 500)
    created = cli.json("tasks", "create", "--after", "1", "--url", url, "--max-attempts", "1")

    def shown() -> str:
        table = cli.ok("tasks", "list", "--status", "failed").stdout
        assert created["id"] in table, table
        return table

    table = eventually(shown, timeout=20)
    header, row = table.splitlines()[0], next(line for line in table.splitlines() if created["id"] in line)
    assert "LAST_RUN" in header
    assert "failed" in row.split()  # its status, and its last run's
