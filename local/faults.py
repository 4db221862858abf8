"""AWS's faults, injected into the local runtime on purpose (`make chaos`: verify/chaos.py).

moto answers every request, delivers every SQS message once per receive and never stops a Lambda
function: a green suite on it says nothing of what Sundial does when AWS does what its
documentation says it may. With ``LocalSettings.faults`` set (its variable is in local/settings.py; e.g.
``seed=7,throttle=0.02,duplicate=0.02,lapse=0.01,stop=0.005``) the runtime makes these happen at
random, each with its probability, from one seeded generator:

- ``throttle``, per DynamoDB write request (PutItem, UpdateItem, DeleteItem, BatchWriteItem,
  TransactWriteItems): the request is answered ``400 ProvisionedThroughputExceededException`` and
  not applied. "ThrottlingException / ProvisionedThroughputExceededException ... The AWS SDKs for
  DynamoDB automatically retry requests that receive this exception"
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html#Programming.Errors.MessagesAndCodes).
  It is injected at the HTTP send, under botocore's retries, as AWS's answer would be: most are
  retried away, a streak surfaces as the error.
- ``duplicate``, per SQS message received: a copy of it is sent to its queue, received later by
  another invocation. "Amazon SQS stores copies of your messages on multiple servers ... On rare
  occasions, one of the servers that stores a copy of a message might be unavailable when you
  receive or delete a message. If this occurs, the copy isn't deleted on that unavailable server,
  and you might get that message copy again when you receive messages"
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues-at-least-once-delivery.html).
  The copy carries the same body and attributes under a new message id (moto's sends make one):
  stricter than AWS's copy, which keeps its id, as nothing may be dropped by id.
- ``lapse``, per SQS message received: its visibility is ended at once, so another receive gets
  it while the first invocation still runs it (the same at-least-once page: a message "might be
  delivered more than once"; and "the visibility timeout ... doesn't guarantee against receiving
  a message twice",
  https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html).
- ``stop``, per call of an HTTP target: after the receiver answered, the invocation is stopped
  where it stands, as Lambda stops a function at its timeout: "Lambda ... stops the function"
  and, for an SQS event source, the whole batch is retried: "If your function times out ... the
  entire batch is considered failed and becomes visible again after the visibility timeout"
  (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html). Nothing after
  the call runs: the outcome is not recorded, no message is deleted.

Each injected fault is written as a JSON line to ``faults.jsonl`` in the data folder (the chaos
run reads it to explain a second call of one attempt)."""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from local.deadline import InvocationStopped, TimedOut

FAULTS_PATTERN = r"^((seed=\d{1,18}|(throttle|duplicate|lapse|stop)=(0(\.\d+)?|1(\.0+)?))(,|$))*$"
"""``name=value`` pairs, comma-separated: ``seed`` an integer, the others probabilities (0 to 1)."""

FAULTS_LOG = "faults.jsonl"
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
DYNAMODB_TARGET = "DynamoDB_20120810."


@dataclass(frozen=True)
class Faults:
    seed: int = 0
    throttle: float = 0.0
    duplicate: float = 0.0
    lapse: float = 0.0
    stop: float = 0.0

    @classmethod
    def parse(cls, spec: str) -> Faults:
        if not re.fullmatch(FAULTS_PATTERN, spec):
            raise ValueError(f"faults: {spec!r} is not name=value pairs (seed, throttle, duplicate, lapse, stop)")
        pairs = dict(part.split("=", 1) for part in spec.split(",") if part)
        chances = {f.name: float(pairs[f.name]) for f in fields(cls) if f.name != "seed" and f.name in pairs}
        return cls(seed=int(pairs.get("seed", 0)), **chances)

    @property
    def any(self) -> bool:
        return any((self.throttle, self.duplicate, self.lapse, self.stop))


