"""``GET /v1/overview``: the tenant's exact counts of what needs looking at (docs/status-index.md),
each a count of the status index: with many more tasks newer than the failed and paused ones
(more than a filtered list used to read a request), every count is exact, and another tenant's
items are not counted."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.domain.jobs import JobStatus
from shared.domain.retry import RetryPolicy
from shared.domain.states import TaskStatus
from shared.domain.tasks import DeadLetter, HttpTarget
from shared.domain.times import truncate_ms
from shared.domain.workflows import NodeStatus
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

ZERO = {
    "tasks": {"failed": 0, "paused": 0, "paused_after_failures": 0},
    "dead_letters": {"waiting": 0},
    "jobs": {"running": 0, "failed": 0},
    "workflow_runs": {"failed": 0},
}


@pytest.fixture
def jobs_start(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs start as in tests/integration/test_api_jobs.py: their bucket, no execution."""
    import boto3

    from shared.adapters.executions import SfnStarter
    from tests.integration.conftest import use_settings

    boto3.client("s3").create_bucket(Bucket="sundial-overview-jobs")
    use_settings(monkeypatch, jobs_bucket="sundial-overview-jobs")
    monkeypatch.setattr(SfnStarter, "start", lambda self, job_id: None)


def test_the_overview_counts_exactly_whatever_else_the_tenant_has(api: Any, jobs_start: None) -> None:
    from functions.api import common

    assert api("GET", "/v1/overview").body == ZERO
    hook = {"http": {"url": "https://example.com/hook"}}
    made = [api("POST", "/v1/tasks", {"schedule": {"after_seconds": 3600}, "target": hook}).body for _ in range(3)]
    repository = common.tasks().repository
    for task, (status, reason) in zip(
        made,
        [(TaskStatus.FAILED, None), (TaskStatus.PAUSED, None), (TaskStatus.PAUSED, "3 failures in a row")],
        strict=True,
    ):
        stored = repository.get("default", task["id"])
        repository.update(replace(stored, status=status, paused_reason=reason))
    batch = [{"schedule": {"after_seconds": 3600}, "target": hook} for _ in range(100)]
    for _ in range(3):  # 300 newer tasks
        assert api("POST", "/v1/tasks:batch", {"tasks": batch}).status == 200
    now = truncate_ms(datetime.now(UTC))
    common.tasks().dead_letters_store.record(
        DeadLetter(
            "01KA0000000000000000000001", "default", made[0]["id"], "01KA0000000000000000000001",
            now - timedelta(minutes=1), now, 3, "retries exhausted", (HttpTarget("https://example.com/hook"),),
            False, None, RetryPolicy(),
        )
    )  # fmt: skip
    job = api("POST", "/v1/jobs", {"processor": hook, "data": [[1]]}).body
    failed_job = api("POST", "/v1/jobs", {"processor": hook, "data": [[2]]}).body
    common.jobs().records.failed(failed_job["id"], "the processor answered 500")
    workflow = api("POST", "/v1/workflows", {"nodes": [{"id": "a", "target": hook}], "edges": []}).body
    run = api("POST", f"/v1/workflows/{workflow['id']}/run").body["run_id"]
    common.workflows().runs.node_ended(run, "a", NodeStatus.FAILED)
    assert api("GET", f"/v1/jobs/{job['id']}").body["status"] == JobStatus.RUNNING.value

    def counted() -> None:
        answer = api("GET", "/v1/overview")
        assert answer.status == 200, answer.body
        assert answer.body == {
            "tasks": {"failed": 1, "paused": 2, "paused_after_failures": 1},
            "dead_letters": {"waiting": 1},
            "jobs": {"running": 1, "failed": 1},
            "workflow_runs": {"failed": 1},
        }

    eventually(counted)
    admin = api("POST", "/v1/tenants", {"id": "other"}, {"Authorization": f"Bearer {admin_key()}"})
    other = {"Authorization": f"Bearer {admin.body['key']['secret']}"}
    assert api("GET", "/v1/overview", None, other).body == ZERO


def admin_key() -> str:
    from tests.integration.conftest import ADMIN_KEY

    return ADMIN_KEY
