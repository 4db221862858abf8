"""A Lambda function that is a task's ``lambda`` target, an SQS consumer of an ``sqs`` target, or a
job's processor (:func:`lambda_processor`).

These targets are NOT signed: Sundial signs HTTP calls only. A ``lambda`` target's event and an
``sqs`` target's message body are the callback's JSON as it is, with no ``webhook-*`` headers, so
these adapters parse and de-duplicate but cannot verify: who may invoke the function or send to
the queue is the function's resource policy's and the queue's policy's to decide (IAM).
"""

from __future__ import annotations

import base64
import functools
import logging
from collections.abc import Callable
from typing import Any

from sundial_receiver.callback import Callback, InvalidCallback
from sundial_receiver.dedupe import DEFAULT_TTL_SECONDS, Store
from sundial_receiver.jobs import JobProcessorReceiver
from sundial_receiver.receiver import Answer, Handler

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


def lambda_processor(receiver: JobProcessorReceiver) -> LambdaHandler:
    """The Lambda handler ``(event, context)`` of a job's processor, for either way Sundial calls it:

    - a ``lambda`` processor: Sundial invokes the function synchronously with the phase call's
      body as the event (not signed: IAM says who may invoke) and takes what it returns;
      :meth:`JobProcessorReceiver.invoke` answers (a failure raises: Sundial retries the step);
    - an ``http`` processor whose URL is the function's (a function URL, or API Gateway's HTTP
      or REST proxy): the event is the HTTP request, verified like any signed call (the
      receiver needs the signing secret), and the answer is the HTTP response."""

    def handler(event: Any, context: Any) -> Any:
        if isinstance(event, dict) and "requestContext" in event and "phase" not in event:
            return _http_answer(receiver, event)
        return receiver.invoke(event)

    return handler


def _http_answer(receiver: JobProcessorReceiver, event: dict[str, Any]) -> dict[str, Any]:
    """A function URL's (or API Gateway's) request event, answered in its response's shape."""
    request = event.get("requestContext") or {}
    method = (request.get("http") or {}).get("method") or event.get("httpMethod")
    if method != "POST":
        answer = Answer(405, {"error": "method_not_allowed"})
    else:
        body = event.get("body") or ""
        raw = base64.b64decode(body) if event.get("isBase64Encoded") else str(body).encode("utf-8")
        answer = receiver.handle(raw, {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()})
    return {
        "statusCode": answer.status,
        "headers": {"Content-Type": "application/json", **dict(answer.headers)},
        "body": answer.content().decode("utf-8"),
        "isBase64Encoded": False,
    }


def sqs_run_id(record: dict[str, Any]) -> str | None:
    """The ``Idempotency-Key`` message attribute of an SQS record (the run id), if any."""
    attribute = (record.get("messageAttributes") or {}).get("Idempotency-Key") or {}
    value = attribute.get("stringValue")
    return str(value) if value else None


__all__ = ["lambda_processor", "lambda_target", "sqs_batch", "sqs_run_id"]
