"""Lambda's SQS event source, for the local runtime and the tests: receive up to a batch, build
the event Lambda would, call the handler, delete what it did not report as failed. Failed
messages stay in flight until their visibility timeout and come back; after maxReceiveCount
receives SQS (moto) redrives them to the dead-letter queue."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

from local.apigw import LocalContext

Handler = Callable[[dict[str, Any], Any], Any]


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {k: str(v) for k, v in m.get("Attributes", {}).items()},
                "messageAttributes": {},
                "md5OfBody": hashlib.md5(m["Body"].encode()).hexdigest(),  # noqa: S324 - SQS's own checksum
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
    }


def receive(client: Any, queue_url: str, batch_size: int = 10, wait_s: int = 1) -> list[dict[str, Any]]:
    answer = client.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=batch_size,
        WaitTimeSeconds=wait_s,
        MessageSystemAttributeNames=["All"],
    )
    messages: list[dict[str, Any]] = answer.get("Messages", [])
    return messages


def invoke_batch(
    client: Any, queue_url: str, queue_arn: str, handler: Handler, messages: list[dict[str, Any]]
) -> list[str]:
    """Hand one received batch to the handler as Lambda would; returns the failed message ids."""
    if not messages:
        return []
    try:
        answer = handler(sqs_event(messages, queue_arn), LocalContext())
    except Exception:
        return [m["MessageId"] for m in messages]
    failed = {f["itemIdentifier"] for f in (answer or {}).get("batchItemFailures", [])}
    done = [m for m in messages if m["MessageId"] not in failed]
    for start in range(0, len(done), 10):
        client.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done[start : start + 10])
            ],
        )
    return sorted(failed)


class BatchingWindow:
    """Lambda's batching window for one event source: a batch goes to ``dispatch`` as soon as it
    holds ``size`` messages, or when its first message has waited ``window_s``, whichever comes
    first. The poller hands messages over and goes straight back to receiving."""

    def __init__(self, size: int, window_s: float, dispatch: Callable[[list[dict[str, Any]]], object]) -> None:
        self.size = size
        self.window_s = window_s
        self._dispatch = dispatch
        self._pending: list[dict[str, Any]] = []
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def add(self, messages: list[dict[str, Any]]) -> None:
        ready: list[list[dict[str, Any]]] = []
        with self._lock:
            self._pending.extend(messages)
            while len(self._pending) >= self.size:
                ready.append(self._pending[: self.size])
                del self._pending[: self.size]
                self._stop_timer()
            if self._pending and self.window_s <= 0:
                ready.append(self._pending)
                self._pending = []
            elif self._pending and self._timer is None:
                self._timer = threading.Timer(self.window_s, self.flush)
                self._timer.daemon = True
                self._timer.start()
        for batch in ready:
            self._dispatch(batch)

    def flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
            self._stop_timer()
        if batch:
            self._dispatch(batch)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
