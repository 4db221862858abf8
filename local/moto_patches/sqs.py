"""SQS long polling returns as soon as a message becomes receivable; moto's notices a message
that was delayed (or whose visibility timeout ran out) only when its one-second wait ends, so a
delayed message reached a poller up to a second late. Sundial's staging lead and the trigger
consumers' batching window are sized for AWS's behaviour, so wherever moto stands in for SQS
(the local runtime's moto process, the tests) a long poll wakes when the next message is due."""

from __future__ import annotations

import functools
import threading
from typing import Any

from local.moto_patches.atomic import lock_methods

_SLACK_S = 0.002
"""moto's visibility check is strict (``now > visible_at``): wake just after the moment."""


def make_long_polling_prompt() -> None:
    import moto.sqs.models as sqs_models
    from moto.sqs.models import Queue

    if getattr(Queue.wait_for_messages, "_sundial_prompt", False):
        return

    def wait_for_messages(self: Any, timeout: float) -> None:
        now = sqs_models.unix_time_millis()  # looked up now: local/moto_patches/clock.py may have replaced it
        pending = [
            at for message in list(self._messages) if (at := max(message.delayed_until, message.visible_at)) > now
        ]
        wait = timeout if not pending else min(timeout, (min(pending) - now) / 1000 + _SLACK_S)
        with self._messages_lock:
            self._messages_lock.wait_for(lambda: self.messages, timeout=wait)

    wait_for_messages._sundial_prompt = True  # type: ignore[attr-defined]
    Queue.wait_for_messages = wait_for_messages  # type: ignore[method-assign]


def make_receive_linear() -> None:
    """moto checks each message it is about to return against the queue's retention period by
    building all of the queue's attributes, twice (``get_queue_attributes``), and those count
    every message of the queue three times: a receive cost O(messages returned x messages
    queued). The delay queues hold every task staged until its due time (thousands in `make
    bench`), so receives took most of the moto process at 100 fires a second. Wherever moto
    stands in for SQS the check reads the retention period itself: the same answer, without
    the counts. An upstream fix (``is_message_valid_based_on_retention_period`` reading
    ``queue.message_retention_period``) would be the better place."""
    from moto.core.utils import unix_time
    from moto.sqs.models import SQSBackend

    if getattr(SQSBackend.is_message_valid_based_on_retention_period, "_sundial_linear", False):
        return

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
        retention_period = self.get_queue(queue_name).message_retention_period
        return bool(int(retention_period) + message.sent_timestamp / 1000 > unix_time())

    is_message_valid_based_on_retention_period._sundial_linear = True  # type: ignore[attr-defined]
    SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period  # type: ignore[method-assign]


_SENDING = threading.local()
_COUNTS = (
    "approximate_number_of_messages",
    "approximate_number_of_messages_delayed",
    "approximate_number_of_messages_not_visible",
)


def make_send_linear() -> None:
    """moto reads whether a queue deduplicates by content from all of the queue's attributes
    (``queue.attributes.get("ContentBasedDeduplication")``), built anew for every message sent:
    three of them count every message of the queue. A send cost O(messages queued) per message,
    and the scanner's staging into delay queues holding thousands of staged tasks was three
    quarters of the moto process's time at 100 fires a second (a sampling profile of `make
    bench`). Wherever moto stands in for SQS, while a thread sends a message the three counts
    read 0: nothing a send does reads them (it reads that one attribute), and every other
    reader, GetQueueAttributes included, still counts. An upstream fix (``send_message``
    reading ``queue.content_based_deduplication``) would be the better place."""
    from moto.sqs.models import Queue, SQSBackend

    if getattr(SQSBackend.send_message, "_sundial_linear", False):
        return
    send = SQSBackend.send_message

    def send_message(self: Any, *args: Any, **kwargs: Any) -> Any:
        _SENDING.active = True
        try:
            return send(self, *args, **kwargs)
        finally:
            _SENDING.active = False

    for name in _COUNTS:
        counted = getattr(Queue, name)

        def count(self: Any, __counted: Any = counted) -> int:
            if getattr(_SENDING, "active", False):
                return 0
            value: int = __counted.fget(self)
            return value

        setattr(Queue, name, property(functools.wraps(counted.fget)(count)))
    functools.update_wrapper(send_message, send)
    send_message._sundial_linear = True  # type: ignore[attr-defined]
    SQSBackend.send_message = send_message  # type: ignore[method-assign]


_BATCH = threading.local()


