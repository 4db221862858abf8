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
from shared.domain.jobs import ProcessorFailed, ProcessorRetryable
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

    def headers(self) -> dict[str, str]:
        return {
            "Content-Type": CONTENT_TYPE,
            IDEMPOTENCY_KEY: self.step(),
            JOB_ID_HEADER: self.job_id,
            PHASE_HEADER: str(self.content["phase"]),
        }


class HttpProcessor:
    """Implements shared.services.ports.Processor for an ``http`` processor target."""

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
            raise ProcessorRetryable(f"{job_id}: the signing secret could not be read: {exc.message}") from exc
        call = PhaseCall(job_id, body, signer)
        outcome = self.client.call(self.target, call)
        if not outcome.ok:
            error = f"{call.step()}: {outcome.error}"
            raise ProcessorRetryable(error) if outcome.retryable else ProcessorFailed(error)
        if not outcome.body.strip():
            return {}
        try:
            answer = json.loads(outcome.body)
        except ValueError as exc:
            raise ProcessorFailed(
                f"{call.step()}: the answer is not JSON (or longer than {MAX_ANSWER_BYTES} bytes)"
            ) from exc
        if not isinstance(answer, dict):
            raise ProcessorFailed(f"{call.step()}: the answer must be a JSON object")
        return answer


class LambdaProcessor:
    """Implements shared.services.ports.Processor for a ``lambda`` processor target: a synchronous
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
            _raise(call, classify_client_error(exc, "lambda Invoke"))
        except BotoCoreError as exc:
            _raise(call, classify_botocore_error(exc, "lambda Invoke"))
        payload = answer["Payload"].read()
        if answer.get("FunctionError"):
            raise ProcessorRetryable(f"{call.step()}: the function failed: {payload[:300]!r}")
        try:
            result = json.loads(payload) if payload.strip() else {}
        except ValueError as exc:
            raise ProcessorFailed(f"{call.step()}: the function did not return JSON") from exc
        if not isinstance(result, dict):
            raise ProcessorFailed(f"{call.step()}: the function must return a JSON object")
        return result


def _raise(call: PhaseCall, outcome: Outcome) -> NoReturn:
    error = f"{call.step()}: {outcome.error}"
    raise ProcessorRetryable(error) if outcome.retryable else ProcessorFailed(error)


def http_client(*, allow_loopback: bool, allow_private: bool) -> HttpDelivery:
    return HttpDelivery(allow_loopback=allow_loopback, allow_private=allow_private, max_response_bytes=MAX_ANSWER_BYTES)
