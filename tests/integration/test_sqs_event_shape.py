"""The SQS event Sundial's functions are handed, as its producers build it from messages moto
answers (functions/records.py, ``sqs_event``: the local runtime's event source, local/sqs_lambda.py,
and the recovering trigger's drain, functions/recover/drain.py), held to AWS's own recordings of
the event Lambda's SQS event source builds (tests/data/aws/sqs-event*.json): the same keys, nesting
and value types, record by record."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from functions.records import sqs_event
from functions.recover.drain import drain
from local.queues import QUEUE_PREFIX
from local.sqs_lambda import invoke_batch, receive
from tests.support.events import FakeLambdaContext
from tests.support.recordings import recording, same_shape

pytestmark = pytest.mark.integration

RECORDED_ATTRIBUTES = {
    "Title": {"DataType": "String", "StringValue": "The Whistler"},
    "Author": {"DataType": "String", "StringValue": "John Grisham"},
    "WeeksOn": {"DataType": "Number", "StringValue": "6"},
}
"""The message attributes the recorded message was sent with (its event's recording)."""
TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


class Queues:
    def __init__(self, sqs: Any) -> None:
        self.sqs = sqs

    def make(self, name: str) -> tuple[str, str]:
        url = self.sqs.create_queue(QueueName=f"{QUEUE_PREFIX}{name}")["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return url, arn

    def sent(self, name: str, body: str = '{"foo": "bar"}', **send: Any) -> tuple[str, str]:
        """The queue ``name`` (URL, ARN), holding one message."""
        url, arn = self.make(name)
        self.sqs.send_message(QueueUrl=url, MessageBody=body, **send)
        return url, arn

    def received(self, name: str, **send: Any) -> tuple[list[dict[str, Any]], str]:
        """One message sent to the queue ``name`` and received as the event sources receive it."""
        url, arn = self.sent(name, **send)
        return receive(self.sqs, url, wait_s=0), arn


@pytest.fixture
def queues() -> Iterator[Queues]:
    with mock_aws():
        yield Queues(boto3.client("sqs", region_name="us-east-1"))


def test_a_message_with_attributes_is_handed_over_as_aws_records_it(queues: Queues) -> None:
    """Its message attributes in the event's form (they were always ``{}``), and their MD5 (it was
    missing): the same message gives the same attributes and the same checksum as on AWS."""
    messages, arn = queues.received("attributes", MessageAttributes=RECORDED_ATTRIBUTES)
    recorded = recording("sqs-event-message-attributes")
    event = sqs_event(messages, arn)
    assert same_shape(event, recorded) == []
    [record], [aws] = event["Records"], recorded["Records"]
    assert record["messageAttributes"] == aws["messageAttributes"]
    assert record["md5OfMessageAttributes"] == aws["md5OfMessageAttributes"]


@pytest.mark.parametrize(
    ("window", "name"), [(False, "sqs-event"), (True, "sqs-event-batching-window")], ids=["no window", "window"]
)
def test_a_message_without_attributes_has_the_checksum_key_its_event_source_gives(
    queues: Queues, window: bool, name: str
) -> None:
    """AWS leaves ``md5OfMessageAttributes`` out of a record without attributes from an event source
    without a batching window, and sets it to ``null`` from one with a window (every recording
    of each kind alike); it was always left out."""
    messages, arn = queues.received("plain")
    assert same_shape(sqs_event(messages, arn, batching_window=window), recording(name)) == []


def test_a_trace_header_is_passed_on_when_the_message_has_one() -> None:
    """No recording of Lambda's SQS event shows a message with an ``AWSTraceHeader``: the attribute
    is passed on as ReceiveMessage answers it, which is when the message has one ("Amazon SQS
    and AWS X-Ray", https://docs.aws.amazon.com/xray/latest/devguide/xray-services-sqs.html; the
    SQS recording tests/data/aws/sqs-dead-letter-receive.json has one message with it and one
    without). Everything else is the recorded record."""
    with mock_aws():
        queues = Queues(boto3.client("sqs", region_name="us-east-1"))
        system = {"AWSTraceHeader": {"DataType": "String", "StringValue": TRACE}}
        traced, arn = queues.received("traced", MessageSystemAttributes=system)
        untraced, _ = queues.received("untraced")
    assert same_shape(sqs_event(traced, arn), recording("sqs-event")) == [
        "Records[0].attributes: 'AWSTraceHeader', which AWS did not record"
    ]
    assert sqs_event(traced, arn)["Records"][0]["attributes"]["AWSTraceHeader"] == TRACE
    assert "AWSTraceHeader" not in sqs_event(untraced, arn)["Records"][0]["attributes"]


def test_only_the_attributes_lambda_passes_on_reach_the_event() -> None:
    """ReceiveMessage asked for every system attribute answers, from a dead-letter queue, its
    source queue's ARN too (recorded: tests/data/aws/sqs-dead-letter-receive.json, ``dlq-messages``,
    as the recovering trigger's drain receives from the stranded queue); no recording of Lambda's
    event has it, and the event passed it on."""
    answer = recording("sqs-dead-letter-receive")["dlq-messages"]
    event = sqs_event(answer, "arn:aws:sqs:us-east-1:123456789012:sundial-stranded")
    traced, plain = event["Records"]
    assert "DeadLetterQueueSourceArn" not in traced["attributes"]
    assert set(plain["attributes"]) == {"ApproximateReceiveCount", "SentTimestamp", "ApproximateFirstReceiveTimestamp"}
    assert set(traced["attributes"]) == {*plain["attributes"], "AWSTraceHeader"}  # (SenderId: deleted by the test)
    assert traced["messageAttributes"] == {
        "MyAttribute": {"stringValue": "foobar", "stringListValues": [], "binaryListValues": [], "dataType": "String"}
    }


@pytest.mark.parametrize(
    ("queue", "name"),
    [("delay-0", "sqs-event-batching-window"), ("delay-high", "sqs-event")],
    ids=["trigger (a window)", "high lane (none)"],
)
def test_the_local_event_source_hands_over_what_the_stacks_event_source_would(
    queues: Queues, queue: str, name: str
) -> None:
    """The trigger's event source gathers batches for a second, the high-priority lane's does not
    (shared/topology.py): their events differ as AWS's do."""
    url, arn = queues.sent(queue)
    messages = receive(queues.sqs, url, wait_s=0)
    events: list[dict[str, Any]] = []
    invoke_batch(queues.sqs, url, arn, lambda event, context: events.append(event), messages)
    [event] = events
    assert same_shape(event, recording(name)) == []


def test_the_drain_hands_over_the_event_an_event_source_without_a_window_would(queues: Queues) -> None:
    url, _ = queues.sent("stranded", MessageAttributes=RECORDED_ATTRIBUTES)
    events: list[dict[str, Any]] = []

    def handle(event: dict[str, Any], context: Any) -> Any:
        events.append(event)
        return {"batchItemFailures": []}

    drain(queues.sqs, url, handle, FakeLambdaContext(timeout_s=120))
    [event] = events
    recorded = recording("sqs-event-message-attributes")
    assert same_shape(event, recorded) == []
    assert event["Records"][0]["messageAttributes"] == recorded["Records"][0]["messageAttributes"]
    assert json.loads(event["Records"][0]["body"]) == {"foo": "bar"}