def make_batch_keep_trace_headers() -> None:
    """A SendMessageBatch entry's ``MessageSystemAttributes`` (the ``AWSTraceHeader`` that carries
    Lambda's recursion lineage, local/recursion.py) are kept with its message, as SQS keeps them;
    moto's batch drops them (its SendMessage keeps them). Each entry's attributes reach the
    message as it is created (not after: a waiting poller could receive it in between)."""
    from moto.sqs.models import SQSBackend

    if getattr(SQSBackend.send_message_batch, "_sundial_trace", False):
        return
    send_batch = SQSBackend.send_message_batch
    send = SQSBackend.send_message

    def send_message_batch(self: Any, queue_name: str, entries: dict[str, dict[str, Any]]) -> Any:
        _BATCH.pending = [entry.get("MessageSystemAttributes") for entry in entries.values()]
        try:
            return send_batch(self, queue_name, entries)
        finally:
            _BATCH.pending = None

    def send_message(self: Any, *args: Any, **kwargs: Any) -> Any:
        pending = getattr(_BATCH, "pending", None)
        if pending:  # one entry of the batch being sent, in order
            attributes = pending.pop(0)
            if attributes and not kwargs.get("system_attributes"):
                kwargs["system_attributes"] = attributes
        return send(self, *args, **kwargs)

    functools.update_wrapper(send_message_batch, send_batch)
    functools.update_wrapper(send_message, send)
    send_message_batch._sundial_trace = True  # type: ignore[attr-defined]
    SQSBackend.send_message_batch = send_message_batch  # type: ignore[method-assign]
    SQSBackend.send_message = send_message  # type: ignore[method-assign]


def make_pending_groups_safe() -> None:
    """moto's receive reads a queue's pending message groups by iterating the set of messages in
    flight, which a delete on another thread changes meanwhile ("Set changed size during
    iteration": a receive failed in the tests' pipeline while a trigger deleted its batch). SQS
    serves concurrent receives and deletes; here the receive reads a copy of the set (made in one
    step under the interpreter lock)."""
    from moto.sqs.models import Queue

    if getattr(Queue.pending_message_groups, "_sundial_safe", False):
        return

    def pending_message_groups(self: Any) -> set[str]:
        return {message.group_id for message in tuple(self._pending_messages) if message.group_id is not None}

    pending_message_groups._sundial_safe = True  # type: ignore[attr-defined]
    Queue.pending_message_groups = property(pending_message_groups)  # type: ignore[assignment,method-assign]


QUEUE_CHANGES = (
    "create_queue",
    "delete_queue",
    "set_queue_attributes",
    "list_queues",
    "list_dead_letter_source_queues",
)
"""The backend's methods that add or remove an account's queues, or iterate them (a redrive
policy's dead-letter queue is looked up by iterating them, in CreateQueue and SetQueueAttributes)."""


def make_queue_changes_serial() -> None:
    """moto's CreateQueue with a redrive policy looks its dead-letter queue up by iterating the
    account's queues, which a CreateQueue on another thread changes meanwhile ("dictionary changed
    size during iteration": a `make test` run failed so, the integration tests' queues being
    created on four threads, as the runtime creates its own at its start: local/queues.py). SQS
    serves concurrent CreateQueue calls (one of a name it already has answers that queue:
    https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html);
    here the calls that change or iterate the queues hold local/moto_patches/atomic.py's lock, one
    at a time. Queues are made at a start, so the lock costs nothing after."""
    from moto.sqs.models import SQSBackend

    lock_methods(SQSBackend, QUEUE_CHANGES)


THROTTLE_TAG = "sundial-local:throttle-sends"
"""A queue tagged with it (a count) refuses that many more SendMessage calls as throttled."""


