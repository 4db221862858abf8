"""Lambda's SQS event source, for the local runtime and the tests: receive up to a batch, build
the event Lambda would, call the handler, delete what it did not report as failed. Failed
messages stay in flight until their visibility timeout and come back; after maxReceiveCount
receives SQS (moto) redrives them to the dead-letter queue. A batch that continues a chain the
function is not allowed to continue is not handed over (Lambda's recursive loop detection,
local/recursion.py): its messages go to the queue's redrive target, as AWS moves them."""

from __future__ import annotations

import functools
import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from functions.records import sqs_event
from local import recursion
from local.apigw import LocalContext
from local.queues import QUEUE_PREFIX
from shared.settings.tuning import MAX_DELAY_QUEUES
from shared.topology import EVENT_SOURCE_LONG_POLL_S, ConsumerSpec, consumers

Handler = Callable[[dict[str, Any], Any], Any]


RECEIVED_AT = "LocalReceivedAt"
"""A message's own key, set by :func:`receive`: the monotonic time it was received at."""


def receive(client: Any, queue_url: str, batch_size: int = 10, wait_s: float = 1) -> list[dict[str, Any]]:
    """Up to ``batch_size`` messages, with every system attribute and every message attribute:
    what the event Lambda builds carries (functions/records.py, ``sqs_event``)."""
    answer = client.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=batch_size,
        WaitTimeSeconds=round(wait_s),
        MessageSystemAttributeNames=["All"],
        MessageAttributeNames=["All"],
    )
    messages: list[dict[str, Any]] = answer.get("Messages", [])
    received = time.monotonic()
    for message in messages:
        message[RECEIVED_AT] = received  # when its visibility timeout started (InvisibleWhileInvoked)
    return messages


@functools.cache
def _consumers() -> dict[str, ConsumerSpec]:
    return {c.queue: c for c in consumers(MAX_DELAY_QUEUES)}


def _queue_name(queue_arn: str) -> str:
    return queue_arn.rsplit(":", 1)[-1].removeprefix(QUEUE_PREFIX)


def consumer_of(queue_arn: str) -> str:
    """The function the topology has consume the queue (``sundial-<its topology name>``); a queue
    of no consumer's answers its own name (a function no stack deploys: never allowed recursion)."""
    name = _queue_name(queue_arn)
    spec = _consumers().get(name)
    return spec.function if spec else name


def has_batching_window(queue_arn: str) -> bool:
    """Whether the stack's event source on the queue gathers batches for a while (its
    MaximumBatchingWindowInSeconds): the event's records differ by it (``sqs_event``)."""
    spec = _consumers().get(_queue_name(queue_arn))
    return bool(spec and spec.batching_window_s)


def invoke_batch(
    client: Any, queue_url: str, queue_arn: str, handler: Handler, messages: list[dict[str, Any]]
) -> list[str]:
    """Hand one received batch to the handler as Lambda would; returns the failed message ids."""
    if not messages:
        return []
    function = consumer_of(queue_arn)
    if recursion.stopped(function, messages):
        move_to_redrive_target(client, queue_url, messages)
        return []
    try:
        with recursion.invocation(function, messages), kept_invisible(client, queue_url, messages):
            event = sqs_event(messages, queue_arn, batching_window=has_batching_window(queue_arn))
            answer = handler(event, LocalContext())
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


class InvisibleWhileInvoked:
    """Keeps the messages of every batch a handler is still working on out of sight, as AWS does
    by construction: Lambda refuses an SQS event source whose queue's visibility timeout is less
    than the function's timeout ("Queue visibility timeout ... is less than Function timeout",
    https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html), and it stops an
    invocation at its timeout, so a message never comes back while the invocation that holds it
    still runs. Here nothing stops a handler, and a batch that outlives its messages' visibility
    on a loaded machine (a trigger's batch of slow calls, or only starved of the CPU) would be
    received and handed over a second time while the first is under way: a second claim after
    the first's lease ran out, and the occurrence fired twice (an integration test did, beside
    the other suites). One thread watches every batch under way, and, half a visibility timeout
    after the messages were received or last hidden, hides them for another visibility timeout.
    A batch that ends (done, failed or raised) is let go: its failed messages come back after
    their visibility timeout, as on AWS."""

    PERIOD_S = 0.2

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batches: dict[int, _Invoked] = {}
        self._watcher: threading.Thread | None = None

    @contextmanager
    def held(self, client: Any, queue_url: str, messages: list[dict[str, Any]]) -> Iterator[None]:
        # hidden since its receive: a batch may have waited for its batching window or a worker
        received = min((m.get(RECEIVED_AT, math.inf) for m in messages), default=math.inf)
        invoked = _Invoked(client, queue_url, messages, hidden_at=min(received, time.monotonic()))
        with self._lock:
            self._batches[id(invoked)] = invoked
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="invisible-while-invoked", daemon=True)
                self._watcher.start()
        try:
            yield
        finally:
            with self._lock:
                self._batches.pop(id(invoked), None)

    def _watch(self) -> None:
        while True:
            time.sleep(self.PERIOD_S)  # a watchdog's period, not a wait on anything
            with self._lock:
                batches = list(self._batches.values())
            for invoked in batches:
                with suppress(Exception):  # a batch that ended meanwhile: its handles are gone
                    invoked.hide_again_if_due(time.monotonic())


LOOK_AFTER_S = 0.5
"""How long a batch runs before its queue's visibility timeout is read: half the least one the
runtime and the tests give a queue a handler works on (1 s, the stranding tests'), so its batch
is hidden again in time."""


