"""AWS targets against moto: the message each kind of target really receives."""

from __future__ import annotations

import datetime as dt
import io
import json
import zipfile
from typing import Any

import boto3
import pytest
from moto import mock_aws

from shared.delivery import AwsDelivery, Deliverer, Envelope
from shared.domain.tasks import EventBridgeTarget, LambdaTarget, SnsTarget, SqsTarget

pytestmark = pytest.mark.integration

ENVELOPE = Envelope(
    task_id="tsk_01JD8Z",
    run_id="run_01JD90",
    scheduled_for=dt.datetime(2026, 11, 22, 10, 0, 0, 250_000, tzinfo=dt.UTC),
    fired_at=dt.datetime(2026, 11, 22, 10, 0, 0, 300_000, tzinfo=dt.UTC),
    attempt=1,
    payload={"order_id": 123},
)
EXPECTED = {
    "task_id": "tsk_01JD8Z",
    "run_id": "run_01JD90",
    "scheduled_for": "2026-11-22T10:00:00.250Z",
    "fired_at": "2026-11-22T10:00:00.300Z",
    "attempt": 1,
    "payload": {"order_id": 123},
}
ATTRIBUTES = {
    "Idempotency-Key": {"StringValue": "run_01JD90", "DataType": "String"},
    "Sundial-Task-Id": {"StringValue": "tsk_01JD8Z", "DataType": "String"},
    "Sundial-Attempt": {"StringValue": "1", "DataType": "Number"},
}


def queue(name: str, **attributes: str) -> tuple[str, str]:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, arn


def receive(url: str) -> dict[str, Any]:
    messages = (
        boto3.client("sqs")
        .receive_message(QueueUrl=url, MessageAttributeNames=["All"], AttributeNames=["All"], MaxNumberOfMessages=10)
        .get("Messages", [])
    )
    assert len(messages) == 1, messages
    return messages[0]


def test_sqs_receives_the_envelope_and_its_attributes(aws: None) -> None:
    url, _ = queue("orders")

    outcome = AwsDelivery().call(SqsTarget(url), ENVELOPE)

    assert outcome.ok
    assert outcome.status == 200
    message = receive(url)
    assert json.loads(message["Body"]) == EXPECTED
    assert message["Body"] == ENVELOPE.text()
    assert message["MessageAttributes"] == ATTRIBUTES


def test_a_fifo_queue_gets_the_task_as_message_group(aws: None) -> None:
    url, _ = queue("orders.fifo", FifoQueue="true")

    assert AwsDelivery().call(SqsTarget(url), ENVELOPE).ok

    message = receive(url)
    assert json.loads(message["Body"]) == EXPECTED
    assert message["Attributes"]["MessageGroupId"] == "tsk_01JD8Z"


def test_a_missing_queue_is_a_final_failure(aws: None) -> None:
    outcome = AwsDelivery().call(SqsTarget("https://sqs.us-east-1.amazonaws.com/123456789012/nope"), ENVELOPE)
    assert outcome.final
    assert outcome.error is not None
    assert "NonExistentQueue" in outcome.error


def test_sns_publishes_the_envelope_to_its_subscribers(aws: None) -> None:
    sns = boto3.client("sns")
    topic = sns.create_topic(Name="orders")["TopicArn"]
    url, arn = queue("subscriber")
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})

    outcome = AwsDelivery().call(SnsTarget(topic), ENVELOPE)

    assert outcome.ok
    message = receive(url)
    assert json.loads(message["Body"]) == EXPECTED
    assert message["MessageAttributes"] == ATTRIBUTES


def test_a_missing_topic_is_a_final_failure(aws: None) -> None:
    outcome = AwsDelivery().call(SnsTarget("arn:aws:sns:us-east-1:123456789012:nope"), ENVELOPE)
    assert outcome.final


def test_eventbridge_puts_the_envelope_as_the_event_detail(aws: None) -> None:
    events = boto3.client("events")
    events.create_event_bus(Name="sundial")
    events.put_rule(Name="occurrences", EventBusName="sundial", EventPattern=json.dumps({"source": ["sundial.test"]}))
    url, arn = queue("bus-listener")
    events.put_targets(Rule="occurrences", EventBusName="sundial", Targets=[{"Id": "queue", "Arn": arn}])

    outcome = AwsDelivery().call(EventBridgeTarget("sundial", "sundial.test", "Sundial occurrence"), ENVELOPE)

    assert outcome.ok
    event = json.loads(receive(url)["Body"])
    assert event["source"] == "sundial.test"
    assert event["detail-type"] == "Sundial occurrence"
    assert event["detail"] == EXPECTED


def test_a_missing_event_bus_is_a_final_failure(aws: None) -> None:
    outcome = AwsDelivery().call(EventBridgeTarget("nope", "sundial.test", "Sundial occurrence"), ENVELOPE)
    assert outcome.final
    assert outcome.error is not None
    assert outcome.error.startswith("events PutEvents failed")


def test_invoking_a_missing_function_is_a_final_failure(aws: None) -> None:
    outcome = AwsDelivery().call(LambdaTarget("arn:aws:lambda:us-east-1:123456789012:function:nope"), ENVELOPE)

    assert outcome.final
    assert outcome.status == 404
    assert outcome.error is not None
    assert outcome.error.startswith("lambda Invoke failed: ResourceNotFoundException")


def test_a_function_is_invoked_asynchronously() -> None:
    with mock_aws(config={"lambda": {"use_docker": False}}):
        role = boto3.client("iam").create_role(RoleName="hook", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        code = io.BytesIO()
        with zipfile.ZipFile(code, "w") as archive:
            archive.writestr("index.py", "def handler(event, context):\n    return event\n")
        function = boto3.client("lambda").create_function(
            FunctionName="hook",
            Runtime="python3.12",
            Role=role,
            Handler="index.handler",
            Code={"ZipFile": code.getvalue()},
        )["FunctionArn"]

        outcome = AwsDelivery().call(LambdaTarget(function), ENVELOPE)

    assert outcome.ok
    assert outcome.status == 202


def test_clients_are_made_on_first_use_so_a_delivery_made_before_moto_is_mocked() -> None:
    delivery = Deliverer()  # as the trigger does at import, before any mock starts
    with mock_aws():
        url, _ = queue("late")
        assert delivery.deliver(SqsTarget(url), ENVELOPE).ok
        assert json.loads(receive(url)["Body"]) == EXPECTED
