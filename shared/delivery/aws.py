"""AWS targets: Lambda (asynchronous invoke), SQS, SNS and EventBridge; and the targets that
start something, a Step Functions execution and an ECS task (shared/delivery/starts.py).

Each gets the envelope's JSON as its message, or, on an occurrence of a task made through the
EventBridge Scheduler API, the schedule's ``Input`` as that service sends it. Clients are made on
first use, one per service (and region), and then reused: never at import, so tests can start
moto first.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from time import monotonic  # wall: a call's duration
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from shared.delivery.envelope import ATTEMPT_HEADER, IDEMPOTENCY_KEY, TASK_ID_HEADER, Envelope
from shared.delivery.outcome import Outcome
from shared.delivery.starts import RETRYABLE_START_CODES, RUN_TASK, START_EXECUTION, run_task, start_execution
from shared.domain.arns import queue_url
from shared.domain.retry import is_retryable_status
from shared.domain.scheduler_api import delivered_input, input_template
from shared.domain.tasks import (
    EcsTarget,
    EventBridgeTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
    StepFunctionsTarget,
)
from shared.observability import logger

AwsTarget = LambdaTarget | SqsTarget | SnsTarget | EventBridgeTarget | StepFunctionsTarget | EcsTarget
ClientFactory = Callable[[str], Any]
"""Makes the boto3 client of a service (``"lambda"``, ``"sqs"``, ``"sns"``, ``"events"``,
``"stepfunctions"``, ``"ecs"``)."""

CLIENT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 2},  # Sundial's own retry policy does the rest
    connect_timeout=5,
    read_timeout=10,
    max_pool_connections=50,  # the trigger calls many targets at once
)

RETRYABLE_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "Throttled",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "SlowDown",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "InternalException",
        "ServiceException",
        "RequestTimeout",
        "RequestTimeoutException",
        "PriorRequestNotComplete",
        "ResourceConflictException",  # Lambda: the function is being updated
        "ResourceNotReadyException",
        "EC2ThrottledException",
        "ExpiredToken",
        "ExpiredTokenException",
        "RequestExpired",
    }
)
"""AWS error codes worth another attempt; any other 4xx answer (AccessDenied, ResourceNotFound,
validation errors, no such queue...) is final. Throttling codes and 408/429/5xx always retry."""

_SQS_HOST = re.compile(r"^(?:sqs\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?|([a-z0-9-]+)\.queue\.amazonaws\.com(?:\.cn)?)$")
_OPERATIONS = {
    LambdaTarget: "lambda Invoke",
    SqsTarget: "sqs SendMessage",
    SnsTarget: "sns Publish",
    EventBridgeTarget: "events PutEvents",
    StepFunctionsTarget: START_EXECUTION,
    EcsTarget: RUN_TASK,
}


def _arn_region(arn: str) -> str | None:
    parts = arn.split(":")
    return (parts[3] or None) if arn.startswith("arn:") and len(parts) > 4 else None


def _queue_region(queue_url: str) -> str | None:
    match = _SQS_HOST.match(queue_url.split("/")[2] if queue_url.count("/") >= 2 else "")
    return (match.group(1) or match.group(2)) if match else None


def region_of(target: AwsTarget) -> str | None:
    """The region a target lives in, when its ARN or URL says (else the function's own)."""
    if isinstance(target, LambdaTarget):
        return _arn_region(target.function_arn)
    if isinstance(target, SqsTarget):
        return _queue_region(target.queue_url)
    if isinstance(target, SnsTarget):
        return _arn_region(target.topic_arn)
    if isinstance(target, StepFunctionsTarget):
        return _arn_region(target.state_machine_arn)
    if isinstance(target, EcsTarget):
        return _arn_region(target.cluster_arn)
    return _arn_region(target.event_bus)


def message_attributes(envelope: Envelope) -> dict[str, dict[str, str]]:
    """The HTTP headers' counterparts on SQS and SNS messages."""
    return {
        IDEMPOTENCY_KEY: {"DataType": "String", "StringValue": envelope.run_id},
        TASK_ID_HEADER: {"DataType": "String", "StringValue": envelope.task_id},
        ATTEMPT_HEADER: {"DataType": "Number", "StringValue": str(envelope.attempt)},
    }


def _fifo(envelope: Envelope) -> dict[str, str]:
    """FIFO queues and topics: one message group per task (its occurrences stay in order), and a
    deduplication id per attempt (a send the SDK repeats is dropped, a later attempt is not)."""
    return {"MessageGroupId": envelope.task_id, "MessageDeduplicationId": f"{envelope.run_id}-{envelope.attempt}"}


def classify_client_error(exc: ClientError, operation: str) -> Outcome:
    response: dict[str, Any] = dict(exc.response or {})
    error = response.get("Error") or {}
    code = str(error.get("Code") or "Unknown")
    message = str(error.get("Message") or "")
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    text = f"{operation} failed: {code}" + (f": {message}" if message else "")
    retryable = (
        code in RETRYABLE_CODES or "Throttl" in code or (operation == START_EXECUTION and code in RETRYABLE_START_CODES)
    )
    if isinstance(status, int) and is_retryable_status(status):
        retryable = True
    return (Outcome.retry if retryable else Outcome.fail)(text, status=status if isinstance(status, int) else None)


def classify_botocore_error(exc: BotoCoreError, operation: str) -> Outcome:
    """Connections that failed or timed out are retried; a request the SDK refuses to send is not."""
    if isinstance(exc, BotoConnectionError | HTTPClientError):
        return Outcome.retry(f"{operation} failed: {exc}")
    return Outcome.fail(f"{operation} failed: {exc}")


def _default_client(service: str, region: str | None) -> Any:
    # A session per client: boto3's default session is not safe to share between threads.
    return boto3.session.Session().client(service, region_name=region, config=CLIENT_CONFIG)


class AwsDelivery:
    def __init__(self, clients: ClientFactory | None = None) -> None:
        """``clients`` makes a service's client (tests, the local runtime); by default boto3 makes
        one per service and region, the region taken from the target's ARN or queue URL."""
        self._factory = clients
        self._clients: dict[tuple[str, str | None], Any] = {}
        self._lock = threading.Lock()

    def client(self, service: str, region: str | None = None) -> Any:
        key = (service, region if self._factory is None else None)
        client = self._clients.get(key)
        if client is None:
            with self._lock:
                client = self._clients.get(key)
                if client is None:
                    client = self._factory(service) if self._factory else _default_client(service, region)
                    self._clients[key] = client
        return client

    def call(self, target: AwsTarget, envelope: Envelope) -> Outcome:
        """Send ``envelope`` to ``target``; never raises."""
        started = monotonic()  # wall: how long the call took
        operation = _OPERATIONS.get(type(target), type(target).__name__)
        try:
            outcome = self._send(target, envelope)
        except ClientError as exc:
            outcome = classify_client_error(exc, operation)
        except BotoCoreError as exc:
            outcome = classify_botocore_error(exc, operation)
        except Exception as exc:  # a bug here must not take the trigger's other targets down
            logger.exception("unexpected error calling an AWS target")
            outcome = Outcome.retry(f"{operation} failed: unexpected {type(exc).__name__}")
        return outcome.timed(int((monotonic() - started) * 1000))  # wall: how long the call took

    def send_to_queue(self, queue_arn: str, body: str, attributes: dict[str, dict[str, str]]) -> Outcome:
        """Send one message to the standard queue ``queue_arn``; never raises."""
        try:
            answer = self.client("sqs", _arn_region(queue_arn)).send_message(
                QueueUrl=queue_url(queue_arn), MessageBody=body, MessageAttributes=attributes
            )
        except ClientError as exc:
            return classify_client_error(exc, "sqs SendMessage")
        except BotoCoreError as exc:
            return classify_botocore_error(exc, "sqs SendMessage")
        return Outcome.success(_status(answer))

    def _send(self, target: AwsTarget, envelope: Envelope) -> Outcome:
        region = region_of(target)
        if isinstance(target, StepFunctionsTarget):
            return start_execution(self.client("stepfunctions", region), target, envelope)
        if isinstance(target, EcsTarget):
            return run_task(self.client("ecs", region), target, envelope)
        text, attributes = _message(envelope)
        if isinstance(target, LambdaTarget):
            answer = self.client("lambda", region).invoke(
                FunctionName=target.function_arn, InvocationType="Event", Payload=text.encode("utf-8")
            )
            return Outcome.success(answer.get("StatusCode"))
        if isinstance(target, SqsTarget):
            params: dict[str, Any] = {"QueueUrl": target.queue_url, "MessageBody": text}
            if attributes:
                params["MessageAttributes"] = attributes
            if target.queue_url.endswith(".fifo"):
                params.update(_fifo(envelope))
                if target.message_group_id is not None:
                    params["MessageGroupId"] = target.message_group_id
            answer = self.client("sqs", region).send_message(**params)
            return Outcome.success(_status(answer))
        if isinstance(target, SnsTarget):
            params = {"TopicArn": target.topic_arn, "Message": text}
            if attributes:
                params["MessageAttributes"] = attributes
            if target.topic_arn.endswith(".fifo"):
                params.update(_fifo(envelope))
            answer = self.client("sns", region).publish(**params)
            return Outcome.success(_status(answer))
        if isinstance(target, EventBridgeTarget):
            answer = self.client("events", region).put_events(
                Entries=[
                    {
                        "EventBusName": target.event_bus,
                        "Source": target.source,
                        "DetailType": target.detail_type,
                        "Detail": text,
                    }
                ]
            )
            if answer.get("FailedEntryCount"):
                entry = (answer.get("Entries") or [{}])[0]
                code = str(entry.get("ErrorCode") or "Unknown")
                text = f"events PutEvents failed: {code}: {entry.get('ErrorMessage') or 'entry rejected'}"
                retryable = code in RETRYABLE_CODES or "Throttl" in code
                return (Outcome.retry if retryable else Outcome.fail)(text, status=_status(answer))
            return Outcome.success(_status(answer))
        raise TypeError(f"not an AWS target: {type(target).__name__}")


def _message(envelope: Envelope) -> tuple[str, dict[str, dict[str, str]]]:
    """What the target is sent and its message attributes: Sundial's envelope, or, for an
    occurrence of a task made through the EventBridge Scheduler API (the envelope names its
    schedule), the schedule's ``Input`` as the service sends it (no attributes of Sundial's)."""
    if envelope.schedule_arn is None:
        return envelope.text(), message_attributes(envelope)
    text = delivered_input(
        input_template(envelope.payload),
        schedule_arn=envelope.schedule_arn,
        scheduled_for=envelope.scheduled_for,
        execution_id=envelope.run_id,
        attempt=envelope.attempt,
    )
    return text, {}


def _status(answer: dict[str, Any]) -> int | None:
    status = (answer.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None
