"""The stranded queue without an event source: the tick's look at it and its drain invocation
(shared/adapters/stranded.py, ``Ticker``), and the recovering trigger's drain loop
(functions/recover/drain.py), over fake SQS and Lambda clients."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from botocore.exceptions import ClientError

from functions.recover.drain import RECEIVE_MAX, RESERVE_MS, drain
from shared.adapters.invoke import ACCEPTED
from shared.adapters.stranded import StrandedWatch
from shared.domain.errors import StorageUnavailable
from shared.domain.firing import Timing
from shared.domain.times import to_ms
from shared.services.firing import Ticker
from tests.support.fakes import InMemoryTaskRepository
from tests.support.firing import FakeClock
from tests.support.pipeline_store import InMemoryPipelineStore

pytestmark = pytest.mark.unit

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/sundial-stranded"
ARN = "arn:aws:sqs:us-east-1:123456789012:sundial-stranded"
REFUSED = ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "down"}}, "Any")


# --- the tick's look ---------------------------------------------------------------------------


@dataclass
class Depth:
    """GetQueueAttributes as the watch calls it."""

    visible: int = 0
    refuse: bool = False
    calls: list[dict[str, Any]] = field(default_factory=list)

    def get_queue_attributes(self, **call: Any) -> dict[str, Any]:
        self.calls.append(call)
        if self.refuse:
            raise REFUSED
        return {"Attributes": {"ApproximateNumberOfMessages": str(self.visible)}}


@dataclass
class Invokes:
    """Lambda's Invoke as the watch calls it."""

    refuse: bool = False
    status: int = ACCEPTED
    calls: list[dict[str, Any]] = field(default_factory=list)

    def invoke(self, **call: Any) -> dict[str, Any]:
        if self.refuse:
            raise REFUSED
        self.calls.append({**call, "Payload": json.loads(call["Payload"])})
        return {"StatusCode": self.status}


class Scans:
    def __init__(self, refuse: bool = False) -> None:
        self.asked: list[list[int]] = []
        self.refuse = refuse

    def request(self, shards: Any, tick_ms: int, since: Any = None) -> None:
        if self.refuse:
            raise StorageUnavailable("scan requests: refused")
        self.asked.append(list(shards))


def ticker(depth: Depth, invokes: Invokes, scans: Scans | None = None) -> Ticker:
    clock = FakeClock(to_ms(datetime(2026, 11, 27, 9, 0, tzinfo=UTC)))
    store = InMemoryPipelineStore(InMemoryTaskRepository(retention=timedelta(days=30)), retention_ms=86_400_000)
    watch = StrandedWatch(URL, "sundial-recover", sqs=lambda: depth, lambda_client=lambda: invokes)
    return Ticker(store, scans or Scans(), Timing(), 2, clock=clock, stranded=watch)


def test_nothing_visible_in_the_stranded_queue_invokes_nothing() -> None:
    depth, invokes, scans = Depth(), Invokes(), Scans()
    assert ticker(depth, invokes, scans).tick() == [0, 1]
    assert depth.calls == [{"QueueUrl": URL, "AttributeNames": ["ApproximateNumberOfMessages"]}]
    assert invokes.calls == []
    assert scans.asked == [[0, 1]]


def test_messages_waiting_are_one_asynchronous_drain_a_tick() -> None:
    depth, invokes = Depth(visible=37), Invokes()
    ticking = ticker(depth, invokes)
    ticking.tick()
    assert invokes.calls == [{"FunctionName": "sundial-recover", "InvocationType": "Event", "Payload": {"drain": True}}]
    ticking.tick()
    assert len(invokes.calls) == 2  # one more per tick, however many wait


@pytest.mark.parametrize(
    ("depth", "invokes"),
    [
        (Depth(refuse=True), Invokes()),
        (Depth(visible=1), Invokes(refuse=True)),
        (Depth(visible=1), Invokes(status=500)),
    ],
    ids=["look refused", "invoke refused", "invoke not accepted"],
)
def test_a_failed_look_or_drain_fails_neither_the_tick_nor_its_scans(depth: Depth, invokes: Invokes) -> None:
    scans = Scans()
    assert ticker(depth, invokes, scans).tick() == [0, 1]
    assert scans.asked == [[0, 1]]


def test_the_stranded_queue_is_looked_at_even_when_the_scan_requests_fail() -> None:
    depth, invokes = Depth(visible=1), Invokes()
    with pytest.raises(StorageUnavailable):
        ticker(depth, invokes, Scans(refuse=True)).tick()
    assert len(invokes.calls) == 1