def make_sends_throttleable() -> None:
    """A fault for tests of AWS targets that no moto queue shows by itself: SQS refuses a send
    past its queue's rate with ``RequestThrottled`` (HTTP 400; the SendMessage API reference's
    errors), which a sender retries. A queue tagged :data:`THROTTLE_TAG` with a count refuses
    that many more SendMessage calls so (the count going down by one each), and then sends as
    any queue; a queue without the tag is untouched. Only the local runtime's moto has it: a
    test makes a target throttle by tagging its queue."""
    from moto.sqs.exceptions import SQSException
    from moto.sqs.models import SQSBackend

    if getattr(SQSBackend.send_message, "_sundial_throttle", False):
        return
    send = SQSBackend.send_message

    def send_message(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        tags = self.get_queue(queue_name).tags
        left = int(tags.get(THROTTLE_TAG) or 0)
        if left > 0:
            tags[THROTTLE_TAG] = str(left - 1)
            raise SQSException("RequestThrottled", "Request is throttled (the queue's sundial-local tag).")
        return send(self, queue_name, *args, **kwargs)

    functools.update_wrapper(send_message, send)
    send_message._sundial_throttle = True  # type: ignore[attr-defined]
    SQSBackend.send_message = send_message  # type: ignore[method-assign]


def make_named_attributes_cheap() -> None:
    """GetQueueAttributes for named attributes builds all of the queue's attributes twice per name
    asked for (``name in queue.attributes``, then ``queue.attributes.get(name)``), and each build
    counts every message of the queue three times. A trigger batch that runs past half a second
    reads its queue's ``VisibilityTimeout`` (local/sqs_lambda.py), and a delay queue holds every
    task staged until its due time: at 100 fires a second these reads were an eighth of the moto
    process's time (a sampling profile, docs/results.md). Wherever moto stands in for SQS a named
    attribute is computed alone, by the rules ``Queue.attributes`` builds it with (the FIFO ones
    on a FIFO queue, the KMS ones with a key, booleans as ``true``/``false``, the redrive policy as
    JSON); ``All`` still builds them all. tests/integration/test_moto_fidelity.py compares both."""
    from moto.sqs.models import Queue, SQSBackend

    if getattr(SQSBackend.get_queue_attributes, "_sundial_named", False):
        return
    original = SQSBackend.get_queue_attributes

    def get_queue_attributes(self: Any, queue_name: str, attribute_names: list[str]) -> dict[str, Any]:
        if not attribute_names or "All" in attribute_names:
            return original(self, queue_name, attribute_names)
        queue = self.get_queue(queue_name)
        valid = ["All", *Queue.BASE_ATTRIBUTES, *Queue.FIFO_ATTRIBUTES, *Queue.KMS_ATTRIBUTES]
        if any(name not in valid for name in attribute_names):
            return original(self, queue_name, attribute_names)  # its error
        attributes: dict[str, Any] = {}
        for name in attribute_names:
            present, value = named_attribute(queue, name)
            if present and value is not None:
                attributes[name] = value
        return attributes

    functools.update_wrapper(get_queue_attributes, original)
    get_queue_attributes._sundial_named = True  # type: ignore[attr-defined]
    SQSBackend.get_queue_attributes = get_queue_attributes  # type: ignore[method-assign]


def named_attribute(queue: Any, name: str) -> tuple[bool, Any]:
    """Whether ``Queue.attributes`` holds ``name``, and its value there, computed alone."""
    import json

    from moto.core.utils import camelcase_to_underscores

    if name in queue.FIFO_ATTRIBUTES and not queue.fifo_queue:
        return False, None
    if name in queue.KMS_ATTRIBUTES and not queue.kms_master_key_id:
        return False, None
    if name == "RedrivePolicy" and queue.redrive_policy:
        return True, json.dumps(queue.redrive_policy)
    value = getattr(queue, camelcase_to_underscores(name))
    return True, str(value).lower() if isinstance(value, bool) else value


def make_clock_cheap() -> None:
    """moto's SQS reads the time through ``unix_time`` and ``unix_time_millis``, which build two
    ``datetime``s and subtract them; a receive asks it twice per message of the queue (each
    message's ``visible`` and ``delayed``), so with thousands of staged messages in a delay queue
    the clock was a sixth of the moto process at 100 fires a second (docs/results.md). Wherever
    moto stands in for SQS its module reads ``time.time()`` instead: the same instant (``utcnow``
    is ``time.time()`` in a ``datetime``), in a few hundredths of the time. A time given
    (``unix_time(dt)``) is converted as before. local/moto_patches/clock.py replaces ``unix_time_millis``
    again on the virtual clock."""
    import time

    import moto.sqs.models as sqs_models
    from moto.core import utils

    if getattr(sqs_models.unix_time, "_sundial_cheap", False):
        return

    def unix_time(dt: Any = None) -> float:
        return time.time() if dt is None else utils.unix_time(dt)  # wall: moto's SQS clock, as utcnow is

    def unix_time_millis(dt: Any = None) -> float:
        return time.time() * 1000.0 if dt is None else utils.unix_time_millis(dt)  # wall: as above

    unix_time._sundial_cheap = True  # type: ignore[attr-defined]
    sqs_models.unix_time = unix_time
    sqs_models.unix_time_millis = unix_time_millis


def make_queue_attributes_named_once() -> None:
    """moto builds a queue's attributes (``Queue.attributes``: every send reads one of them) by
    turning each attribute's name into its field's, ``camelcase_to_underscores``, a loop over the
    name's characters: fourteen names per build, the largest cost of a send in a profile of the
    moto process (yappi, all threads). The answer for a name never changes: wherever moto stands
    in for SQS its models module remembers each. moto's CPU for a SendMessageBatch of 10 into a
    queue holding 500: 1.52 ms before, 0.83 after (`make bench ARGS="--costs --tasks 200"`)."""
    import moto.sqs.models as sqs_models

    if getattr(sqs_models.camelcase_to_underscores, "cache_info", None) is not None:
        return
    sqs_models.camelcase_to_underscores = functools.cache(sqs_models.camelcase_to_underscores)


RECEIPT_HANDLE_LENGTH = 185
"""moto's receipt handles' length (``moto.sqs.utils.generate_receipt_handle``)."""


def make_receipt_handles_cheap() -> None:
    """moto makes each received message's receipt handle from 185 draws of its seeded random
    generator, one lowercase letter each. A receipt handle is opaque to its holder (SQS: "Queue and
    message identifiers"): wherever moto stands in for SQS it is 185 lowercase letters from the
    operating system's random bytes, in one call. With the change above, moto's CPU for a
    ReceiveMessage and its DeleteMessageBatch: 3.88 ms before, 2.64 after (the same bench)."""
    import os
    import string

    import moto.sqs.models as sqs_models

    if getattr(sqs_models.generate_receipt_handle, "_sundial_cheap", False):
        return
    letters = string.ascii_lowercase

    def generate_receipt_handle() -> str:
        return "".join(letters[byte % 26] for byte in os.urandom(RECEIPT_HANDLE_LENGTH))

    generate_receipt_handle._sundial_cheap = True  # type: ignore[attr-defined]
    sqs_models.generate_receipt_handle = generate_receipt_handle
