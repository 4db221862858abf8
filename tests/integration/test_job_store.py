"""The job item and the job's objects on moto (shared/store/jobs.py), driven by the job steps."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from shared.domain.jobs import JobStep, NewJobRecord, Span, StepFailure
from shared.domain.sharding import Sharding
from shared.services.jobs import JobSteps, levels_key
from shared.store.jobs import JOB_SK, DynamoJobStore, S3Blobs, job_pk
from shared.store.models import JobItem

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


def test_each_level_counts_its_shards_and_keeps_when_the_last_was_done(store: DynamoJobStore) -> None:
    """Per-level counters (a number a level, not a list of shards) and times, in the writes the
    steps make anyway; a level starts when the one before it ends, an empty one ends as it starts."""
    _new(store, notify=None)
    store.pre_started("job-1", now_ms=5)
    store.pre_started("job-1", now_ms=6)  # a retried pre keeps its first attempt's time
    store.planned("job-1", [2, 0, 1], now_ms=10)
    assert store.shard_done("job-1", 0, 0, now_ms=20) == (1, 3)
    assert store.shard_done("job-1", 0, 0, now_ms=25) == (1, 3)  # a retried shard counts once
    store.shard_done("job-1", 0, 1, now_ms=30)
    view = store.view("default", "job-1")
    assert view is not None
    assert [(lv.total_shards, lv.done_shards, lv.last_done_ms) for lv in view.levels or ()] == [
        (2, 2, 30),
        (0, 0, None),
        (1, 0, None),
    ]
    assert [(s.started_ms, s.finished_ms) for s in view.level_spans()] == [(10, 30), (30, 30), (30, None)]
    assert (view.pre_started_ms, view.pre_finished_ms, view.level) == (5, 10, 2)
    store.shard_done("job-1", 2, 0, now_ms=40)
    assert store.claim_post("job-1", now_ms=50)
    assert store.claim_post("job-1", now_ms=55)  # a retried post keeps its first attempt's time
    assert store.succeeded("job-1", 7, now_ms=60)
    view = store.view("default", "job-1")
    assert view is not None
    assert [(s.started_ms, s.finished_ms) for s in view.level_spans()][-1] == (30, 40)
    assert (view.post, view.failure) == (Span(50, 60), None)
    item = store.item("job-1")
    assert item is not None
    assert (item.level_done, item.level_done_ms) == ([2, 0, 1], [30, 0, 40])


def test_a_job_planned_before_levels_were_counted_goes_on_counting_in_all(store: DynamoJobStore) -> None:
    """A job whose pre ran before this version (no per-level counts on its item) is counted as it
    was, and read per level from its set of shards done."""
    _new(store, notify=None)
    JobItem(job_pk("job-1"), JOB_SK).update(
        actions=[JobItem.shards_per_level.set("[2, 1]"), JobItem.total_shards.set(3)]
    )
    spec = store.spec("job-1")
    assert not spec.levels_counted
    assert store.shard_done("job-1", 0, 1, by_level=spec.levels_counted) == (1, 3)
    view = store.view("default", "job-1")
    assert view is not None
    assert [(lv.total_shards, lv.done_shards, lv.last_done_ms) for lv in view.levels or ()] == [
        (2, 1, None),
        (1, 0, None),
    ]
    assert _new(store, "job-2")
    store.planned("job-2", [1])  # planned by this version: counted per level
    assert store.spec("job-2").levels_counted


def test_a_failure_and_a_failed_notify_are_kept_on_the_item(store: DynamoJobStore) -> None:
    _new(store)
    notify = StepFailure(JobStep.NOTIFY, "the processor answered HTTP 502", attempt=1, status=502, threshold=50)
    store.notify_failed("job-1", notify)
    failure = StepFailure(JobStep.SHARD, "the processor answered HTTP 500", level=0, shard=3, attempt=3, status=500,
                          answer="locked", retryable=True)  # fmt: skip
    assert store.failed("job-1", failure.sentence(), failure, now_ms=9)
    view = store.view("default", "job-1")
    assert view is not None
    assert (view.failure, view.notify_failure, view.error) == (failure, notify, failure.sentence())
