"""A processor's failed answer that says what it raised (shared/domain/jobs.py, ``ReportedError``;
the receiver kit answers ``{"error": {"type", "message"}}`` for a method that raised): the job's
failure keeps it, its sentence says ``KeyError: 'user_id'``, and everything read from an answer,
or from a job item, is bounded and on one line. Any other answer keeps the failure as it was;
a ``lambda`` processor's function error is read through Lambda's error payload."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from shared.delivery.processor import LambdaProcessor, PhaseCall, function_error
from shared.domain.jobs import (
    REPORTED_ANSWER_BYTES,
    REPORTED_MESSAGE_CHARS,
    REPORTED_TYPE_CHARS,
    JobSpec,
    JobStep,
    ProcessorRetryable,
    ReportedError,
    StepFailure,
)
from shared.domain.sharding import Sharding
from shared.domain.tasks import LambdaTarget
from shared.services.jobs import JobSteps, levels_key
from tests.support.fakes import InMemoryBlobs, InMemoryJobStore
from tests.unit.test_job_steps import ScriptedProcessor

pytestmark = pytest.mark.unit

AWS_DATA = Path(__file__).resolve().parents[1] / "data" / "aws"

KIT_ANSWER = b'{"error":{"type":"KeyError","message":"\'user_id\'"},"key":"01JOB:shard:0:1"}'
SHARD = {"job_id": "01JOB", "phase": "shard", "level": 0, "shard": 1, "shard_count": 2, "items": [{}]}


def test_the_kits_answer_is_read_as_the_error_it_reports() -> None:
    error = ReportedError.of_answer(KIT_ANSWER)
    assert error == ReportedError("KeyError", "'user_id'")
    assert str(error) == "KeyError: 'user_id'"
    assert str(ReportedError("RuntimeError", "")) == "RuntimeError"
    assert ReportedError.of_answer(KIT_ANSWER.decode()) == error


@pytest.mark.parametrize(
    "body",
    [
        None,
        b"",
        b"the index is locked",
        b'{"error": "busy"}',
        b'{"error": "processing_failed", "key": "01JOB:pre"}',
        b'{"error": {"type": "KeyError"}}',
        b'{"error": {"type": 1, "message": "x"}}',
        b'{"error": {"type": "  ", "message": "x"}}',
        b'{"error": {"type": "KeyError", "message": ["x"]}}',
        b'[{"error": {"type": "KeyError", "message": "x"}}]',
        b'{"error": {"type": "KeyError", "message": "\xff"}}',
        b"[" * 100_000,
        b'{"error": {"type": "KeyError", "message": "x"}, "pad": "' + b"x" * REPORTED_ANSWER_BYTES + b'"}',
    ],
)
def test_any_other_answer_reports_nothing(body: bytes | None) -> None:
    assert ReportedError.of_answer(body) is None


def test_what_an_answer_reports_is_bounded_and_on_one_line() -> None:
    said = {"error": {"type": "Key\nError\x1b[31m" + "E" * 5000, "message": "line one\n\tline two " + "m" * 5000}}
    error = ReportedError.of_answer(json.dumps(said))
    assert error is not None
    assert len(error.type) == REPORTED_TYPE_CHARS == 100
    assert len(error.message) == REPORTED_MESSAGE_CHARS == 500
    assert error.type.startswith("Key Error [31mEEE")
    assert error.message.startswith("line one line two mmm")
    assert error.type.endswith("…")
    assert error.message.endswith("…")
    assert all(ch.isprintable() for ch in error.type + error.message)


def test_a_failure_with_a_reported_error_says_it_and_keeps_it() -> None:
    call = PhaseCall("01JOB", SHARD)
    failure = call.failure(
        "the processor answered HTTP 500",
        status=500,
        answer=KIT_ANSWER,
        error=ReportedError.of_answer(KIT_ANSWER),
    ).at(3)
    failure = ProcessorRetryable(failure).failure
    assert failure is not None
    assert failure.sentence() == (
        "shard 1 of level 0 failed on attempt 3 of 3: KeyError: 'user_id' (the processor answered HTTP 500)"
    )
    assert failure.to_dict()["error"] == {"type": "KeyError", "message": "'user_id'"}
    assert StepFailure.from_dict(failure.to_dict()) == failure
    assert StepFailure.from_message(failure.message()) == failure  # through Step Functions to the fail step
    # a failure without one is written as before: no error member
    assert "error" not in StepFailure(JobStep.PRE, "the processor answered HTTP 500").to_dict()


def test_a_job_item_written_otherwise_is_read_bounded_or_without_it() -> None:
    stored = {"step": "pre", "reason": "the processor answered HTTP 500"}
    odd = StepFailure.from_dict({**stored, "error": {"type": "T" * 10_000, "message": "m\n" * 10_000}})
    assert odd is not None
    assert odd.error is not None
    assert (len(odd.error.type), len(odd.error.message)) == (100, 500)
    for error in ("KeyError", 3, None, {"type": "", "message": ""}, {"message": "x"}):
        read = StepFailure.from_dict({**stored, "error": error})
        assert read is not None
        assert read.error is None


def test_the_fail_step_records_the_reported_error_as_the_jobs_error() -> None:
    class Raising(ScriptedProcessor):
        def call(self, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
            if body["phase"] == "pre":
                call = PhaseCall(job_id, body)
                error = ReportedError.of_answer(KIT_ANSWER)
                raise ProcessorRetryable(
                    call.failure("the processor answered HTTP 500", status=500, answer=KIT_ANSWER, error=error)
                )
            return super().call(job_id, body)

    store, blobs = InMemoryJobStore(), InMemoryBlobs()
    store.add(JobSpec("job-1", Sharding(), None))
    blobs.put(levels_key("job-1"), [[1]])
    steps = JobSteps(store, blobs, Raising())
    with pytest.raises(ProcessorRetryable) as raised:
        steps.pre("job-1", attempt=3)
    steps.fail("job-1", "ProcessorRetryable", str(raised.value))
    job = store.jobs["job-1"]
    assert job.error == "the pre step failed on attempt 3 of 3: KeyError: 'user_id' (the processor answered HTTP 500)"
    assert job.failure is not None
    assert job.failure.error == ReportedError("KeyError", "'user_id'")


class FakeLambda:
    """boto3's ``invoke`` answering a function error with ``payload``."""

    def __init__(self, payload: bytes) -> None:
        self.payload = payload

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        return {"StatusCode": 200, "FunctionError": "Unhandled", "Payload": io.BytesIO(self.payload)}


