"""moto's SQS on the local runtime's clock (docs/virtual-clock.md, section 3, step 2).

With the virtual clock the runtime's time moves only when it is advanced, and the delay queues
must agree with it: a message sent with ``DelaySeconds=900`` becomes receivable when the
*runtime's* clock has moved 900 s on, and a message received with a visibility timeout comes
back when that clock passes it, not the wall. moto computes both from
``moto.core.utils.unix_time_millis`` (``Message.delay``, ``Message.change_visibility``,
``Message.visible``, ``Message.delayed``, ``SQSBackend.receive_message``'s given visibility),
which ``moto.sqs.models`` imports by name. :func:`make_sqs_follow_clock` points that name at
:func:`now_ms`: the wall until the runtime sets a time, then that time, which stands still
until it is set again (never back).

The runtime sets it through moto's own server, ``POST /sundial/clock`` with ``{"now_ms": N}``
(``GET`` answers it, :func:`next_moment_ms` and :func:`receivable_queues`, and with
``?table=T&shards=N`` :func:`look`'s marks, clean map and earliest unstaged due time: the
advance's looks, one round trip a step),
as it reaches every other part of moto (:meth:`MotoServer.set_clock
<local.moto_server.MotoServer.set_clock>`). The route exists only in a moto process started
with ``local.settings.MOTO_CLOCK_ENV``.

Left on the wall, on purpose: a long poll's wait (``WaitTimeSeconds``, measured by
``unix_time`` in seconds: on a clock that stands still it would never end; the runtime receives
with none while its clock is virtual), and the retention period's check (its own ``unix_time``:
the clock only runs ahead of the wall, so a message is never expired early).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any
from urllib.parse import parse_qs

from local.moto_server import CLOCK_PATH

_lock = threading.Lock()
_set: list[int] = []
"""The time set by the runtime (milliseconds since the epoch), once it set one; empty: the wall."""


def now_ms() -> float:
    """moto's SQS time: what the runtime set, else the wall (``unix_time_millis``'s float)."""
    with _lock:
        if _set:
            return float(_set[0])
    return time.time() * 1000  # wall: no virtual clock was set


def set_now(value: int) -> int:
    """Set the time; a time before the one set is refused (``ValueError``): queues never go back."""
    with _lock:
        if _set and value < _set[0]:
            raise ValueError(f"the clock does not go back: {value} is before {_set[0]}")
        _set[:] = [value]
        return value


def next_moment_ms() -> int | None:
    """The earliest moment after the set time at which a message of any queue becomes receivable
    (its delay or visibility timeout ends; moto's test is strict: the moment after it), or None."""
    from moto.sqs.models import sqs_backends

    now = now_ms()
    moments = [
        at
        for regions in list(sqs_backends.values())
        for backend in list(regions.values())
        for queue in list(backend.queues.values())
        for message in list(queue._messages)
        if (at := max(message.delayed_until, message.visible_at)) > now
    ]
    return int(min(moments)) if moments else None


def receivable_queues() -> list[str]:
    """The names of the queues holding a message receivable at the set time (the advance receives
    from those lanes only: a receive of an empty lane was an HTTP round trip per lane per step)."""
    from moto.sqs.models import sqs_backends

    return sorted(
        {
            queue.name
            for regions in list(sqs_backends.values())
            for backend in list(regions.values())
            for queue in list(backend.queues.values())
            for message in list(queue._messages)
            if message.visible and not message.delayed  # moto's own tests, on the set time
        }
    )


def earliest_unstaged_ms(table_name: str, low: int) -> int | None:
    """The earliest due time at or after ``low`` of a bucket item nobody staged (its ``staged_ms``
    is not its ``due_ms``) in ``table_name``, read off moto's table in this process: only the
    bucket partitions, under the DynamoDB lock (local/moto_patches/atomic.py), nothing serialized. The
    local runtime's own look (the product never makes it): a Scan of the whole table with a
    filter, paged over HTTP, read every item, each run's history among them, at every step of
    an advance (docs/virtual-clock.md, section 3)."""
    from local.moto_patches.atomic import LOCK
    from shared.store.keys import BUCKET_PREFIX

    earliest: int | None = None
    with LOCK:
        for table in _tables(table_name):
            for hash_key, items in table.items.items():
                if not str(hash_key.value).startswith(BUCKET_PREFIX):
                    continue
                for item in items.values() if isinstance(items, dict) else (items,):
                    due_value = item.attrs.get("due_ms")
                    if due_value is None:
                        continue
                    due = int(due_value.value)
                    staged = item.attrs.get("staged_ms")
                    if due < low or (staged is not None and int(staged.value) == due):
                        continue
                    earliest = due if earliest is None else min(earliest, due)
    return earliest


def scan_marks(table_name: str, shards: int) -> tuple[dict[int, int | None], dict[int, int]]:
    """What ``DynamoPipelineStore.scan_marks`` answers for shards ``0 .. shards - 1`` (each shard's
    mark, and the tick's clean map past it), read off moto's table in this process with the
    step's other looks: a BatchGetItem of its own was a round trip every step of an advance.
    The items' keys and attributes are the store's own (``shared.store.keys``, ``WatermarkItem``);
    tests/integration/test_moto_clock.py holds the two answers equal."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    from local.moto_patches.atomic import LOCK
    from shared.store.keys import CLEAN_PK, MARK_SK, mark_pk
    from shared.store.models import WatermarkItem

    def read(table: Any, pk: str, attribute: str) -> Any:
        item = table.get_item(DynamoType({"S": pk}), DynamoType({"S": MARK_SK}))
        value = item.attrs.get(attribute) if item is not None else None
        return value.value if value is not None else None

    marks: dict[int, int | None] = dict.fromkeys(range(shards))
    clean: dict[int, int] = {}
    with LOCK:
        for table in _tables(table_name):
            for shard in marks:
                if (mark := read(table, mark_pk(shard), WatermarkItem.staged_until_ms.attr_name)) is not None:
                    marks[shard] = int(mark)
            if kept := read(table, CLEAN_PK, WatermarkItem.clean_until.attr_name):
                clean = {int(shard): int(ms) for shard, ms in json.loads(kept).items() if int(shard) in marks}
    return marks, clean


def _tables(table_name: str) -> list[Any]:
    from moto.dynamodb.models import dynamodb_backends

    return [
        table
        for regions in list(dynamodb_backends.values())
        for backend in list(regions.values())
        if (table := backend.tables.get(table_name)) is not None
    ]


def look(table_name: str, shards: int) -> dict[str, Any]:
    """The table's part of a step's look: the shards' marks and clean map, and the earliest
    unstaged due time past where their windows start (the earliest start; the set time when no
    shard has one)."""
    marks, clean = scan_marks(table_name, shards)
    starts = [
        max(m for m in (mark, clean.get(shard)) if m is not None)
        for shard, mark in marks.items()
        if mark is not None or shard in clean
    ]
    low = min(starts, default=int(now_ms()))
    return {
        "marks": {str(shard): mark for shard, mark in marks.items()},
        "clean": {str(shard): ms for shard, ms in clean.items()},
        "unstaged_ms": earliest_unstaged_ms(table_name, low),
    }


def make_sqs_follow_clock() -> None:
    """moto's SQS message delays and visibility timeouts on :func:`now_ms`, and the clock's route
    on moto's server."""
    import moto.sqs.models as sqs_models
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    if getattr(DomainDispatcherApplication.__call__, "_sundial_clock", False):
        return
    sqs_models.unix_time_millis = lambda dt=None: now_ms()
    dispatch = DomainDispatcherApplication.__call__

    def __call__(self: Any, environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") != CLOCK_PATH:
            return dispatch(self, environ, start_response)
        status = "200 OK"
        if environ.get("REQUEST_METHOD") == "POST":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            try:
                answer: dict[str, Any] = {
                    "now_ms": set_now(int(json.loads(environ["wsgi.input"].read(length))["now_ms"]))
                }
            except (ValueError, KeyError, TypeError) as error:
                status, answer = "400 Bad Request", {"error": str(error)}
        else:
            answer = {"now_ms": int(now_ms()), "next_ms": next_moment_ms(), "receivable": receivable_queues()}
            asked = parse_qs(environ.get("QUERY_STRING", ""))
            if "table" in asked and "shards" in asked:
                answer.update(look(asked["table"][0], int(asked["shards"][0])))
        start_response(status, [("Content-Type", "application/json")])
        return [json.dumps(answer).encode()]

    __call__._sundial_clock = True  # type: ignore[attr-defined]
    DomainDispatcherApplication.__call__ = __call__  # type: ignore[method-assign]
