"""The job item and the job's objects on moto (shared/store/jobs.py), driven by the job steps."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from shared.domain.jobs import NewJobRecord
from shared.domain.sharding import Sharding
from shared.services.jobs import JobSteps, levels_key
from shared.store.jobs import DynamoJobStore, S3Blobs

pytestmark = pytest.mark.integration


class Summing:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def call(self, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(body)
        if body["phase"] == "shard":
            return {"result": sum(body["items"])}
        if body["phase"] == "post":
            return {"result": sum(body["results"])}
        return {}


@pytest.fixture
def store(aws: None) -> DynamoJobStore:
    boto3.client("s3").create_bucket(Bucket="sundial-jobs")
    return DynamoJobStore()


def _new(store: DynamoJobStore, job_id: str = "job-1", notify: int | None = 50) -> bool:
    return store.create(
        NewJobRecord(job_id, "default", "sum", {"http": {"url": "http://x"}}, Sharding(1, 2, 10), notify, 1)
    )


def test_a_job_runs_through_its_steps_on_dynamodb_and_s3(store: DynamoJobStore) -> None:
    _new(store)
    blobs = S3Blobs("sundial-jobs")
    blobs.put(levels_key("job-1"), [[1, 2, 3], [4]])
    processor = Summing()
    steps = JobSteps(store, blobs, processor)
    planned = steps.pre("job-1")
    for level in planned["levels"]:
        for shard in level["shards"]:
            steps.shard("job-1", level["level"], shard, level["shard_count"])
            steps.shard("job-1", level["level"], shard, level["shard_count"])  # a retry: counted once
    steps.post("job-1")
    item = store.item("job-1")
    assert item is not None
    assert (item.status, item.result, item.done_shards, item.total_shards) == ("succeeded", "10", 4, 4)
    assert [c["progress"]["percent"] for c in processor.calls if c["phase"] == "notify"] == [50, 100]


def test_a_job_is_created_once_and_finishes_once(store: DynamoJobStore) -> None:
    assert _new(store)
    assert not _new(store)  # a repeated start: the job exists already
    assert store.failed("job-1", "ProcessorFailed: 400")
    assert not store.succeeded("job-1", 1)  # ended already: nothing written
    item = store.item("job-1")
    assert item is not None
    assert (item.status, item.error) == ("failed", "ProcessorFailed: 400")
    assert store.item("missing") is None


def test_each_notification_threshold_is_claimed_once(store: DynamoJobStore) -> None:
    _new(store)
    assert store.claim_notification("job-1", 25)
    assert not store.claim_notification("job-1", 25)
    assert not store.claim_notification("job-1", 10)
    assert store.claim_notification("job-1", 50)
