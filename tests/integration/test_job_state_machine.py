"""The jobs state machine as CDK synthesizes it (infra/jobs.py), executed by moto's Step Functions
interpreter, with a fake job step function answering its Lambda tasks in-process.

What the definition must guarantee (docs/jobs.md, section 2): pre once, then the levels strictly in
order, a level's shards in parallel (at most ``shard_concurrency`` at a time), post once after every
shard; ``ProcessorRetryable`` is retried by the Retry block, any error that stays ends in the
``fail`` step and a FAILED execution, without post.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support.stepfunctions import StateMachineRunner, definition_from_stack, state_machine

pytestmark = pytest.mark.integration

SHARD_CONCURRENCY = 10
RETRY_INTERVAL_S = 1
RETRY_MAX_ATTEMPTS = 2
RETRY_BACKOFF_RATE = 1


class ProcessorRetryable(Exception):
    """Named as the job step's error: Step Functions matches the name, not the class."""


class ProcessorFailed(Exception):
    pass


RETRYABLE_ERROR = ProcessorRetryable.__name__
"""The error name the definition retries (infra/jobs.py's, checked where it is synthesized)."""


@dataclass
class Call:
    step: str
    event: dict[str, Any]
    start: float
    end: float = 0.0

    @property
    def key(self) -> tuple[int, int]:
        return self.event["level"], self.event["shard"]


