"""Queue records, parsed once at the function's edge into the models of shared/messages.py, and
the SQS event a function is handed, built from received messages."""

from __future__ import annotations

import base64
import hashlib
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from shared.observability import logger

R = TypeVar("R", bound=BaseModel)


class MalformedRecord(ValueError):
    """A record whose message is not what its queue carries. It fails alone (a partial batch
    failure): SQS hands it out again and, after its receives, moves it to the queue's dead-letter
    queue, where an operator can read it and this error in the function's log."""


def _problems(exc: ValidationError, whole: str) -> str:
    """Each wrong field of a validation, named by its path (``whole`` for the value itself)."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or whole}: {e['msg']}" for e in exc.errors())


def parsed(model: type[R], record: dict[str, Any]) -> R:
    """``record`` as ``model``, or :class:`MalformedRecord` saying which of its fields are wrong."""
    try:
        return model.model_validate(record)
    except ValidationError as exc:
        error = MalformedRecord(
            f"message {record.get('messageId')} is not a {model.__name__}: {_problems(exc, 'record')}"
        )
    logger.warning("malformed record", extra={"message_id": record.get("messageId"), "error": str(error)})
    raise error


class MalformedEvent(ValueError):
    """An asynchronous invocation's event that is not what its function takes. The invocation
    fails: Lambda retries it twice and then sends it to the function's on-failure destination
    (the dead-letter queue), where an operator can read it and this error in the function's log."""


def parsed_event(model: type[R], event: dict[str, Any]) -> R:
    """``event`` as ``model``, or :class:`MalformedEvent` saying which of its fields are wrong."""
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        error = MalformedEvent(f"the event is not a {model.__name__}: {_problems(exc, 'event')}")
    logger.warning("malformed event", extra={"error": str(error)})
    raise error


EVENT_ATTRIBUTES = ("ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp")
"""The system attributes of a standard queue's message that Lambda's SQS event source puts in each
record's ``attributes``, all of them strings (every recording of the event: tests/data/aws/sqs-event*.json)."""
FIFO_ATTRIBUTES = ("SequenceNumber", "MessageGroupId", "MessageDeduplicationId")
"""Added for a FIFO queue's message (ReceiveMessage answers them only there; recorded by LocalStack's
test_report_batch_item_failures)."""
TRACE_HEADER = "AWSTraceHeader"
"""Added when the message carries an X-Ray trace header, and only then (ReceiveMessage answers it
only then: "Amazon SQS and AWS X-Ray", AWS X-Ray developer guide,
https://docs.aws.amazon.com/xray/latest/devguide/xray-services-sqs.html). No recording of the event
has one."""


def _base64(value: bytes | str) -> str:
    return base64.b64encode(value.encode() if isinstance(value, str) else value).decode()


def _event_attribute(value: dict[str, Any]) -> dict[str, Any]:
    """A message attribute as ReceiveMessage answers it (``StringValue`` or ``BinaryValue``, the
    latter bytes once boto3 decoded it, and ``DataType``) in the event's form: camelCase, and both
    list values always there, empty (tests/data/aws/sqs-event-message-attributes.json; SQS takes
    no list values: "Not implemented. Reserved for future use", MessageAttributeValue in the
    Amazon SQS API Reference). A binary value goes as base64 text, as the event is JSON: no
    recording has one, and Sundial's own messages carry no attributes."""
    attribute: dict[str, Any] = {}
    if "StringValue" in value:
        attribute["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        attribute["binaryValue"] = _base64(value["BinaryValue"])
    attribute["stringListValues"] = list(value.get("StringListValues", []))
    attribute["binaryListValues"] = [_base64(v) for v in value.get("BinaryListValues", [])]
    attribute["dataType"] = value["DataType"]
    return attribute


def _record(message: dict[str, Any], queue_arn: str, region: str, batching_window: bool) -> dict[str, Any]:
    received = message.get("Attributes", {})
    names = [*EVENT_ATTRIBUTES, *(n for n in (*FIFO_ATTRIBUTES, TRACE_HEADER) if n in received)]
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {name: str(received[name]) for name in names if name in received},
        "messageAttributes": {
            name: _event_attribute(value) for name, value in message.get("MessageAttributes", {}).items()
        },
    }
    if message.get("MessageAttributes"):
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    elif batching_window:
        record["md5OfMessageAttributes"] = None
    record["md5OfBody"] = message.get("MD5OfBody") or hashlib.md5(message["Body"].encode()).hexdigest()  # noqa: S324 - SQS's own checksum
    record.update(eventSource="aws:sqs", eventSourceARN=queue_arn, awsRegion=region)
    return record


def sqs_event(messages: list[dict[str, Any]], queue_arn: str, *, batching_window: bool = False) -> dict[str, Any]:
    """``messages`` (as ReceiveMessage answers them, asked for every system attribute and every
    message attribute) as the event Lambda's SQS event source hands a function: the recovering
    trigger's drain builds it (functions/recover/drain.py), and so does the local runtime's event
    source (local/sqs_lambda.py).

    Each record has the keys and value types AWS records (tests/data/aws/sqs-event*.json,
    held by tests/integration/test_sqs_event_shape.py): the system attributes Lambda passes on
    and no others, the message attributes in the event's camelCase form, and
    ``md5OfMessageAttributes`` when the message has attributes. Without them AWS records it two
    ways: absent, from an event source without a batching window, and ``null`` from one with a
    window (``batching_window``), every recording of either kind alike."""
    region = queue_arn.split(":")[3]
    return {"Records": [_record(m, queue_arn, region, batching_window) for m in messages]}
