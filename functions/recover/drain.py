"""The recovering trigger's drain of the stranded queue: what Lambda's SQS event source did for it,
done by the function itself when the tick finds messages waiting (shared/adapters/stranded.py).

Each round receives up to 10 messages, hands them to the trigger's batch code as the SQS event
Lambda would have built, deletes those it did not report as failed, and goes on until a receive
comes back empty or too little of the function's time is left for another batch:

* ``ReceiveMessage`` asks for every system attribute (``MessageSystemAttributeNames=["All"]``):
  the record's model needs them, ``ApproximateReceiveCount`` among them ("the number of times a
  message has been received across all queues but not deleted", Amazon SQS API Reference), and
  every message attribute (``MessageAttributeNames=["All"]``), so that the event is the one an
  event source would have built (functions/records.py, ``sqs_event``; no batching window). A
  receive waits up to a second (long polling "eliminates false empty responses by querying all
  ... Amazon SQS servers"; a short poll samples some of them and may answer nothing while
  messages wait: "Amazon SQS short and long polling").
* A received message stays invisible for the queue's visibility timeout (six times the trigger's
  timeout: shared/topology.py, ``STRANDED``), longer than the function can work on it.
* A failed message (a run another trigger still holds, a malformed message, the batch's own
  failure) is not deleted: it comes back after its visibility timeout, for a later drain, and
  after the queue's maxReceiveCount SQS moves it on to the dead-letter queue (alarmed), as when an
  event source fed the function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse

from functions.records import sqs_event
from shared.observability import logger

RECEIVE_MAX = 10
"""The most messages one ReceiveMessage returns."""
RECEIVE_WAIT_S = 1
RESERVE_MS = 75_000
"""A batch starts only while this much of the function's timeout (120 s) is left: a batch's
claims and its slowest target (an HTTP call times out after at most 60 s), with room. A batch cut
off by the timeout would leave its runs claimed until their leases run out."""

Handle = Callable[[dict[str, Any], Any], PartialItemFailureResponse]


@dataclass
class Drained:
    receives: int = 0
    received: int = 0
    deleted: int = 0
    failed: int = 0

    def answer(self) -> dict[str, int]:
        return asdict(self)


def drain(sqs: Any, queue_url: str, handle: Handle, context: Any, reserve_ms: int = RESERVE_MS) -> Drained:
    """Receive, handle and delete ``queue_url``'s messages until a receive is empty or less than
    ``reserve_ms`` of ``context``'s time is left."""
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    drained = Drained()
    while context.get_remaining_time_in_millis() >= reserve_ms:
        answer = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=RECEIVE_MAX,
            WaitTimeSeconds=RECEIVE_WAIT_S,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        drained.receives += 1
        messages: list[dict[str, Any]] = answer.get("Messages", [])
        if not messages:
            break
        drained.received += len(messages)
        failed = _failed(handle, sqs_event(messages, queue_arn), context)
        done = [m for m in messages if m["MessageId"] not in failed]
        drained.failed += len(messages) - len(done)
        drained.deleted += _delete(sqs, queue_url, done)
    if drained.received:
        logger.warning("stranded messages drained", extra=drained.answer())
    return drained


def _failed(handle: Handle, event: dict[str, Any], context: Any) -> set[str]:
    """The ids of the records the batch reported failed: every one when the batch failed whole
    (Powertools raises when all of them did)."""
    try:
        answer = handle(event, context)
    except BatchProcessingError:
        logger.exception("a stranded batch failed whole")
        return {record["messageId"] for record in event["Records"]}
    return {str(failure["itemIdentifier"]) for failure in answer["batchItemFailures"]}


def _delete(sqs: Any, queue_url: str, messages: list[dict[str, Any]]) -> int:
    """Delete ``messages`` (at most 10: one DeleteMessageBatch); returns how many were. One not
    deleted comes back after its visibility timeout, and fires nothing twice (its run's claim)."""
    if not messages:
        return 0
    answer = sqs.delete_message_batch(
        QueueUrl=queue_url,
        Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
    )
    failed = answer.get("Failed", [])
    if failed:
        logger.warning("stranded messages not deleted", extra={"failed": failed})
    return len(messages) - len(failed)
