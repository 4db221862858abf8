"""Lambda's SQS event source scaling, as the local runtime models it (local/sqs_lambda.py
``EventSource`` and ``poll``): a maximum concurrency holds messages in the queue untouched, while
a function limit below it throttles batches already received, which come back with their receives
burned -- why ``sundial:highPriorityReservedConcurrency`` is never below the lane's cap."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from local.sqs_lambda import EventSource, poll
from shared.topology import ConsumerSpec
from tests.support.eventually import until

pytestmark = pytest.mark.integration


class Held:
    """A handler that keeps every batch until released, recording each message's receive count."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.running = 0
        self.most_running = 0
        self.receives: dict[str, list[int]] = {}

    def __call__(self, event: dict[str, Any], context: Any) -> None:
        with self.lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            for record in event["Records"]:
                count = int(record["attributes"]["ApproximateReceiveCount"])
                self.receives.setdefault(record["body"], []).append(count)
        self.release.wait(10)
        with self.lock:
            self.running -= 1

    def done(self) -> int:
        with self.lock:
            return len(self.receives)


@pytest.fixture
def source() -> Iterator[Any]:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="scaled", Attributes={"VisibilityTimeout": "1"})["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        for i in range(6):
            sqs.send_message(QueueUrl=url, MessageBody=str(i))
        stopping = threading.Event()
        threads: list[threading.Thread] = []

        def start(event_source: EventSource, handler: Held) -> None:
            def submit(invoke: Any, batch: Any) -> None:
                worker = threading.Thread(target=invoke, args=(batch,), daemon=True)
                worker.start()
                threads.append(worker)

            consumer = ConsumerSpec("scaled", "scaled", batch_size=1)
            args = (sqs, url, arn, handler, consumer, event_source)
            poller = threading.Thread(
                target=poll, args=args, kwargs={"submit": submit, "stopping": stopping, "wait_s": 0}, daemon=True
            )
            poller.start()
            threads.append(poller)

        def visible() -> int:
            answer = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
            return int(answer["Attributes"]["ApproximateNumberOfMessages"])

        yield start, visible
        stopping.set()
        for thread in threads:
            thread.join(timeout=5)


def _until(condition: Any, timeout: float = 10) -> bool:
    return bool(until(condition, timeout, poll=0.02))


def test_an_event_source_at_its_maximum_concurrency_leaves_the_rest_in_the_queue_untouched(source: Any) -> None:
    start, visible = source
    handler = Held()
    start(EventSource(max_concurrency=2), handler)
    assert _until(lambda: handler.running == 2)
    assert not _until(lambda: handler.running > 2, timeout=0.5)
    assert visible() == 4  # not received: no receive burned
    handler.release.set()
    assert _until(lambda: handler.done() == 6)
    assert handler.most_running == 2
    assert all(counts == [1] for counts in handler.receives.values()), handler.receives


def test_a_function_limit_below_the_event_sources_cap_throttles_and_burns_receives(source: Any) -> None:
    start, _ = source
    handler = Held()
    event_source = EventSource(max_concurrency=4, function_slots=threading.Semaphore(2))
    start(event_source, handler)
    assert _until(lambda: event_source.throttled >= 1)
    handler.release.set()
    assert _until(lambda: handler.done() == 6)
    assert handler.most_running <= 2
    # a throttled message came back after its visibility timeout, one receive more
    assert any(counts[0] >= 2 for counts in handler.receives.values()), handler.receives
