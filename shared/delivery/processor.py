"""A job's processor, called over HTTP through the same safe client as task callbacks
(docs/jobs.md, section 2): one POST per phase step, a JSON body, a JSON answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from botocore.exceptions import BotoCoreError, ClientError

from shared.delivery.aws import classify_botocore_error, classify_client_error
from shared.delivery.envelope import CONTENT_TYPE, IDEMPOTENCY_KEY
from shared.delivery.http import HttpDelivery
from shared.delivery.outcome import Outcome
from shared.domain.codec import compact_json
from shared.domain.errors import StorageUnavailable
from shared.domain.jobs import (
    REPORTED_ANSWER_BYTES,
    JobStep,
    ProcessorFailed,
    ProcessorRetryable,
    ReportedError,
    StepFailure,
    excerpt,
)
from shared.domain.signing import Signer
from shared.domain.tasks import HttpTarget, LambdaTarget

JOB_ID_HEADER = "Sundial-Job-Id"
PHASE_HEADER = "Sundial-Job-Phase"
MAX_ANSWER_BYTES = 6 * 1024 * 1024
"""A processor's answer may carry a level's items (pre) or a result: up to Lambda's own 6 MB."""


@dataclass(frozen=True)
class PhaseCall:
    """One phase step's request; the idempotency key is the same on every retry of the step."""

    job_id: str
    content: dict[str, Any]
    signer: Signer | None = field(default=None, compare=False, repr=False)
    """The job's tenant's signer: an HTTP processor gets every call signed."""

    def step(self) -> str:
        parts = [self.job_id, str(self.content["phase"])]
        if self.content["phase"] == "shard":
            parts += [str(self.content["level"]), str(self.content["shard"])]
        if self.content["phase"] == "notify":  # one call per threshold: its key names the threshold
            progress = self.content["progress"]
            parts.append(str(progress.get("threshold", progress["percent"])))
        return ":".join(parts)

    def body(self) -> bytes:
        return compact_json(self.content).encode()

    def failure(
        self,
        reason: str,
        *,
        status: int | None = None,
        answer: bytes | str | None = None,
        error: ReportedError | None = None,
    ) -> StepFailure:
        """This call's step failed: which one, how, the start of what the processor answered, and
        the error it said it raised (``error``), if it said."""
        content = self.content
        progress = content["progress"] if isinstance(content.get("progress"), dict) else {}
        return StepFailure(
            step=JobStep(content["phase"]),
            reason=reason,
            level=content.get("level") if content["phase"] == "shard" else None,
            shard=content.get("shard") if content["phase"] == "shard" else None,
            status=status,
            answer=excerpt(answer),
            threshold=progress.get("threshold", progress.get("percent")) if content["phase"] == "notify" else None,
            error=error,
        )

    def failed(self, outcome: Outcome, *, invoking: bool = False) -> NoReturn:
        """Raise what the state machine retries (``ProcessorRetryable``) or not, for a failed call
        (``invoking``: Lambda's Invoke failed, whose status is AWS's, not the processor's)."""
        assert outcome.error is not None
        error = None
        if invoking:
            reason = f"the processor function could not be invoked: {outcome.error}"
        elif outcome.status is not None:
            reason = f"the processor answered {outcome.error}"
            error = ReportedError.of_answer(outcome.body)  # {"error": {"type", "message"}}: the kit's
        else:
            reason = f"the processor could not be called: {outcome.error}"
        failure = self.failure(reason, status=None if invoking else outcome.status, answer=outcome.body, error=error)
        raise ProcessorRetryable(failure) if outcome.retryable else ProcessorFailed(failure)

    def headers(self) -> dict[str, str]:
        return {
            "Content-Type": CONTENT_TYPE,
            IDEMPOTENCY_KEY: self.step(),
            JOB_ID_HEADER: self.job_id,
            PHASE_HEADER: str(self.content["phase"]),
        }


