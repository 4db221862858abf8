"""AWS targets with fake clients: which AWS errors are retried, and what each service is asked."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    ReadTimeoutError,
)

from shared.delivery import AwsDelivery, Deliverer, Envelope, HttpDelivery, Outcome
from shared.delivery.aws import region_of
from shared.domain.codec import target_from_dict, target_to_dict
from shared.domain.tasks import EventBridgeTarget, HttpTarget, LambdaTarget, SnsTarget, SqsTarget

pytestmark = pytest.mark.unit

ENVELOPE = Envelope(
    "tsk_1", "run_1", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), dt.datetime(2026, 1, 1, 0, 0, 1, tzinfo=dt.UTC), 2, [1]
)
QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
FUNCTION = "arn:aws:lambda:eu-west-1:123456789012:function:hook"
TOPIC = "arn:aws:sns:us-east-1:123456789012:orders"


class FakeClient:
    """Answers every operation with ``answer``, or raises ``error``; remembers what it was asked."""

    def __init__(self, answer: dict[str, Any] | None = None, error: Exception | None = None) -> None:
        self.answer = answer if answer is not None else {"ResponseMetadata": {"HTTPStatusCode": 200}}
        self.error = error
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, operation: str) -> Any:
        def call(**params: Any) -> dict[str, Any]:
            self.calls.append((operation, params))
            if self.error is not None:
                raise self.error
            return self.answer

        return call


def client_error(code: str, status: int, message: str = "no") -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}}, "Operation"
    )


def deliver(target: Any, client: FakeClient) -> Outcome:
    return AwsDelivery(lambda service: client).call(target, ENVELOPE)


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (client_error("ThrottlingException", 400), True),
        (client_error("Throttling", 400), True),
        (client_error("KMS.KMSThrottlingException", 400), True),
        (client_error("TooManyRequestsException", 429), True),
        (client_error("ServiceUnavailable", 503), True),
        (client_error("InternalFailure", 500), True),
        (client_error("ServiceException", 500), True),
        (client_error("ResourceConflictException", 409), True),
        (client_error("SomethingNew", 502), True),
        (client_error("AccessDeniedException", 403), False),
        (client_error("AccessDenied", 403), False),
        (client_error("ResourceNotFoundException", 404), False),
        (client_error("AWS.SimpleQueueService.NonExistentQueue", 400), False),
        (client_error("ValidationException", 400), False),
        (client_error("InvalidParameter", 400), False),
        (client_error("NotFound", 404), False),
        (EndpointConnectionError(endpoint_url="https://sqs.us-east-1.amazonaws.com"), True),
        (ConnectTimeoutError(endpoint_url="https://sqs.us-east-1.amazonaws.com"), True),
        (ReadTimeoutError(endpoint_url="https://sqs.us-east-1.amazonaws.com"), True),
        (ParamValidationError(report="QueueUrl is missing"), False),
        (NoCredentialsError(), False),
    ],
)
def test_aws_errors(error: Exception, retryable: bool) -> None:
    outcome = deliver(SqsTarget(QUEUE), FakeClient(error=error))

    assert not outcome.ok
    assert outcome.retryable is retryable
    assert outcome.error is not None
    assert outcome.error.startswith("sqs SendMessage failed: ")


def test_a_client_error_names_the_operation_code_and_message() -> None:
    outcome = deliver(LambdaTarget(FUNCTION), FakeClient(error=client_error("AccessDeniedException", 403, "not you")))
    assert outcome.error == "lambda Invoke failed: AccessDeniedException: not you"
    assert outcome.status == 403


def test_an_unexpected_exception_becomes_a_retryable_outcome() -> None:
    outcome = deliver(SnsTarget(TOPIC), FakeClient(error=RuntimeError("bug")))
    assert outcome.retryable
    assert outcome.error == "sns Publish failed: unexpected RuntimeError"


def test_lambda_is_invoked_asynchronously_with_the_envelope() -> None:
    client = FakeClient({"StatusCode": 202})
    outcome = deliver(LambdaTarget(FUNCTION), client)
    assert outcome.ok
    assert outcome.status == 202
    (operation, params), *_ = client.calls
    assert operation == "invoke"
    assert params == {"FunctionName": FUNCTION, "InvocationType": "Event", "Payload": ENVELOPE.body()}


def test_fifo_queues_get_a_group_per_task_and_a_deduplication_id_per_attempt() -> None:
    client = FakeClient()
    assert deliver(SqsTarget(QUEUE + ".fifo"), client).ok
    params = client.calls[0][1]
    assert params["MessageGroupId"] == "tsk_1"
    assert params["MessageDeduplicationId"] == "run_1-2"
    assert json.loads(params["MessageBody"]) == ENVELOPE.to_dict()


def test_a_rejected_event_entry_is_a_failure() -> None:
    rejected = {"FailedEntryCount": 1, "Entries": [{"ErrorCode": "InternalFailure", "ErrorMessage": "try later"}]}
    denied = {"FailedEntryCount": 1, "Entries": [{"ErrorCode": "AccessDeniedException", "ErrorMessage": "no"}]}
    target = EventBridgeTarget("default", "sundial.test", "Occurrence")

    retried = deliver(target, FakeClient(rejected))
    assert retried.retryable
    assert retried.error == "events PutEvents failed: InternalFailure: try later"
    assert deliver(target, FakeClient(denied)).final


def test_clients_are_made_once_per_service_on_first_use() -> None:
    made: list[str] = []

    def factory(service: str) -> FakeClient:
        made.append(service)
        return FakeClient({"StatusCode": 202})

    delivery = AwsDelivery(factory)
    assert made == []
    for target in (SqsTarget(QUEUE), SqsTarget(QUEUE), SnsTarget(TOPIC), LambdaTarget(FUNCTION)):
        assert delivery.call(target, ENVELOPE).ok
    assert made == ["sqs", "sns", "lambda"]


@pytest.mark.parametrize(
    ("target", "region"),
    [
        (LambdaTarget(FUNCTION), "eu-west-1"),
        (SqsTarget("https://sqs.ap-southeast-1.amazonaws.com/123456789012/q"), "ap-southeast-1"),
        (SqsTarget("https://eu-central-1.queue.amazonaws.com/123456789012/q"), "eu-central-1"),
        (SqsTarget("http://localhost:5000/123456789012/q"), None),
        (SnsTarget("arn:aws-cn:sns:cn-north-1:123456789012:t"), "cn-north-1"),
        (EventBridgeTarget("default", "s", "d"), None),
        (EventBridgeTarget("arn:aws:events:us-west-2:123456789012:event-bus/b", "s", "d"), "us-west-2"),
    ],
)
def test_the_region_comes_from_the_target(target: Any, region: str | None) -> None:
    assert region_of(target) == region


def test_the_deliverer_dispatches_on_the_target_type() -> None:
    client = FakeClient()
    deliverer = Deliverer(HttpDelivery(), AwsDelivery(lambda service: client))

    assert deliverer.deliver(SqsTarget(QUEUE), ENVELOPE).ok
    assert client.calls[0][0] == "send_message"
    refused = deliverer.deliver(HttpTarget("http://169.254.169.254/"), ENVELOPE)
    assert refused.final
    assert refused.error == "refused: 169.254.169.254 is a cloud metadata address"
    with pytest.raises(TypeError):
        deliverer.deliver(object(), ENVELOPE)  # type: ignore[arg-type]


def test_an_occurrence_of_a_schedule_sends_its_input_as_the_scheduler_api_does() -> None:
    """The schedule's ARN is the task's (the envelope carries it from the task's ``eventbridge``):
    its targets get the ``Input``, context attributes replaced, and no attributes of Sundial's."""
    arn = "arn:aws:scheduler:us-east-1:123456789012:schedule/default/nightly"
    envelope = replace(ENVELOPE, payload='{"s": "<aws.scheduler.schedule-arn>", "n": <aws.scheduler.attempt-number>}')
    client = FakeClient()
    AwsDelivery(lambda service: client).call(SqsTarget(QUEUE), replace(envelope, schedule_arn=arn))
    AwsDelivery(lambda service: client).call(SqsTarget(QUEUE), envelope)
    (_, scheduled), (_, native) = client.calls
    assert scheduled == {"QueueUrl": QUEUE, "MessageBody": f'{{"s": "{arn}", "n": 2}}'}
    assert json.loads(native["MessageBody"])["payload"] == envelope.payload
    assert "schedule_arn" not in native["MessageBody"]  # never a member of the envelope
    assert set(native["MessageAttributes"]) == {"Idempotency-Key", "Sundial-Task-Id", "Sundial-Attempt"}


def test_a_target_stored_with_its_schedule_s_arn_reads_back_without_it() -> None:
    """Targets once kept the schedule's ARN too; the task's ``eventbridge`` is its one copy now."""
    stored = {"sqs": {"queue_url": QUEUE, "schedule_arn": "arn:aws:scheduler:us-east-1:1:schedule/g/n"}}
    assert target_from_dict(stored) == SqsTarget(QUEUE)
    assert target_to_dict(SqsTarget(QUEUE, "g1")) == {"sqs": {"queue_url": QUEUE, "message_group_id": "g1"}}