@dataclass
class FakeSteps:
    """The job step function: pre answers ``shard_counts``' levels, a shard sleeps ``shard_s``,
    post answers the job's result. ``failures`` maps a step (``"pre"``, ``(level, shard)``) to the
    errors its successive attempts raise."""

    shard_counts: list[int]
    shard_s: float = 0.0
    failures: dict[Any, list[Exception]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    meet: bool = False
    """Each shard waits for its level's others to start (:meth:`_meet_level`)."""
    met: threading.Condition = field(default_factory=threading.Condition)
    started: dict[int, int] = field(default_factory=dict)
    """Shard calls started per level (retries included)."""
    alone: set[int] = field(default_factory=set)
    """Levels whose shards did not all run at once."""

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        step = event["step"]
        call = Call(step, event, time.monotonic())
        target = (event["level"], event["shard"]) if step == "shard" else step
        with self.lock:
            self.calls.append(call)
            pending = self.failures.get(target)
            error = pending.pop(0) if pending else None
            self.in_flight += step == "shard"
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if step == "shard" and self.meet:
                self._meet_level(event)
            if step == "shard" and self.shard_s:
                time.sleep(self.shard_s)  # kept: a slow shard is what these tests are about
            if error is not None:
                raise error
            return self._answer(event)
        finally:
            call.end = time.monotonic()
            with self.lock:
                self.in_flight -= step == "shard"

    def _meet_level(self, event: dict[str, Any]) -> None:
        """A shard waits (up to 10 s) until every shard of its level has started: run side by
        side they all meet at once; run one after another, the first waits out the bound, which
        ``alone`` keeps (an event, not a reading of how long the shards took)."""
        level, count = event["level"], event["shard_count"]
        with self.met:
            self.started[level] = self.started.get(level, 0) + 1
            self.met.notify_all()
            if not self.met.wait_for(lambda: self.started[level] >= count, timeout=10):
                self.alone.add(level)

    def _answer(self, event: dict[str, Any]) -> dict[str, Any]:
        job_id, step = event["job_id"], event["step"]
        if step == "pre":
            levels = [{"level": i, "shard_count": n, "shards": list(range(n))} for i, n in enumerate(self.shard_counts)]
            return {"job_id": job_id, "levels": levels, "total_shards": sum(self.shard_counts)}
        if step == "shard":
            return {"job_id": job_id, "level": event["level"], "shard": event["shard"]}
        if step == "post":
            return {"job_id": job_id, "status": "succeeded"}
        return {"job_id": job_id, "status": "failed", "error": event["error"]}

    def of(self, step: str) -> list[Call]:
        return [call for call in self.calls if call.step == step]

    def shards(self, level: int | None = None) -> list[Call]:
        return [call for call in self.of("shard") if level is None or call.event["level"] == level]


@pytest.fixture(scope="module")
def definition(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The construct in a throwaway stack, with a real Lambda function (its ARN is a token). The
    CDK is imported here: a worker that collects this file but runs none of it never starts it."""
    from aws_cdk import App, Duration, Stack
    from aws_cdk import aws_lambda as lambda_

    from infra import jobs
    from infra.settings import DeploymentSettings

    assert jobs.RETRYABLE_ERROR == RETRYABLE_ERROR
    stack = Stack(App(outdir=str(tmp_path_factory.mktemp("cdk.out"))), "JobsProbe")  # not a cdk.out* of its own in /tmp
    function = lambda_.Function(
        stack,
        "JobFunction",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="functions.jobs.handler.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
    )
    jobs.Jobs(
        stack,
        "Jobs",
        settings=DeploymentSettings(),
        function=function,
        shard_concurrency=SHARD_CONCURRENCY,
        retry_interval=Duration.seconds(RETRY_INTERVAL_S),
        retry_max_attempts=RETRY_MAX_ATTEMPTS,
        retry_backoff_rate=RETRY_BACKOFF_RATE,
    )
    return definition_from_stack(stack)


@pytest.fixture
def run(definition: str) -> Iterator[Callable[..., tuple[Any, FakeSteps, StateMachineRunner]]]:
    """Run the definition once with the given steps; the mocked account lives until the test ends."""
    with ExitStack() as stack:

        def go(steps: FakeSteps, timeout: float = 30) -> tuple[Any, FakeSteps, StateMachineRunner]:
            runner = stack.enter_context(state_machine(definition, steps))
            return runner.run({"job_id": "J1"}, timeout=timeout), steps, runner

        yield go


def test_levels_run_in_order_their_shards_in_parallel_and_post_after_all(run) -> None:
    finished, steps, _ = run(FakeSteps([3, 2, 1], shard_s=0.3, meet=True))

    assert finished.status == "SUCCEEDED", (finished.error, finished.cause)
    assert finished.output == {"job_id": "J1", "status": "succeeded"}
    assert [call.event for call in steps.of("pre")] == [{"step": "pre", "job_id": "J1", "retry_count": 0}]
    assert sorted(call.key for call in steps.shards()) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0)]
    assert {call.event["shard_count"] for call in steps.shards(0)} == {3}
    assert {call.event["shard_count"] for call in steps.shards(1)} == {2}
    for level in (0, 1):  # every shard of a level ends before any shard of the next starts
        assert max(c.end for c in steps.shards(level)) <= min(c.start for c in steps.shards(level + 1))
    assert steps.alone == set()  # each level's shards met: they ran at the same time
    (post,) = steps.of("post")
    assert post.event == {"step": "post", "job_id": "J1", "retry_count": 0}
    assert post.start >= max(c.end for c in steps.shards())
    assert steps.of("fail") == []


def test_a_retryable_error_is_retried_by_the_retry_block_and_the_job_succeeds(run) -> None:
    steps = FakeSteps([2, 1], failures={(0, 1): [ProcessorRetryable("503 from the processor")]})
    finished, steps, runner = run(steps)

    assert finished.status == "SUCCEEDED", (finished.error, finished.cause)
    first, second = (call for call in steps.shards(0) if call.event["shard"] == 1)
    assert second.start - first.end >= RETRY_INTERVAL_S * 0.9  # the Retry block's interval, not a rerun
    assert (first.event["retry_count"], second.event["retry_count"]) == (0, 1)  # the step tells its attempt
    assert len(steps.shards()) == 4  # three shards, one of them twice
    assert len(steps.of("post")) == 1
    assert steps.of("fail") == []
    failed = [e for e in runner.history(finished.arn) if e["type"] == "TaskFailed"]
    assert [e["taskFailedEventDetails"]["error"] for e in failed] == [RETRYABLE_ERROR]


def test_an_error_of_another_name_is_not_retried(run) -> None:
    steps = FakeSteps([2], failures={(0, 0): [ProcessorFailed("400 from the processor")]})
    finished, steps, _ = run(steps)

    assert finished.status == "FAILED"
    assert finished.error == "ProcessorFailed"
    assert len([call for call in steps.shards() if call.key == (0, 0)]) == 1
    (fail,) = steps.of("fail")
    assert fail.event["error"] == "ProcessorFailed"
    assert "400 from the processor" in fail.event["cause"]
    assert steps.of("post") == []


def test_a_shard_failing_for_good_fails_the_job_through_the_fail_step_without_post(run) -> None:
    attempts = 1 + RETRY_MAX_ATTEMPTS
    failures: dict[Any, list[Exception]] = {(0, 1): [ProcessorRetryable("still 503")] * attempts}
    finished, steps, _ = run(FakeSteps([2, 3], failures=failures))

    assert finished.status == "FAILED"
    assert finished.error == RETRYABLE_ERROR
    assert "still 503" in (finished.cause or "")
    assert len([call for call in steps.shards() if call.key == (0, 1)]) == attempts
    assert steps.shards(1) == []  # the next level never starts
    assert steps.of("post") == []
    (fail,) = steps.of("fail")
    assert fail.event["step"] == "fail"
    assert fail.event["job_id"] == "J1"
    assert fail.event["error"] == RETRYABLE_ERROR
    assert "still 503" in fail.event["cause"]


def test_pre_failing_fails_the_job_before_any_shard(run) -> None:
    finished, steps, _ = run(FakeSteps([2], failures={"pre": [ProcessorFailed("pre answered garbage")]}))

    assert finished.status == "FAILED"
    assert steps.shards() == []
    assert steps.of("post") == []
    assert [call.event["error"] for call in steps.of("fail")] == ["ProcessorFailed"]


def test_post_failing_fails_the_job(run) -> None:
    finished, steps, _ = run(FakeSteps([1], failures={"post": [ProcessorFailed("post refused")]}))

    assert finished.status == "FAILED"
    assert len(steps.shards()) == 1
    assert [call.event["error"] for call in steps.of("fail")] == ["ProcessorFailed"]


def test_a_job_without_shards_goes_from_pre_to_post(run) -> None:
    finished, steps, _ = run(FakeSteps([0, 0]))

    assert finished.status == "SUCCEEDED", (finished.error, finished.cause)
    assert steps.shards() == []
    assert len(steps.of("post")) == 1


def test_a_level_of_1000_shards_completes_each_shard_once_at_most_shard_concurrency_at_a_time(run) -> None:
    finished, steps, _ = run(FakeSteps([1000, 1], shard_s=0.005), timeout=60)

    assert finished.status == "SUCCEEDED", (finished.error, finished.cause)
    assert sorted(call.key for call in steps.shards()) == [(0, s) for s in range(1000)] + [(1, 0)]
    assert 1 < steps.most_in_flight <= SHARD_CONCURRENCY
    assert len(steps.of("post")) == 1
    print(f"1,000 shards: {finished.seconds:.1f} s")