class Injector:
    """Draws each fault from one generator (its draws are serialized: the runtime's threads share
    it) and writes what it injected to ``log`` (a JSON line each; None: nowhere)."""

    def __init__(self, faults: Faults, log: Path | None) -> None:
        self.faults = faults
        self._random = random.Random(faults.seed)  # noqa: S311 (faults drawn, not secrets)
        self._lock = threading.Lock()
        self._log = log

    def happens(self, probability: float) -> bool:
        if probability <= 0:
            return False
        with self._lock:
            return self._random.random() < probability

    def note(self, fault: str, **detail: Any) -> None:
        if self._log is None:
            return
        line = json.dumps({"fault": fault, "at": time.time(), **detail})  # wall: when, for the reader
        with self._lock, self._log.open("a", encoding="utf-8") as out:
            out.write(line + "\n")

    def invocation(self, handler: Callable[[dict[str, Any], Any], Any]) -> Callable[[dict[str, Any], Any], Any]:
        """A trigger's handler whose invocation, when stopped (an injected ``stop``), timed out
        (local/deadline.py) or failed (an error escaped it: a throttle that outlasted the
        retries, say), is noted with every
        occurrence of its batch: SQS delivers the whole batch again, and an occurrence whose call
        was made but whose outcome was not yet recorded is called again, with its run id and
        Idempotency-Key (docs/design.md 2.7)."""

        def invoke(event: dict[str, Any], context: Any) -> Any:
            try:
                return handler(event, context)
            except BaseException as exc:
                ended = (
                    "timed out"
                    if isinstance(exc, TimedOut)
                    else "stopped"
                    if isinstance(exc, InvocationStopped)
                    else "failed"
                )
                self.note("invocation", ended=ended, error=type(exc).__name__, runs=_runs_of(event))
                raise

        return invoke

    def invocations(self, handlers: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
        """Each of the triggers' ``handlers`` (by function) as :meth:`invocation` makes it."""
        return {name: self.invocation(handler) for name, handler in handlers.items()}


def _runs_of(event: dict[str, Any]) -> list[tuple[str, int]]:
    """The (run id, attempt) of each staged occurrence of an SQS event (shared/messages.py)."""
    runs = []
    for record in event.get("Records", []):
        try:
            body = json.loads(record["body"])
            runs.append((str(body["r"]), int(body.get("a", 1))))
        except (ValueError, KeyError, TypeError):
            continue
    return runs


class _Raw:
    """What botocore reads an answer's body from."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


def throttled(request: Any) -> Any:
    """DynamoDB's answer to a throttled request (its JSON protocol: ``__type`` and ``message``)."""
    from botocore.awsrequest import AWSResponse

    body = json.dumps(
        {
            "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
            "message": "The level of configured provisioned throughput for the table was exceeded (injected)",
        }
    ).encode()
    headers = {"Content-Type": "application/x-amz-json-1.0", "Content-Length": str(len(body))}
    return AWSResponse(request.url, 400, headers, _Raw(body))


def dynamodb_write(request: Any) -> str | None:
    """The DynamoDB write operation a prepared request makes (None: not one)."""
    target = request.headers.get("X-Amz-Target")
    if isinstance(target, bytes):
        target = target.decode()
    if not target or not target.startswith(DYNAMODB_TARGET):
        return None
    operation = target.removeprefix(DYNAMODB_TARGET)
    return operation if operation in WRITES else None


Undo = Callable[[], None]


def install(injector: Injector) -> Undo:
    """Patch this process: botocore's send, the HTTP client's call, the SQS receives. Returns
    what puts them back (for the tests; the runtime keeps them until it exits)."""
    faults = injector.faults
    undo: list[Undo] = []
    if faults.throttle:
        undo.append(_throttle_writes(injector))
    if faults.stop:
        undo.append(_stop_after_calls(injector))
    if faults.duplicate or faults.lapse:
        undo.append(_disturb_receives(injector))

    def undo_all() -> None:
        for restore in reversed(undo):
            restore()

    return undo_all


def _throttle_writes(injector: Injector) -> Undo:
    from botocore.endpoint import Endpoint

    send = Endpoint._send

    def _send(self: Any, request: Any) -> Any:
        operation = dynamodb_write(request)
        if operation is not None and injector.happens(injector.faults.throttle):
            injector.note("throttle", operation=operation)
            return throttled(request)
        return send(self, request)

    Endpoint._send = _send
    return lambda: setattr(Endpoint, "_send", send)


def _stop_after_calls(injector: Injector) -> Undo:
    from shared.delivery.envelope import Envelope
    from shared.delivery.http import HttpDelivery

    call = HttpDelivery.call

    def stopping_call(self: HttpDelivery, target: Any, envelope: Any) -> Any:
        outcome = call(self, target, envelope)
        if isinstance(envelope, Envelope) and injector.happens(injector.faults.stop):
            injector.note("stop", run_id=envelope.run_id, attempt=envelope.attempt, status=outcome.status)
            raise InvocationStopped(f"run {envelope.run_id} attempt {envelope.attempt}: stopped after its call")
        return outcome

    HttpDelivery.call = stopping_call  # type: ignore[method-assign]
    return lambda: setattr(HttpDelivery, "call", call)


def _disturb_receives(injector: Injector) -> Undo:
    """Both receive paths: the wall clock's pollers (local/sqs_lambda.py) and the virtual clock's
    advance (local/advance.py)."""
    from local import advance, sqs_lambda

    receive = sqs_lambda.receive

    def disturbed(client: Any, queue_url: str, batch_size: int = 10, wait_s: float = 1) -> list[dict[str, Any]]:
        messages = receive(client, queue_url, batch_size, wait_s)
        for message in messages:
            if injector.happens(injector.faults.duplicate):
                injector.note("duplicate", message_id=message["MessageId"], body=message["Body"][:200])
                _send_copy(client, queue_url, message)
            if injector.happens(injector.faults.lapse):
                injector.note("lapse", message_id=message["MessageId"], body=message["Body"][:200])
                client.change_message_visibility(
                    QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
        return messages

    sqs_lambda.receive = disturbed
    advance.receive = disturbed

    def undo() -> None:
        sqs_lambda.receive = receive
        advance.receive = receive

    return undo


def _send_copy(client: Any, queue_url: str, message: dict[str, Any]) -> None:
    attributes = {
        name: {key: value for key, value in attribute.items() if key in ("DataType", "StringValue", "BinaryValue")}
        for name, attribute in message.get("MessageAttributes", {}).items()
    }
    client.send_message(QueueUrl=queue_url, MessageBody=message["Body"], MessageAttributes=attributes)


def install_faults(spec: str, data: str) -> Injector | None:
    """Install the faults ``spec`` names (None: it names none); their log goes to the data folder
    ``data`` when there is one."""
    faults = Faults.parse(spec)
    if not faults.any:
        return None
    injector = Injector(faults, Path(data) / FAULTS_LOG if data else None)
    install(injector)
    return injector
