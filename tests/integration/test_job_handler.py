"""The job function's steps as the state machine calls them, on moto (DynamoDB, S3) with a real
HTTP processor. The order the state machine imposes is tested in test_job_state_machine.py."""

from __future__ import annotations

import datetime
import io
import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from pydantic import ValidationError

from local.stepfunctions import status_change_event
from shared.adapters.executions import execution_arn
from shared.delivery.processor import LambdaProcessor
from shared.domain.jobs import NewJobRecord, ProcessorFailed, ProcessorRetryable
from shared.domain.sharding import Sharding
from shared.domain.tasks import LambdaTarget
from shared.services.jobs import levels_key
from shared.store.jobs import DynamoJobStore, S3Blobs
from tests.integration.conftest import use_settings
from tests.support.events import FakeLambdaContext
from tests.support.processor import running_processor

pytestmark = pytest.mark.integration

BUCKET = "sundial-jobs-test"


@pytest.fixture
def jobs(aws: None, monkeypatch: pytest.MonkeyPatch) -> DynamoJobStore:
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    use_settings(monkeypatch, jobs_bucket=BUCKET, allow_loopback_targets=True)
    return DynamoJobStore()


def test_the_steps_run_a_job_against_an_http_processor(jobs: DynamoJobStore, receiver: Any) -> None:
    from functions.jobs.handler import handler

    url = receiver.script("/process", 200)
    jobs.create(NewJobRecord("job-h", "default", None, {"http": {"url": url}}, Sharding(2, 2, 10), None, 1))
    S3Blobs(BUCKET).put(levels_key("job-h"), [[1, 2, 3], [4]])
    planned = handler({"step": "pre", "job_id": "job-h"}, FakeLambdaContext())
    assert [(lv["level"], lv["shard_count"], lv["shards"]) for lv in planned["levels"]] == [(0, 2, [0, 1]), (1, 1, [0])]
    for level in planned["levels"]:
        for shard in level["shards"]:
            event = {"step": "shard", "job_id": "job-h", "level": level["level"], "shard": shard}
            handler({**event, "shard_count": level["shard_count"]}, FakeLambdaContext())
    handler({"step": "post", "job_id": "job-h"}, FakeLambdaContext())
    calls = receiver.calls_to("/process")
    assert [c.body["phase"] for c in calls] == ["pre", "shard", "shard", "shard", "post"]
    assert [c.body["items"] for c in calls if c.body["phase"] == "shard"] == [[1, 2], [3], [4]]
    assert calls[-1].body["results"] == [None, None, None]  # the receiver answers {"ok": true}: no "result"
    item = jobs.item("job-h")
    assert item is not None
    assert (item.status, item.done_shards, item.total_shards) == ("succeeded", 3, 3)


def test_the_fail_step_records_the_lambda_error_message(jobs: DynamoJobStore) -> None:
    """An error that is not a processor's failure (here a bare message) is recorded in the step the
    job's item says it came in: pre, before any shard was planned."""
    from functions.jobs.handler import handler

    jobs.create(NewJobRecord("job-f", "default", "x", {"http": {"url": "http://127.0.0.1:9/"}}, Sharding(), None, 1))
    cause = json.dumps({"errorType": "ProcessorFailed", "errorMessage": "job job-f does not exist"})
    handler({"step": "fail", "job_id": "job-f", "error": "ProcessorFailed", "cause": cause}, FakeLambdaContext())
    item = jobs.item("job-f")
    assert item is not None
    assert (item.status, item.error) == ("failed", "the pre step failed: ProcessorFailed: job job-f does not exist")
    assert json.loads(item.failure or "")["step"] == "pre"


def test_the_fail_step_records_which_step_failed_on_which_attempt_with_what_answer(jobs: DynamoJobStore) -> None:
    """The failing step's own report crosses Step Functions as the Lambda error's message (its
    cause), and the fail step records it: the step, the attempt, the status, the answer's start."""
    from functions.jobs.handler import handler

    with running_processor(lambda body: (500, b"database is\n  down")) as (url, _):
        jobs.create(NewJobRecord("job-p", "default", None, {"http": {"url": url}}, Sharding(), None, 1))
        S3Blobs(BUCKET).put(levels_key("job-p"), [[1]])
        with pytest.raises(ProcessorRetryable) as raised:
            handler({"step": "pre", "job_id": "job-p", "retry_count": 2}, FakeLambdaContext())
    cause = json.dumps({"errorType": "ProcessorRetryable", "errorMessage": str(raised.value)})
    handler({"step": "fail", "job_id": "job-p", "error": "ProcessorRetryable", "cause": cause}, FakeLambdaContext())
    item = jobs.item("job-p")
    assert item is not None
    assert item.status == "failed"
    assert item.error == "the pre step failed on attempt 3 of 3: the processor answered HTTP 500: database is down"
    assert json.loads(item.failure or "") == {
        "step": "pre", "level": None, "shard": None, "attempt": 3, "status": 500, "answer": "database is down",
        "reason": "the processor answered HTTP 500", "retryable": True, "threshold": None,
    }  # fmt: skip
    assert item.pre_started_ms is not None
    assert item.pre_finished_ms is None