@dataclass
class _Invoked:
    client: Any
    queue_url: str
    messages: list[dict[str, Any]]
    hidden_at: float
    visibility_s: float | None = None

    def hide_again_if_due(self, now: float) -> None:
        if now - self.hidden_at < LOOK_AFTER_S:
            return  # most batches end sooner: no queue attributes read for them
        if self.visibility_s is None:
            attributes = self.client.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["VisibilityTimeout"])
            self.visibility_s = float(attributes["Attributes"]["VisibilityTimeout"])
        if now - self.hidden_at < self.visibility_s / 2:
            return
        for start in range(0, len(self.messages), 10):
            entries = [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": int(self.visibility_s)}
                for i, m in enumerate(self.messages[start : start + 10])
            ]
            self.client.change_message_visibility_batch(QueueUrl=self.queue_url, Entries=entries)
        self.hidden_at = now


_INVISIBLE = InvisibleWhileInvoked()


def kept_invisible(client: Any, queue_url: str, messages: list[dict[str, Any]]) -> AbstractContextManager[None]:
    """While the handler works on ``messages``, they stay out of sight (:class:`InvisibleWhileInvoked`)."""
    return _INVISIBLE.held(client, queue_url, messages)


def move_to_redrive_target(client: Any, queue_url: str, messages: list[dict[str, Any]]) -> None:
    """Move ``messages`` to the queue's redrive target, with their trace headers."""
    policy = client.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["RedrivePolicy"])
    target_arn = json.loads(policy["Attributes"]["RedrivePolicy"])["deadLetterTargetArn"]
    target = client.get_queue_url(QueueName=target_arn.rsplit(":", 1)[-1])["QueueUrl"]
    for message in messages:
        trace = (message.get("Attributes") or {}).get(recursion.TRACE_HEADER)
        extra = {"MessageSystemAttributes": {recursion.TRACE_HEADER: {"DataType": "String", "StringValue": trace}}}
        client.send_message(QueueUrl=target, MessageBody=message["Body"], **(extra if trace else {}))
        client.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


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


class EventSource:
    """How Lambda's SQS event source scales, for the local runtime: at most ``max_concurrency``
    batches of this event source in flight, and when that many are, no receive (the messages wait
    in the queue, their receives untouched: "Lambda doesn't read more messages from the queue"
    once an event source reaches its maximum concurrency, "Using Lambda with Amazon SQS"). The
    function's own limit (``function_slots``: its reserved concurrency, shared by its event
    sources) is another matter: a batch received while the function has no free slot is
    throttled, not invoked; its messages stay in flight until their visibility timeout and come
    back with one receive more, which is how throttling walks messages to the dead-letter queue
    (hence ``sundial:highPriorityReservedConcurrency`` is never below the lane's cap)."""

    def __init__(self, max_concurrency: int, function_slots: threading.Semaphore | None = None) -> None:
        self.max_concurrency = max_concurrency
        self.function_slots = function_slots
        self.in_flight = 0
        self.throttled = 0
        """Batches received that the function's limit refused."""
        self._changed = threading.Condition()

    def wait_for_room(self, stopping: threading.Event | None = None, timeout: float = 0.5) -> bool:
        """Block until fewer than ``max_concurrency`` batches are in flight (False: stopping)."""
        with self._changed:
            while self.in_flight >= self.max_concurrency:
                if stopping is not None and stopping.is_set():
                    return False
                self._changed.wait(timeout)
        return True

    def begin(self) -> bool:
        """A received batch is to be invoked: it counts against the event source's concurrency
        until :meth:`end`. False: the function's limit throttles it (it is not invoked, and its
        messages stay in flight until their visibility timeout)."""
        if self.function_slots is not None and not self.function_slots.acquire(blocking=False):
            with self._changed:
                self.throttled += 1
            return False
        with self._changed:
            self.in_flight += 1
        return True

    def end(self) -> None:
        with self._changed:
            self.in_flight -= 1
            self._changed.notify_all()
        if self.function_slots is not None:
            self.function_slots.release()

    def run(self, invoke: Callable[[], object]) -> bool:
        """Invoke one batch (``invoke()``) as this event source does; False: throttled."""
        if not self.begin():
            return False
        try:
            invoke()
        finally:
            self.end()
        return True


def poll(
    client: Any,
    queue_url: str,
    queue_arn: str,
    handler: Handler,
    consumer: ConsumerSpec,
    event_source: EventSource,
    *,
    submit: Callable[[Callable[[list[dict[str, Any]]], None], list[dict[str, Any]]], object],
    stopping: threading.Event,
    wait_s: float = EVENT_SOURCE_LONG_POLL_S,
) -> None:
    """Lambda's SQS poller, until ``stopping``: receive while the event source has room, hand the
    messages to the batching window, which hands each batch to ``submit(invoke, batch)`` (a
    worker of the function's), and go straight back."""

    def invoke(batch: list[dict[str, Any]]) -> None:
        try:
            invoke_batch(client, queue_url, queue_arn, handler, batch)
        finally:
            event_source.end()

    def dispatch(batch: list[dict[str, Any]]) -> None:
        if not event_source.begin():
            return
        try:
            submit(invoke, batch)
        except RuntimeError:  # the function's workers are shut down: the runtime is stopping
            event_source.end()
            if not stopping.is_set():
                raise
            # the batch stays in flight and comes back after its visibility timeout, as the
            # messages of a Lambda host that went away do

    window = BatchingWindow(consumer.batch_size, consumer.batching_window_s, dispatch)
    while not stopping.is_set():
        if not event_source.wait_for_room(stopping):
            return
        try:
            messages = receive(client, queue_url, min(consumer.batch_size, 10), wait_s=wait_s)
        except Exception:
            if stopping.wait(0.5):
                return
            continue
        if messages:
            window.add(messages)
