"""Lambda's recursive loop detection, as the local runtime and the tests model it
(local/recursion.py): a chain of invocations through SQS stops after 16 unless the function
allows recursion, and the stack allows it exactly where the trigger feeds its own queues."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local.queues import QUEUE_PREFIX
from local.recursion import LOOP_LIMIT, TRACE_HEADER, lineage_of, terminating
from local.sqs_lambda import invoke_batch, receive
from shared.topology import STRANDED, TRIGGER

pytestmark = pytest.mark.integration


def test_moto_keeps_a_batch_entrys_trace_header_as_sqs_does() -> None:
    """SQS keeps each batch entry's AWSTraceHeader; moto's batch dropped it (local/moto_patches/sqs.py)."""
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="traced")["QueueUrl"]
        header = {TRACE_HEADER: {"DataType": "String", "StringValue": "Root=1-0-0;Lineage=ab:3:f"}}
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": "0", "MessageBody": "x", "MessageSystemAttributes": header},
                {"Id": "1", "MessageBody": "y"},
            ],
        )
        got = {m["Body"]: m.get("Attributes", {}) for m in receive(sqs, url, wait_s=0)}
        assert got["x"][TRACE_HEADER] == "Root=1-0-0;Lineage=ab:3:f"
        assert TRACE_HEADER not in got["y"]


@pytest.fixture
def loop() -> Iterator[Any]:
    """A queue named as the trigger's delay queue and one named as no function's, each with a
    redrive target, and a handler that sends every message back to the queue it came from."""
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        dlq = sqs.create_queue(QueueName=f"{QUEUE_PREFIX}dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"})
        queues = {}
        for name in ("delay-0", "feedback"):
            url = sqs.create_queue(QueueName=f"{QUEUE_PREFIX}{name}", Attributes={"RedrivePolicy": policy})["QueueUrl"]
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            queues[name] = (url, arn)

        class Loop:
            def run(self, name: str, rounds: int) -> int:
                """Send one message, then invoke the queue's function with whatever arrives, until
                nothing does or ``rounds`` invocations: how many there were."""
                url, arn = queues[name]
                sender = boto3.client("sqs", region_name="us-east-1")  # as a function's own client
                invoked = [0]

                def handler(event: dict[str, Any], context: Any) -> None:
                    invoked[0] += 1
                    if invoked[0] < rounds:
                        sender.send_message_batch(
                            QueueUrl=url, Entries=[{"Id": "0", "MessageBody": event["Records"][0]["body"]}]
                        )

                sqs.send_message(QueueUrl=url, MessageBody="again")
                while messages := receive(sqs, url, wait_s=0):
                    invoke_batch(sqs, url, arn, handler, messages)
                return invoked[0]

            def stopped(self) -> list[dict[str, Any]]:
                return receive(sqs, dlq, wait_s=0)

        yield Loop()


def test_a_function_feeding_its_own_queue_is_stopped_after_16_invocations(loop: Any) -> None:
    assert loop.run("feedback", rounds=40) == LOOP_LIMIT == 16
    (moved,) = loop.stopped()
    assert moved["Body"] == "again"
    assert lineage_of(moved) == {"feedback": 16}  # moved with the chain it would have continued


def test_a_function_the_stack_allows_to_recurse_is_never_stopped(loop: Any) -> None:
    assert loop.run("delay-0", rounds=40) == 40
    assert loop.stopped() == []


def test_the_trigger_without_the_setting_would_be_stopped_after_16(loop: Any) -> None:
    with terminating(TRIGGER):
        assert loop.run("delay-0", rounds=40) == 16
    assert len(loop.stopped()) == 1


# --- the real pipeline: a task due every second is a chain through the trigger, forever ----------


def _register_every_second(api: Any, url: str) -> dict[str, Any]:
    answer = api("POST", "/v1/tasks", {"schedule": {"every_seconds": 1}, "target": {"http": {"url": url}}})
    assert answer.status == 201, answer.body
    return answer.body


def test_a_task_due_every_second_keeps_firing_past_20_occurrences_because_the_trigger_allows_recursion(
    api: Any, pipeline: Any, receiver: Any
) -> None:
    url = receiver.script("/every-second", 200)
    _register_every_second(api, url)
    assert pipeline.fire(until=lambda: len(receiver.calls_to("/every-second")) >= 22, timeout=40)
    assert pipeline.dead_letters() == []


def test_without_allowing_recursion_a_task_due_every_second_stops_after_about_16_occurrences(
    api: Any, pipeline: Any, receiver: Any
) -> None:
    """What AWS would do to the stack without ``RecursiveLoop: Allow`` on the trigger: the 17th
    invocation of the chain is refused, the occurrence's message moved on (to the stranded queue,
    where the recovering trigger would take it) and nothing else fires it."""
    url = receiver.script("/stopped", 200)
    _register_every_second(api, url)
    stranded = pipeline.urls[STRANDED.name]
    with terminating(TRIGGER):
        pipeline.fire(until=lambda: bool(receive(pipeline.sqs, stranded, wait_s=0)), timeout=30)
        fired = len(receiver.calls_to("/stopped"))
        pipeline.settle()  # nothing more comes
    assert len(receiver.calls_to("/stopped")) == fired
    # each fire is one invocation of the chain; a message that arrived early is sent again, one
    # more invocation that fires nothing
    assert LOOP_LIMIT - 3 <= fired <= LOOP_LIMIT, fired