def test_the_watch_says_what_failed() -> None:
    watch = StrandedWatch(
        URL, "sundial-recover", sqs=lambda: Depth(refuse=True), lambda_client=lambda: Invokes(status=429)
    )
    with pytest.raises(StorageUnavailable, match="depth"):
        watch.waiting()
    with pytest.raises(StorageUnavailable, match="Invoke answered 429"):
        watch.drain()


# --- the drain ---------------------------------------------------------------------------------


@dataclass
class Queue:
    """ReceiveMessage, DeleteMessageBatch and GetQueueAttributes on one queue: a received message
    is invisible until the test's end (its visibility timeout outlasts the drain)."""

    bodies: list[str]
    receives: list[dict[str, Any]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    in_flight: list[str] = field(default_factory=list)

    def get_queue_attributes(self, QueueUrl: str, AttributeNames: list[str]) -> dict[str, Any]:
        assert (QueueUrl, AttributeNames) == (URL, ["QueueArn"])
        return {"Attributes": {"QueueArn": ARN}}

    def receive_message(self, **call: Any) -> dict[str, Any]:
        self.receives.append(call)
        visible = [i for i in range(len(self.bodies)) if f"m{i}" not in self.in_flight and f"m{i}" not in self.deleted]
        taken = visible[: call["MaxNumberOfMessages"]]
        self.in_flight += [f"m{i}" for i in taken]
        messages = [
            {
                "MessageId": f"m{i}",
                "ReceiptHandle": f"h{i}",
                "Body": self.bodies[i],
                "MD5OfBody": "0" * 32,
                "Attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1"},
            }
            for i in taken
        ]
        return {"Messages": messages} if messages else {}

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> dict[str, Any]:
        assert len(Entries) <= RECEIVE_MAX
        self.deleted += [f"m{entry['ReceiptHandle'][1:]}" for entry in Entries]
        return {"Successful": [{"Id": entry["Id"]} for entry in Entries]}


class Clock:
    """A context whose remaining time runs down ``per_batch_ms`` with each batch handled."""

    def __init__(self, remaining_ms: int, per_batch_ms: int = 0) -> None:
        self.remaining_ms, self.per_batch_ms = remaining_ms, per_batch_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def handler(fail: frozenset[str] = frozenset(), whole: bool = False) -> tuple[list[dict[str, Any]], Any]:
    events: list[dict[str, Any]] = []

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        events.append(event)
        context.remaining_ms -= context.per_batch_ms
        if whole:
            raise BatchProcessingError("All records failed processing.", [])
        return {
            "batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] in fail]
        }

    return events, handle


def test_an_empty_queue_is_one_receive_and_no_batch() -> None:
    queue = Queue([])
    events, handle = handler()
    assert drain(queue, URL, handle, Clock(120_000)).answer() == {
        "receives": 1,
        "received": 0,
        "deleted": 0,
        "failed": 0,
    }
    assert events == []
    [receive] = queue.receives
    assert receive["MessageSystemAttributeNames"] == ["All"]  # the record's receive count and the rest
    assert receive["MaxNumberOfMessages"] == RECEIVE_MAX
    assert receive["WaitTimeSeconds"] >= 1  # a long poll: a short one may answer nothing while messages wait


def test_handled_messages_are_deleted_and_failed_ones_left_to_come_back() -> None:
    queue = Queue([f"b{i}" for i in range(13)])
    events, handle = handler(fail={"b3", "b11"})
    drained = drain(queue, URL, handle, Clock(120_000))
    assert drained.answer() == {"receives": 3, "received": 13, "deleted": 11, "failed": 2}
    assert [len(event["Records"]) for event in events] == [10, 3]
    assert sorted(queue.deleted) == sorted(f"m{i}" for i in range(13) if i not in (3, 11))
    record = events[0]["Records"][0]
    assert record["eventSourceARN"] == ARN
    assert record["awsRegion"] == "us-east-1"
    assert record["attributes"]["ApproximateReceiveCount"] == "1"


def test_a_batch_that_failed_whole_deletes_nothing() -> None:
    queue = Queue(["b0", "b1"])
    _, handle = handler(whole=True)
    assert drain(queue, URL, handle, Clock(120_000)).answer() == {
        "receives": 2,
        "received": 2,
        "deleted": 0,
        "failed": 2,
    }
    assert queue.deleted == []


def test_the_drain_starts_no_batch_with_less_than_its_reserve_left() -> None:
    queue = Queue([f"b{i}" for i in range(30)])
    _, handle = handler()
    # 120 s, 40 s a batch: batches at 120 and 80 s left; at 40 s left (< the reserve) it stops
    assert drain(queue, URL, handle, Clock(120_000, per_batch_ms=40_000)).answer()["received"] == 20
    assert len(queue.receives) == 2
    assert drain(Queue(["b0"]), URL, handle, Clock(RESERVE_MS - 1)).receives == 0
