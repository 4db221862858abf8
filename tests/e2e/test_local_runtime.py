"""`make run` end to end: the API contract and the firing behaviour, over real HTTP only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import datetime

import pytest

from tests.support.eventually import eventually, until

pytestmark = pytest.mark.e2e


def parse(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def register(sundial, url: str, **fields):
    status, task = sundial.call(
        "POST", "/v1/tasks", {"schedule": {"after_seconds": 2}, "target": {"http": {"url": url}}, **fields}
    )
    assert status == 201, task
    return task


def runs(sundial, task_id: str) -> list[dict]:
    return sundial.call("GET", f"/v1/tasks/{task_id}/runs")[1]["items"]


def settled(sundial, task_id: str, *statuses: str, timeout: float = 15, headers=None) -> list[dict]:
    """The task's runs once they have ended as ``statuses`` (in any order): the run records a
    duplicate call would have to get past (its claim is taken, its outcome written), so a test
    that counts the calls after this needs no sleep for a duplicate to arrive."""
    found: list[dict] = []

    def ended() -> bool:
        found[:] = sundial.call("GET", f"/v1/tasks/{task_id}/runs", headers=headers)[1]["items"]
        return sorted(r["status"] for r in found) == sorted(statuses)

    assert wait(ended, timeout), (task_id, statuses, found)
    return found


def completed(sundial, task_id: str, timeout: float = 15) -> None:
    """Once the one-shot task is completed: its occurrence fired and its outcome is written (a
    duplicate would meet that run's claim), whatever runs were dropped on the way."""
    assert wait(lambda: sundial.call("GET", f"/v1/tasks/{task_id}")[1]["status"] == "completed", timeout), task_id


def wait(condition, timeout: float = 15) -> bool:
    return bool(until(condition, timeout, poll=0.1))


def test_a_task_fires_once_on_time_with_the_contracts_body_and_headers(sundial, receiver):
    url = receiver.script("/hook", 200)
    task = register(sundial, url, payload={"order_id": 123}, schedule={"after_seconds": 4})  # via the scanners
    calls = receiver.wait_for("/hook", 1, timeout=15)
    settled(sundial, task["id"], "succeeded")
    assert len(receiver.calls_to("/hook")) == 1
    (call,) = calls
    assert call.at >= parse(task["next_fire_at"])  # never early (how late: make bench's figures)
    assert call.body["task_id"] == task["id"]
    assert call.body["payload"] == {"order_id": 123}
    assert call.headers["Idempotency-Key"] == call.body["run_id"]
    assert call.headers["Sundial-Attempt"] == "1"
    # Signed (Standard Webhooks v1) with the tenant's secret, made at its first callback when
    # it had none (tests/integration/test_signing.py verifies the signatures).
    assert call.headers["webhook-id"] == call.body["run_id"]
    assert abs(int(call.headers["webhook-timestamp"]) - call.at) < 5
    assert all(part.startswith("v1,") for part in call.headers["webhook-signature"].split(" "))
    status, secrets = sundial.call("GET", "/v1/signing-secrets")
    assert status == 200
    assert secrets["items"]
    assert all(set(item) == {"id", "created_at", "expires_at"} for item in secrets["items"])
    assert wait(lambda: sundial.call("GET", f"/v1/tasks/{task['id']}")[1]["status"] == "completed", 5)
    assert [r["status"] for r in runs(sundial, task["id"])] == ["succeeded"]


def test_a_cancelled_task_does_not_fire(sundial, receiver):
    url = receiver.script("/cancel", 200)
    task = register(sundial, url, schedule={"after_seconds": 3})
    assert sundial.call("DELETE", f"/v1/tasks/{task['id']}")[0] == 204
    # a task due just after it, registered after it: once this one has fired, the cancelled
    # one's staged occurrence came before it and was dropped
    after = register(sundial, receiver.script("/cancel-after", 200), schedule={"after_seconds": 3.5})
    assert receiver.wait_for("/cancel-after", 1, timeout=15)
    settled(sundial, after["id"], "succeeded")
    assert receiver.calls_to("/cancel") == []


def test_a_500_is_retried_and_a_400_is_not(sundial, receiver):
    flaky = receiver.script("/flaky", 500, 200)
    bad = receiver.script("/bad", 400)
    retried = register(sundial, flaky, retry={"max_attempts": 3, "backoff": "fixed", "interval_seconds": 1})
    failed = register(sundial, bad)
    assert len(receiver.wait_for("/flaky", 2, timeout=15)) == 2
    assert wait(lambda: [r["status"] for r in runs(sundial, failed["id"])] == ["failed"])
    assert len(receiver.calls_to("/bad")) == 1
    assert wait(lambda: [r["status"] for r in runs(sundial, retried["id"])] == ["succeeded"])
    assert runs(sundial, retried["id"])[0]["attempts"] == 2


def test_exhausted_retries_are_dead_lettered(sundial, receiver):
    url = receiver.script("/down", 503)
    task = register(sundial, url, retry={"max_attempts": 2, "backoff": "fixed", "interval_seconds": 1})
    assert wait(lambda: [r["status"] for r in runs(sundial, task["id"])] == ["dead_lettered"], timeout=15)
    assert len(receiver.calls_to("/down")) == 2


def test_a_cron_task_fires_twice(sundial, receiver):
    url = receiver.script("/cron", 200)
    task = register(sundial, url, schedule={"cron": "*/2 * * * * *"})
    calls = receiver.wait_for("/cron", 2, timeout=12)
    assert len(calls) >= 2
    scheduled = [parse(c.body["scheduled_for"]) for c in calls[:2]]
    assert scheduled[1] - scheduled[0] == 2
    assert sundial.call("DELETE", f"/v1/tasks/{task['id']}")[0] == 204


def test_bad_input_is_a_400_naming_the_field(sundial):
    status, body = sundial.call("POST", "/v1/tasks", {"schedule": {"cron": "61 * * * *"}, "target": {}})
    assert status == 400
    assert body["error"]["code"] == "validation_error"
    assert "schedule.cron" in [d["field"] for d in body["error"]["details"]]
    assert sundial.call("GET", "/v1/tasks/01ARZ3NDEKTSV4RRFFQ69G5FAV")[0] == 404


def test_the_banner_says_where_state_is_kept_and_its_scan_command_works_as_printed(sundial):
    """The start-up lines say where the state is kept (this runtime: in memory, as the tests'
    runtimes are; one with a data folder says where: tests/e2e/test_devserver.py), and the moto
    hint they print runs as printed (credentials and a region included) with the AWS CLI, listing
    the table's items."""

    def printed() -> str:
        text = "".join(sundial.opening)
        assert "Ctrl-C" in text, text
        return text

    banner = eventually(printed)
    assert "Everything is kept in memory" in banner
    (command,) = [line.split("items", 1)[1].strip() for line in banner.splitlines() if line.startswith("  items ")]
    if shutil.which("aws") is None:
        pytest.skip("the AWS CLI is not installed here")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and "proxy" not in k.lower()}
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "Items" in json.loads(done.stdout)
