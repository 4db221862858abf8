"""A task whose target is a job: every occurrence starts one job (its id is the run id)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from shared.adapters.executions import SfnStarter
from tests.integration.conftest import use_settings
from tests.support.eventually import eventually

pytestmark = pytest.mark.integration

BUCKET = "sundial-jobs-target"
SQS = {"sqs": {"queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/q"}}
JOB = {
    "name": "nightly-reindex",
    "processor": {"http": {"url": "https://example.com/reindex"}},
    "data": [["a", "b"], ["c"]],
    "sharding": {"max_items_per_shard": 1},
}


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    executions: list[str] = []
    monkeypatch.setattr(SfnStarter, "start", lambda self, job_id: executions.append(job_id))
    return executions


def test_an_occurrence_starts_its_job_once(
    api: Any, pipeline: Any, started: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    use_settings(
        monkeypatch, jobs_bucket=BUCKET, job_state_machine_arn="arn:aws:states:us-east-1:123456789012:stateMachine:jobs"
    )
    task = api("POST", "/v1/tasks", {"schedule": {"after_seconds": 1.5}, "target": {"job": JOB}})
    assert task.status == 201, task.body
    assert task.body["target"]["job"]["processor"]["http"]["url"] == "https://example.com/reindex"
    assert pipeline.fire(until=lambda: len(started) >= 1, timeout=10)
    pipeline.settle()  # a duplicate would start a second job now
    (run,) = api("GET", f"/v1/tasks/{task.body['id']}/runs").body["items"]
    assert run["status"] == "succeeded"
    assert started == [run["run_id"]]
    job = api("GET", f"/v1/jobs/{run['run_id']}").body
    assert (job["name"], job["status"]) == ("nightly-reindex", "running")
    stored = boto3.client("s3").get_object(Bucket=BUCKET, Key=f"jobs/{run['run_id']}/levels.json")["Body"].read()
    assert stored == b'[["a","b"],["c"]]'


def test_a_tenants_task_starts_the_job_as_that_tenants(
    api: Any, pipeline: Any, started: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.conftest import ADMIN_KEY

    boto3.client("s3").create_bucket(Bucket=BUCKET)
    use_settings(
        monkeypatch, jobs_bucket=BUCKET, job_state_machine_arn="arn:aws:states:us-east-1:123456789012:stateMachine:jobs"
    )
    created = api("POST", "/v1/tenants", {"id": "acme"}, {"Authorization": f"Bearer {ADMIN_KEY}"})
    acme = {"Authorization": f"Bearer {created.body['key']['secret']}"}
    task = api("POST", "/v1/tasks", {"schedule": {"after_seconds": 1.5}, "target": {"job": JOB}}, acme)
    assert task.status == 201, task.body
    assert pipeline.fire(until=lambda: len(started) >= 1, timeout=10)
    (job_id,) = started
    assert api("GET", f"/v1/jobs/{job_id}", headers=acme).status == 200

    def acme_lists_it() -> None:
        assert [j["id"] for j in api("GET", "/v1/jobs", headers=acme).body["items"]] == [job_id]

    eventually(acme_lists_it)  # first: while the list lags, an empty one would prove nothing
    assert api("GET", f"/v1/jobs/{job_id}").status == 404  # not the default tenant's
    assert api("GET", "/v1/jobs").body["items"] == []


@pytest.mark.parametrize(
    ("job", "field"),
    [
        ({**JOB, "processor": SQS}, "target.job.processor"),
        ({**JOB, "sharding": {"min_items_per_shard": 3, "max_items_per_shard": 2}},
         "target.job.sharding.min_items_per_shard"),
        ({**JOB, "data": [["x"] * 30], "sharding": {"max_items_per_shard": 1, "max_shards": 20}},
         "target.job.sharding.max_shards"),
        ({**JOB, "notify_every_percent": 101}, "target.job.notify_every_percent"),
    ],
)  # fmt: skip
def test_a_bad_job_target_is_refused_naming_the_field(api: Any, job: dict[str, Any], field: str) -> None:
    answer = api("POST", "/v1/tasks", {"schedule": {"after_seconds": 60}, "target": {"job": job}})
    assert answer.status == 400, answer.body
    assert field in [d["field"] for d in answer.body["error"]["details"]], answer.body
