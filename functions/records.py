"""Queue records, parsed once at the function's edge into the models of shared/messages.py, and
the SQS event a function is handed, built from received messages."""

from __future__ import annotations

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


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """``messages`` (as ReceiveMessage answers them) as the event Lambda's SQS event source hands
    a function: the recovering trigger's drain builds it (functions/recover/drain.py), and so does
    the local runtime's event source (local/sqs_lambda.py)."""
    region = queue_arn.split(":")[3]
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {k: str(v) for k, v in m.get("Attributes", {}).items()},
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody") or hashlib.md5(m["Body"].encode()).hexdigest(),  # noqa: S324 - SQS's own checksum
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
            for m in messages
        ]
    }
