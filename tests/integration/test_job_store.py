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
    assert store.claim_notification("job-1", 10)  # a lower one arriving late is still its own
    assert store.claim_notification("job-1", 50)
    assert not store.claim_notification("job-1", 10)


def test_once_cancelled_the_job_item_takes_no_notify_post_or_outcome_but_counts_a_shard_under_way(
    store: DynamoJobStore,
) -> None:
    """The conditions themselves, on DynamoDB: every write a step makes after the cancel."""
    _new(store, notify=25)
    store.planned("job-1", [4])
    assert store.cancel("another-tenant", "job-1", 5) is None  # not theirs: untouched
    cancelled = store.cancel("default", "job-1", 5)
    assert cancelled is not None
    assert (cancelled.status.value, cancelled.finished_ms, cancelled.finishing) == ("cancelled", 5, False)
    assert store.cancel("default", "job-1", 6) is None  # written once
    assert store.shard_done("job-1", 0, 0) == (1, 4)  # a shard whose call was under way counts
    assert not store.claim_notification("job-1", 25)
    assert not store.claim_post("job-1")
    assert not store.failed("job-1", "States.TaskFailed")
    assert not store.succeeded("job-1", 1)
    item = store.item("job-1")
    assert item is not None
    assert (item.status, item.finished_ms, item.notified, item.post_started_ms, item.error, item.result) == (
        "cancelled",
        5,
        None,
        None,
        None,
        None,
    )


def test_a_claimed_post_and_a_cancel_exclude_each_other(store: DynamoJobStore) -> None:
    _new(store, "first-post")
    assert store.claim_post("first-post", now_ms=7)
    assert store.claim_post("first-post")  # a retried post claims again
    assert store.cancel("default", "first-post", 8) is None
    assert store.succeeded("first-post", 1)
    _new(store, "first-cancel")
    assert store.cancel("default", "first-cancel", 8) is not None
    assert not store.claim_post("first-cancel")
    item = store.item("first-cancel")
    assert item is not None
    assert (item.status, item.post_started_ms) == ("cancelled", None)
