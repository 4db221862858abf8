"""A stranded message's receive count, either way SQS may keep it (shared/topology.py, ``STRANDED``):
the queues as the stack makes them (local/queues.py from shared/topology.py), on moto, and the
recovering trigger's drain (functions/recover/drain.py) failing every record it is handed, so that
each test counts the receives the drain gets before SQS moves the message on to the dead-letter
queue. With the stranded queue's visibility timeout at 0 a failed message comes straight back
(it is 720 s in the stack)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from functions.recover.drain import drain
from local.queues import create_queues
from shared.domain.firing import Staged
from shared.messages import staged_message
from shared.topology import DEAD_LETTERS, DELAY_MAX_RECEIVES, STRANDED, STRANDED_RECEIVES, queues
from tests.support.events import FakeLambdaContext
from tests.support.recordings import recording

pytestmark = pytest.mark.integration

BODY = json.dumps(staged_message(Staged("01KA0000000000000000000000", 1_000, "01KA0000000000000000000001")))


class Queues:
    def __init__(self, sqs: Any) -> None:
        self.sqs = sqs
        self.urls, _ = create_queues(sqs, queues(1))
        sqs.set_queue_attributes(QueueUrl=self.urls[STRANDED.name], Attributes={"VisibilityTimeout": "0"})

    def burn_delay_queue_receives(self) -> None:
        """A staged message received ``DELAY_MAX_RECEIVES`` times and never handed to the trigger
        (its invocations throttled), then moved to the stranded queue by the next receive."""
        delay = self.urls["delay-0"]
        self.sqs.send_message(QueueUrl=delay, MessageBody=BODY)
        for receives in range(1, DELAY_MAX_RECEIVES + 1):
            [message] = self.received(delay)
            assert message["Attributes"]["ApproximateReceiveCount"] == str(receives)
        assert self.received(delay) == []  # moved on

    def received(self, url: str) -> list[dict[str, Any]]:
        answer = self.sqs.receive_message(
            QueueUrl=url, VisibilityTimeout=0, WaitTimeSeconds=0, MessageSystemAttributeNames=["All"]
        )
        return answer.get("Messages", [])

    def drained_receive_counts(self) -> list[int]:
        """The receive count of each record the drain handed over, all of them failed."""
        counts: list[int] = []

        def fail_all(event: dict[str, Any], context: Any) -> dict[str, Any]:
            counts.extend(int(r["attributes"]["ApproximateReceiveCount"]) for r in event["Records"])
            return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}

        drain(self.sqs, self.urls[STRANDED.name], fail_all, FakeLambdaContext(timeout_s=120))
        return counts

    def dead_letters(self) -> list[str]:
        return [m["Body"] for m in self.received(self.urls[DEAD_LETTERS.name])]


@pytest.fixture
def stack_queues() -> Iterator[Queues]:
    with mock_aws():
        yield Queues(boto3.client("sqs", region_name="us-east-1"))


def test_assuming_the_count_continues_the_drain_gets_its_receives_before_the_dead_letter_queue(
    stack_queues: Queues,
) -> None:
    """The count continues from the delay queue's, as AWS's recording shows (LocalStack's
    AWS-validated test_dead_letter_queue_message_attributes: tests/data/aws/sqs-dead-letter-receive.json)
    and moto does, and the stranded queue's redrive policy counts from it. Its maxReceiveCount
    was the delay queues' (5): SQS moved every stranded message on to the dead-letter queue at
    its first receive, before the recovering trigger ever saw it."""
    recorded = recording("sqs-dead-letter-receive")
    counts = [
        [m["Attributes"]["ApproximateReceiveCount"] for m in recorded[k]] for k in ("rec-pre-dlq", "dlq-messages")
    ]
    assert counts == [["1", "1"], ["2", "2"]]  # from a queue of maxReceiveCount 1: 1, then 2 in its dead-letter queue
    stack_queues.burn_delay_queue_receives()
    first = DELAY_MAX_RECEIVES + 1
    assert stack_queues.drained_receive_counts() == list(range(first, first + STRANDED_RECEIVES))
    assert stack_queues.dead_letters() == [BODY]


def test_assuming_the_count_starts_again_at_1_the_drain_gets_every_receive_of_the_stranded_queue(
    stack_queues: Queues,
) -> None:
    """A crafted stranded message whose count starts at 1 there, as if SQS restarted it on the
    move: the drain gets the stranded queue's whole maxReceiveCount, more tries than
    ``STRANDED_RECEIVES``, each a last delivery, and the message still ends in the dead-letter
    queue."""
    stack_queues.sqs.send_message(QueueUrl=stack_queues.urls[STRANDED.name], MessageBody=BODY)
    counts = stack_queues.drained_receive_counts()
    assert counts == list(range(1, STRANDED.max_receive_count + 1))
    assert len(counts) >= STRANDED_RECEIVES
    assert stack_queues.dead_letters() == [BODY]
