"""A job's steps in the order the state machine runs them (shared/services/jobs.py), on the
in-memory ports (tests/support/fakes.py). The state machine itself (order of levels, parallel shards, retries) is tested
on moto's Step Functions in tests/integration."""

from __future__ import annotations

from typing import Any

import pytest

from shared.delivery.processor import PhaseCall
from shared.domain.errors import ValidationFailed
from shared.domain.jobs import JobSpec, JobStep, ProcessorError, ProcessorFailed, ProcessorRetryable, StepFailure
from shared.domain.sharding import Sharding
from shared.services.jobs import JobSteps, levels_key
from tests.support.fakes import InMemoryBlobs, InMemoryJobStore

pytestmark = pytest.mark.unit


class ScriptedProcessor:
    """Answers like a user's processor: pre keeps the data (or returns ``pre_data``), a shard
    answers the sum of its items, post the list of results."""

    def __init__(self, pre_data: Any = None) -> None:
        self.pre_data = pre_data
        self.calls: list[dict[str, Any]] = []

    def call(self, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(body)
        if body["phase"] == "pre":
            return {} if self.pre_data is None else {"data": self.pre_data}
        if body["phase"] == "shard":
            return {"result": sum(body["items"])}
        if body["phase"] == "post":
            return {"result": {"total": sum(body["results"]), "shards": len(body["results"])}}
        return {}

    def phases(self) -> list[str]:
        return [c["phase"] for c in self.calls]


def _steps(data: Any, sharding: Sharding, notify: int | None = None, pre_data: Any = None) -> tuple[Any, ...]:
    store, blobs, processor = InMemoryJobStore(), InMemoryBlobs(), ScriptedProcessor(pre_data)
    store.add(JobSpec("job-1", sharding, notify))
    blobs.put(levels_key("job-1"), data)
    return JobSteps(store, blobs, processor), store, processor


def _run(steps: JobSteps) -> dict[str, Any]:
    planned = steps.pre("job-1")
    for level in planned["levels"]:
        for shard in level["shards"]:
            steps.shard("job-1", level["level"], shard, level["shard_count"])
    steps.post("job-1")
    return planned


def test_a_job_runs_pre_every_shard_with_its_items_and_post_with_every_result_in_order() -> None:
    steps, store, processor = _steps([[1, 2, 3, 4, 5], [10, 20, 30]], Sharding(2, 2, 20))
    planned = _run(steps)
    assert [level["shard_count"] for level in planned["levels"]] == [3, 2]
    shards = [c for c in processor.calls if c["phase"] == "shard"]
    assert [(c["level"], c["shard"], c["shard_count"], c["items"]) for c in shards] == [
        (0, 0, 3, [1, 2]),
        (0, 1, 3, [3, 4]),
        (0, 2, 3, [5]),
        (1, 0, 2, [10, 20]),
        (1, 1, 2, [30]),
    ]
    post = processor.calls[-1]
    assert post == {"job_id": "job-1", "phase": "post", "results": [3, 7, 5, 30, 30]}
    job = store.jobs["job-1"]
    assert (job.status, job.result) == ("succeeded", {"total": 75, "shards": 5})


def test_pre_may_replace_the_data() -> None:
    steps, store, processor = _steps([["ref"]], Sharding(1, 100, 4), pre_data=[list(range(1, 101)), [7]])
    planned = _run(steps)
    assert [level["shard_count"] for level in planned["levels"]] == [4, 1]
    assert store.jobs["job-1"].result == {"total": 5057, "shards": 5}
    assert processor.calls[0] == {"job_id": "job-1", "phase": "pre", "data": [["ref"]]}


def test_notify_is_called_once_per_crossed_threshold() -> None:
    steps, _, processor = _steps([list(range(8))], Sharding(1, 1, 8), notify=25)
    _run(steps)
    notified = [c["progress"] for c in processor.calls if c["phase"] == "notify"]
    assert [p["percent"] for p in notified] == [25, 50, 75, 100]
    assert notified[0] == {"done_shards": 2, "total_shards": 8, "percent": 25, "threshold": 25}
    assert processor.phases()[-1] == "post"


def test_every_threshold_is_sent_whatever_order_parallel_shards_end_in() -> None:
    """Shards of a level run in parallel: the one whose end counted 2 of 4 (50 %) may reach its
    notify before the one that counted 1 (25 %). Each threshold is sent once all the same (it was
    a high-water mark: 25 came after 50 and was dropped)."""
    steps, store, processor = _steps([list(range(4))], Sharding(1, 1, 4), notify=25)
    steps.pre("job-1")
    steps._notify("job-1", 2, 4)  # the second shard's end, notified first
    steps._notify("job-1", 1, 4)
    steps._notify("job-1", 2, 4)  # a retried step: nothing again
    assert [c["progress"]["threshold"] for c in processor.calls if c["phase"] == "notify"] == [50, 25]
    assert store.jobs["job-1"].notified == {25, 50}


@pytest.mark.parametrize(
    ("total", "step", "expected"),
    [
        (4, 25, [[25], [50], [75], [100]]),
        (3, 10, [[10, 20, 30], [40, 50, 60], [70, 80, 90, 100]]),
        (8, 25, [[], [25], [], [50], [], [75], [], [100]]),
        (200, 50, [[] for _ in range(99)] + [[50]] + [[] for _ in range(99)] + [[100]]),
        (3, 30, [[30], [60], [90]]),
    ],
)
def test_each_multiple_is_crossed_by_exactly_one_shards_end(total: int, step: int, expected: list[list[int]]) -> None:
    from shared.domain.jobs import crossed_thresholds

    crossed = [crossed_thresholds(done, total, step) for done in range(1, total + 1)]
    assert crossed == expected
    assert sorted(t for ts in crossed for t in ts) == list(range(step, 101, step))


def test_a_retried_shard_is_counted_once() -> None:
    steps, store, _ = _steps([[1, 2]], Sharding(1, 1, 2), notify=50)
    steps.pre("job-1")
    steps.shard("job-1", 0, 0, 2)
    steps.shard("job-1", 0, 0, 2)  # Step Functions retried it after the result was written
    assert len(store.jobs["job-1"].done) == 1
    assert store.jobs["job-1"].notified == {50}


def test_an_answer_outside_the_contract_fails_the_step() -> None:
    steps, _, _ = _steps([[1]], Sharding(), pre_data={"not": "levels"})
    with pytest.raises(ProcessorFailed, match="pre must answer"):
        steps.pre("job-1")


def test_too_many_items_for_the_shards_fail_at_pre_naming_the_field() -> None:
    steps, _, _ = _steps([list(range(300))], Sharding(1, 10, 5))
    with pytest.raises(ValidationFailed) as raised:
        steps.pre("job-1")
    assert raised.value.details[0].field == "sharding.max_shards"


def test_fail_records_an_error_no_step_reported_in_the_step_it_came_in() -> None:
    """An error that no processor call reported (the job function's own, a timeout): its step is
    the one the job's progress says: pre before the shards are planned, then the first level with
    shards left, then post."""
    steps, store, _ = _steps([[1]], Sharding())
    steps.fail("job-1", "Sandbox.Timedout", "Task timed out after 60.00 seconds")
    job = store.jobs["job-1"]
    assert (job.status, job.error) == (
        "failed",
        "the pre step failed: Sandbox.Timedout: Task timed out after 60.00 seconds",
    )
    assert job.failure == StepFailure(JobStep.PRE, "Sandbox.Timedout: Task timed out after 60.00 seconds")

    steps, store, _ = _steps([[1, 2], [3]], Sharding(1, 1, 10))
    steps.pre("job-1")
    steps.shard("job-1", 0, 0, 2)
    steps.shard("job-1", 0, 1, 2)
    steps.fail("job-1", "Lambda.Unknown")
    assert store.jobs["job-1"].error == "level 1 failed: Lambda.Unknown"
    assert store.jobs["job-1"].failure == StepFailure(JobStep.SHARD, "Lambda.Unknown", level=1)


class Failing(ScriptedProcessor):
    """Fails the calls of ``phase`` (a shard: of ``shard`` only) as the HTTP processor would."""

    def __init__(self, phase: str, error: type[ProcessorError], status: int, shard: int | None = None) -> None:
        super().__init__()
        self.phase, self.error, self.status, self.shard = phase, error, status, shard

    def call(self, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        if body["phase"] == self.phase and self.shard in (None, body.get("shard")):
            self.calls.append(body)
            call = PhaseCall(job_id, body)
            raise self.error(
                call.failure(
                    f"the processor answered HTTP {self.status}", status=self.status, answer=b'{"error": "no"}'
                )
            )
        return super().call(job_id, body)


def _failing(processor: ScriptedProcessor, data: Any, notify: int | None = None) -> tuple[JobSteps, InMemoryJobStore]:
    store, blobs = InMemoryJobStore(), InMemoryBlobs()
    store.add(JobSpec("job-1", Sharding(1, 1, 10), notify))
    blobs.put(levels_key("job-1"), data)
    return JobSteps(store, blobs, processor), store


def test_a_shard_failing_for_good_is_recorded_with_its_step_attempt_and_answer() -> None:
    """What the fail step gets is the failed step's own report (the Lambda error's message, handed
    over by Step Functions as the cause): the shard, its level, the attempt, the status and the
    start of the answer; the job's error says it in words."""
    steps, store = _failing(Failing("shard", ProcessorRetryable, 503, shard=1), [[1, 2, 3]])
    steps.pre("job-1")
    steps.shard("job-1", 0, 0, 3)
    with pytest.raises(ProcessorRetryable) as raised:
        steps.shard("job-1", 0, 1, 3, attempt=3)
    steps.fail("job-1", "ProcessorRetryable", str(raised.value))
    job = store.jobs["job-1"]
    assert job.error == 'shard 1 of level 0 failed on attempt 3 of 3: the processor answered HTTP 503: {"error": "no"}'
    assert job.failure == StepFailure(
        JobStep.SHARD, "the processor answered HTTP 503", level=0, shard=1, attempt=3, status=503,
        answer='{"error": "no"}', retryable=True,
    )  # fmt: skip


def test_a_refusal_is_not_retried_and_says_so_without_a_count_of_attempts() -> None:
    steps, store = _failing(Failing("post", ProcessorFailed, 400), [[1]])
    _run_until_post(steps)
    with pytest.raises(ProcessorFailed) as raised:
        steps.post("job-1")
    steps.fail("job-1", "ProcessorFailed", str(raised.value))
    assert (
        store.jobs["job-1"].error
        == 'the post step failed on attempt 1: the processor answered HTTP 400: {"error": "no"}'
    )


def test_pre_answering_outside_the_contract_says_what_it_answered() -> None:
    steps, store = _failing(ScriptedProcessor(pre_data={"not": "levels"}), [[1]])
    with pytest.raises(ProcessorFailed) as raised:
        steps.pre("job-1", attempt=2)
    steps.fail("job-1", "ProcessorFailed", str(raised.value))
    failure = store.jobs["job-1"].failure
    assert failure is not None
    assert (failure.step, failure.attempt, failure.answer) == (JobStep.PRE, 2, '{"data":{"not":"levels"}}')


def test_a_failed_notify_is_kept_and_the_job_goes_on() -> None:
    steps, store = _failing(Failing("notify", ProcessorRetryable, 502), [[1, 2]], notify=50)
    _run(steps)
    job = store.jobs["job-1"]
    assert job.status == "succeeded"
    assert job.notify_failure is not None
    assert job.notify_failure.sentence() == (
        'the notify at 100 % failed on attempt 1: the processor answered HTTP 502: {"error": "no"}'
    )


def _run_until_post(steps: JobSteps) -> None:
    planned = steps.pre("job-1")
    for level in planned["levels"]:
        for shard in level["shards"]:
            steps.shard("job-1", level["level"], shard, level["shard_count"])


def test_a_result_larger_than_the_jobs_item_should_hold_goes_to_the_bucket() -> None:
    """Up to 64 KiB as JSON a result is kept on the job's item; beyond, in the bucket, the item
    naming it (a DynamoDB item holds 400 KB in all)."""
    steps, store, processor = _steps([[1]], Sharding())
    small = {"rows": ["x" * 100] * 600}  # 61 KB
    processor.call = lambda job_id, body: {"result": small if body["phase"] == "post" else 1}
    _run(steps)
    job = store.jobs["job-1"]
    assert (job.result, job.result_ref) == (small, None)

    steps, store, processor = _steps([[1]], Sharding())
    big = {"rows": ["x" * 100] * 700}  # 71 KB
    processor.call = lambda job_id, body: {"result": big if body["phase"] == "post" else 1}
    _run(steps)
    job = store.jobs["job-1"]
    assert (job.status, job.result, job.result_ref) == ("succeeded", None, "jobs/job-1/result.json")
    assert steps.blobs.get("jobs/job-1/result.json") == big
