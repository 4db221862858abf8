"""A Lambda function that is a task's ``lambda`` target, and an SQS consumer of an ``sqs`` target.

These targets are NOT signed: Sundial signs HTTP calls only. A ``lambda`` target's event and an
``sqs`` target's message body are the callback's JSON as it is, with no ``webhook-*`` headers, so
these adapters parse and de-duplicate but cannot verify: who may invoke the function or send to
the queue is the function's resource policy's and the queue's policy's to decide (IAM).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from sundial_receiver.callback import Callback, InvalidCallback
from sundial_receiver.dedupe import DEFAULT_TTL_SECONDS, Store
from sundial_receiver.receiver import Handler

log = logging.getLogger("sundial_receiver")

LambdaHandler = Callable[[Any, Any], Any]


def lambda_target(store: Store, ttl: int = DEFAULT_TTL_SECONDS) -> Callable[[Handler], LambdaHandler]:
    """Decorate ``handler(callback)`` into a Lambda handler ``(event, context)`` for a ``lambda``
    target: the event is parsed into a :class:`Callback`; a run id seen before is skipped
    (answers ``{"status": "duplicate"}``); a handler that raises releases its run id and the
    exception propagates, so Lambda's asynchronous retries (and its on-failure destination) see
    it. Sundial invokes asynchronously: its run succeeded when Lambda accepted the event."""

    def decorate(handler: Handler) -> LambdaHandler:
        @functools.wraps(handler)
        def wrapper(event: Any, context: Any) -> Any:
            callback = Callback.parse(event) if isinstance(event, str | bytes) else Callback.from_dict(event)
            if not store.claim(callback.run_id, ttl):
                return {"status": "duplicate", "run_id": callback.run_id}
            try:
                result = handler(callback)
            except Exception:
                store.release(callback.run_id)
                raise
            return {"status": "processed", "run_id": callback.run_id, "result": result}

        return wrapper

    return decorate


def sqs_batch(store: Store, ttl: int = DEFAULT_TTL_SECONDS) -> Callable[[Handler], LambdaHandler]:
    """Decorate ``handler(callback)`` into the Lambda handler of an SQS event source mapping with
    ``ReportBatchItemFailures``: each record's body is parsed; a run id seen before is skipped;
    a record whose handler raised (its run id released) or that is not a callback is reported in
    ``batchItemFailures``, so only it comes back (and reaches the queue's dead-letter queue
    after its ``maxReceiveCount``)."""

    def decorate(handler: Handler) -> LambdaHandler:
        @functools.wraps(handler)
        def wrapper(event: Any, context: Any) -> dict[str, list[dict[str, str]]]:
            failures: list[dict[str, str]] = []
            for record in (event or {}).get("Records", []):
                message_id = str(record.get("messageId", ""))
                try:
                    callback = Callback.parse(record.get("body") or "")
                except InvalidCallback:
                    log.exception("SQS message %s is not a Sundial callback", message_id)
                    failures.append({"itemIdentifier": message_id})
                    continue
                if not store.claim(callback.run_id, ttl):
                    continue
                try:
                    handler(callback)
                except Exception:
                    log.exception("processing run %s failed: released, the message comes back", callback.run_id)
                    store.release(callback.run_id)
                    failures.append({"itemIdentifier": message_id})
            return {"batchItemFailures": failures}

        return wrapper

    return decorate


def sqs_run_id(record: dict[str, Any]) -> str | None:
    """The ``Idempotency-Key`` message attribute of an SQS record (the run id), if any."""
    attribute = (record.get("messageAttributes") or {}).get("Idempotency-Key") or {}
    value = attribute.get("stringValue")
    return str(value) if value else None


__all__ = ["lambda_target", "sqs_batch", "sqs_run_id"]