def test_a_step_the_state_machine_could_not_have_sent_fails_naming_its_field(jobs: DynamoJobStore) -> None:
    """The step's event is parsed before anything runs: the state fails (and its Catch fails the
    job through the fail step), saying which field was wrong."""
    from functions.jobs.handler import handler

    jobs.create(NewJobRecord("job-m", "default", None, {"http": {"url": "http://127.0.0.1:9/"}}, Sharding(), None, 1))
    with pytest.raises(ValidationError) as refused:
        handler({"step": "shard", "job_id": "job-m", "level": 0, "shard": "two", "shard_count": 2}, FakeLambdaContext())
    assert "shard" in str(refused.value)
    item = jobs.item("job-m")
    assert item is not None
    assert item.status == "running"


def _execution_ended(job_id: str, status: str) -> dict[str, Any]:
    """Step Functions' status change event on EventBridge's default bus, as the stack's rule
    delivers it (infra/job_runner.py) and as AWS records it (local/stepfunctions.py builds it:
    tests/integration/test_execution_status_change.py): the execution is named after its job."""
    machine = "arn:aws:states:us-east-1:123456789012:stateMachine:sundial-jobs"
    started = datetime.datetime(2026, 1, 5, 9, 0, tzinfo=datetime.UTC)
    failed = {"error": "Lambda.Unknown", "cause": "The fail step itself could not run"} if status == "FAILED" else {}
    described = {
        "executionArn": execution_arn(machine, job_id),
        "stateMachineArn": machine,
        "name": job_id,
        "status": status,
        "startDate": started,
        "stopDate": started + datetime.timedelta(minutes=5),
        "input": json.dumps({"job_id": job_id}),
        **failed,
    }
    return status_change_event(described)


def test_a_job_whose_execution_ended_without_it_is_recorded_failed(jobs: DynamoJobStore) -> None:
    """Its fail step failed too, or the execution timed out: the job does not stay running."""
    from functions.jobs.handler import handler

    jobs.create(NewJobRecord("job-e", "default", None, {"http": {"url": "http://127.0.0.1:9/"}}, Sharding(), None, 1))
    handler(_execution_ended("job-e", "TIMED_OUT"), FakeLambdaContext())
    item = jobs.item("job-e")
    assert item is not None
    assert item.status == "failed"
    assert item.error.startswith("the pre step failed: the job's execution ended timed out")


def test_an_execution_ended_after_its_job_ended_changes_nothing(jobs: DynamoJobStore) -> None:
    """A cancel stops the execution (ABORTED), and a job failed by its fail step ends FAILED: the job
    keeps what it was."""
    from functions.jobs.handler import handler

    jobs.create(NewJobRecord("job-c", "default", None, {"http": {"url": "http://127.0.0.1:9/"}}, Sharding(), None, 1))
    assert jobs.cancel("default", "job-c", 2) is not None
    handler(_execution_ended("job-c", "ABORTED"), FakeLambdaContext())
    item = jobs.item("job-c")
    assert item is not None
    assert item.status == "cancelled"


class FakeLambda:
    def __init__(self, answer: Any = None, error: Exception | None = None, function_error: bool = False) -> None:
        self.answer, self.error, self.function_error = answer, error, function_error
        self.payloads: list[Any] = []

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        self.payloads.append(json.loads(kwargs["Payload"]))
        assert kwargs["InvocationType"] == "RequestResponse"
        if self.error is not None:
            raise self.error
        answer: dict[str, Any] = {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(self.answer).encode())}
        if self.function_error:
            answer["FunctionError"] = "Unhandled"
        return answer


TARGET = LambdaTarget("arn:aws:lambda:us-east-1:123456789012:function:processor")
BODY = {"job_id": "j", "phase": "shard", "level": 0, "shard": 3, "items": [1]}


def test_a_lambda_processor_answers_with_what_the_function_returns() -> None:
    fake = FakeLambda({"result": 42})
    assert LambdaProcessor(TARGET, fake).call("j", BODY) == {"result": 42}
    assert fake.payloads == [BODY]


@pytest.mark.parametrize(
    ("fake", "error"),
    [
        (FakeLambda({"errorMessage": "boom"}, function_error=True), ProcessorRetryable),
        (FakeLambda(error=ClientError({"Error": {"Code": "TooManyRequestsException"}}, "Invoke")), ProcessorRetryable),
        (FakeLambda(error=ClientError({"Error": {"Code": "ResourceNotFoundException"}}, "Invoke")), ProcessorFailed),
        (FakeLambda([1, 2]), ProcessorFailed),
    ],
)
def test_lambda_processor_failures_are_told_apart(fake: FakeLambda, error: type[Exception]) -> None:
    with pytest.raises(error) as raised:
        LambdaProcessor(TARGET, fake).call("j", BODY)
    failure = raised.value.failure  # type: ignore[attr-defined]
    assert failure.where() == "shard 3 of level 0"
    assert failure.status is None  # a Lambda processor has no HTTP status of its own
