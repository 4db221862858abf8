"""Cancelling a job (docs/jobs.md, "Cancelling"): the domain's rule, and the job's steps on the
in-memory ports once the job is cancelled. On moto and over ``make run``:
tests/integration/test_job_cancel.py and tests/e2e/test_jobs.py."""

from __future__ import annotations

import pytest

from shared.adapters.executions import execution_arn
from shared.domain.jobs import JobSpec, JobStatus, JobView, cancel_refusal
from shared.domain.sharding import Sharding
from shared.services.jobs import JobSteps, levels_key, result_key
from tests.support.fakes import InMemoryBlobs, InMemoryJobStore
from tests.unit.test_job_steps import ScriptedProcessor

pytestmark = pytest.mark.unit


def _view(status: JobStatus, finishing: bool = False) -> JobView:
    return JobView("job-1", None, status, 0, 4, 0, None, None, 0, None, finishing)


def test_only_a_running_job_whose_post_has_not_begun_can_be_cancelled() -> None:
    assert cancel_refusal(_view(JobStatus.RUNNING)) is None
    assert cancel_refusal(_view(JobStatus.CANCELLED)) is None  # again: harmless, as for a task
    for ended in (JobStatus.SUCCEEDED, JobStatus.FAILED):
        refusal = cancel_refusal(_view(ended))
        assert refusal is not None
        assert ended.value in refusal
    refusal = cancel_refusal(_view(JobStatus.RUNNING, finishing=True))
    assert refusal is not None
    assert "post" in refusal


def test_the_execution_arn_is_the_machines_with_the_job_as_name() -> None:
    machine = "arn:aws:states:eu-west-1:123456789012:stateMachine:Sundial-Jobs"
    assert execution_arn(machine, "job-1") == "arn:aws:states:eu-west-1:123456789012:execution:Sundial-Jobs:job-1"
    with pytest.raises(ValueError, match="not a state machine ARN"):
        execution_arn("arn:aws:lambda:eu-west-1:123456789012:function:f", "job-1")


def _job(notify: int | None = None) -> tuple[JobSteps, InMemoryJobStore, ScriptedProcessor, InMemoryBlobs]:
    store, blobs, processor = InMemoryJobStore(), InMemoryBlobs(), ScriptedProcessor()
    store.add(JobSpec("job-1", Sharding(1, 1, 100), notify))
    blobs.put(levels_key("job-1"), [[1, 2, 3, 4]])
    return JobSteps(store, blobs, processor), store, processor, blobs


def test_after_the_cancel_no_shard_calls_the_processor_nor_counts_and_post_is_not_called() -> None:
    steps, store, processor, blobs = _job()
    steps.pre("job-1")
    steps.shard("job-1", 0, 0, 4)
    assert store.cancel("default", "job-1")
    for shard in (1, 2, 3):
        assert steps.shard("job-1", 0, shard, 4)["skipped"] is True
    assert steps.post("job-1")["status"] == "cancelled"
    assert processor.phases() == ["pre", "shard"]
    job = store.jobs["job-1"]
    assert (job.status, len(job.done), job.total) == (JobStatus.CANCELLED, 1, 4)
    assert result_key("job-1", 0, 1) not in blobs.objects


def test_a_shard_running_when_the_cancel_came_counts_but_notifies_nobody_and_fail_keeps_cancelled() -> None:
    steps, store, processor, _ = _job(notify=25)
    steps.pre("job-1")
    running = JobSteps(store, steps.blobs, processor, store.spec("job-1"))  # read the job before the cancel
    assert store.cancel("default", "job-1")
    running.shard("job-1", 0, 0, 4)  # its processor call was under way: its work is kept
    steps.fail("job-1", "States.TaskFailed")
    job = store.jobs["job-1"]
    assert (job.status, len(job.done), job.error) == (JobStatus.CANCELLED, 1, None)
    assert processor.phases() == ["pre", "shard"]  # no notify at 25 %


def test_a_job_cancelled_before_pre_calls_nothing_at_all() -> None:
    steps, store, processor, _ = _job()
    assert store.cancel("default", "job-1")
    assert steps.pre("job-1") == {"job_id": "job-1", "levels": [], "total_shards": 0}
    steps.post("job-1")
    assert processor.calls == []
    assert store.jobs["job-1"].status is JobStatus.CANCELLED


def test_once_post_has_begun_the_job_cannot_be_cancelled_and_succeeds() -> None:
    steps, store, processor, _ = _job()
    planned = steps.pre("job-1")
    for shard in planned["levels"][0]["shards"]:
        steps.shard("job-1", 0, shard, 4)
    assert store.claim_post("job-1")
    assert not store.cancel("default", "job-1")
    steps.post("job-1")
    assert store.jobs["job-1"].status is JobStatus.SUCCEEDED
    assert processor.phases()[-1] == "post"