class HttpProcessor:
    """Implements shared.services.ports.jobs.Processor for an ``http`` processor target."""

    def __init__(
        self, target: HttpTarget, client: HttpDelivery, signer: Callable[[], Signer | None] | None = None
    ) -> None:
        """``signer`` gives the tenant's signer for each call (its secrets may rotate meanwhile)."""
        self.target = target
        self.client = client
        self.signer = signer

    def call(self, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            signer = self.signer() if self.signer is not None else None
        except StorageUnavailable as exc:  # never an unsigned call: the step is retried
            reason = f"the signing secret could not be read: {exc.message}"
            raise ProcessorRetryable(PhaseCall(job_id, body).failure(reason)) from exc
        call = PhaseCall(job_id, body, signer)
        outcome = self.client.call(self.target, call)
        if not outcome.ok:
            call.failed(outcome)
        if not outcome.body.strip():
            return {}
        try:
            answer = json.loads(outcome.body)
        except ValueError as exc:
            reason = f"the processor's answer is not JSON (or longer than {MAX_ANSWER_BYTES} bytes)"
            raise ProcessorFailed(call.failure(reason, status=outcome.status, answer=outcome.body)) from exc
        if not isinstance(answer, dict):
            reason = "the processor's answer must be a JSON object"
            raise ProcessorFailed(call.failure(reason, status=outcome.status, answer=outcome.body))
        return answer


class LambdaProcessor:
    """Implements shared.services.ports.jobs.Processor for a ``lambda`` processor target: a synchronous
    invoke (RequestResponse) whose payload is the phase body and whose answer is the JSON the
    function returns. A function error (an exception in the processor) is retried like a 5xx."""

    def __init__(self, target: LambdaTarget, client: Any) -> None:
        self.target = target
        self.client = client

    def call(self, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        call = PhaseCall(job_id, body)
        try:
            answer = self.client.invoke(
                FunctionName=self.target.function_arn, InvocationType="RequestResponse", Payload=call.body()
            )
        except ClientError as exc:
            call.failed(classify_client_error(exc, "lambda Invoke"), invoking=True)
        except BotoCoreError as exc:
            call.failed(classify_botocore_error(exc, "lambda Invoke"), invoking=True)
        payload = answer["Payload"].read()
        if answer.get("FunctionError"):
            error, said = function_error(payload)
            raise ProcessorRetryable(call.failure("the processor function failed", answer=said, error=error))
        try:
            result = json.loads(payload) if payload.strip() else {}
        except ValueError as exc:
            raise ProcessorFailed(call.failure("the processor function did not return JSON", answer=payload)) from exc
        if not isinstance(result, dict):
            raise ProcessorFailed(call.failure("the processor function must return a JSON object", answer=payload))
        return result


def function_error(payload: bytes) -> tuple[ReportedError | None, bytes | str]:
    """The error a function's error payload reports, and what of the payload a failure keeps as the
    processor's answer. Lambda answers a function that raised with ``{"errorMessage": str(exc),
    "errorType": <its class's name>, "requestId", "stackTrace": [...]}`` ("AWS Lambda function
    errors in Python", https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html; AWS's
    recording in tests/data/aws/stepfunctions-lambda-error-caught.json, its ``Cause``). The
    receiver kit's processor raises with its failure's answer as the message: when
    ``errorMessage`` is such an answer (``{"error": {"type", "message"}}``), it is the processor's
    answer and the stack trace around it is left out; any other payload is kept as it is."""
    if len(payload) <= REPORTED_ANSWER_BYTES * 2:
        try:
            data = json.loads(payload)
        except (ValueError, RecursionError):
            data = None
        message = data.get("errorMessage") if isinstance(data, dict) else None
        error = ReportedError.of_answer(message) if isinstance(message, str) else None
        if error is not None:  # as bytes: a lone surrogate its JSON escaped is replaced, as in any answer
            return error, str(message).encode("utf-8", errors="replace")
    return None, payload


def http_client(*, allow_loopback: bool, allow_private: bool) -> HttpDelivery:
    return HttpDelivery(allow_loopback=allow_loopback, allow_private=allow_private, max_response_bytes=MAX_ANSWER_BYTES)