def lambda_error(message: str, kind: str = "JobCallFailed") -> bytes:
    """Lambda's error payload for a Python function that raised (as AWS's recording of one:
    tests/data/aws/stepfunctions-lambda-error-caught.json)."""
    trace = ['  File "/var/task/sundial_receiver/jobs.py", line 489, in invoke\n    raise JobCallFailed(answer)\n']
    return json.dumps(
        {"errorMessage": message, "errorType": kind, "requestId": "4f1c...", "stackTrace": trace}
    ).encode()


def test_a_lambda_processors_function_error_carrying_the_kits_answer_reports_its_error() -> None:
    function = LambdaTarget("arn:aws:lambda:us-east-1:123456789012:function:p")
    processor = LambdaProcessor(function, FakeLambda(lambda_error(KIT_ANSWER.decode())))
    with pytest.raises(ProcessorRetryable) as raised:
        processor.call("01JOB", SHARD)
    failure = raised.value.failure
    assert failure is not None
    assert failure.error == ReportedError("KeyError", "'user_id'")
    assert failure.sentence() == "shard 1 of level 0 failed: KeyError: 'user_id' (the processor function failed)"
    assert failure.answer == KIT_ANSWER.decode()  # the kit's answer, not the stack trace around it
    assert failure.retryable


def test_any_other_function_error_is_kept_as_before() -> None:
    recorded = json.loads((AWS_DATA / "stepfunctions-lambda-error-caught.json").read_text())
    payload = recorded["Cause"].encode()  # AWS's own: a function that raised Exception("Some exception was raised.")
    assert function_error(payload) == (None, payload)
    processor = LambdaProcessor(LambdaTarget("arn:aws:lambda:us-east-1:123456789012:function:p"), FakeLambda(payload))
    with pytest.raises(ProcessorRetryable) as raised:
        processor.call("01JOB", SHARD)
    failure = raised.value.failure
    assert failure is not None
    assert failure.error is None
    assert failure.sentence().startswith(
        'shard 1 of level 0 failed: the processor function failed: {"errorMessage":"Some exception was raised."'
    )
    # a lone surrogate (escaped in the payload's JSON) cannot be stored as UTF-8: it is replaced
    message = KIT_ANSWER.decode()[:-1] + ', "x": "\ud800"}'
    error, said = function_error(json.dumps({"errorMessage": message}).encode())
    assert error == ReportedError("KeyError", "'user_id'")
    assert isinstance(said, bytes)
    assert said.decode("utf-8").endswith('"x": "?"}')
    assert ReportedError.of_answer(rb'{"error": {"type": "Key\ud800Error", "message": "\udfff!"}}') == ReportedError(
        "Key Error", "!"
    )
    for odd in (b"not json", b"[1]", lambda_error("step 01JOB:shard:0:1 is running already"), b"{" * 100_000):
        assert function_error(odd) == (None, odd)
