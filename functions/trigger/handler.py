"""Trigger: claims, fires and records each occurrence of a delay-queue batch, concurrently.

One executor per invocation, a thread per record: every record waits for its own due time at
the same time as the others, while the claims still go one at a time in due order (the batch's
claim turns, shared/services/firing/claim.py). Powertools' ``BatchProcessor`` answers the batch as
Lambda expects (``process_partial_response``: the ids of the records that failed, an error when
all of them did); its record handler only takes each record's result from the executor, in
order, so its one-record-at-a-time loop costs no time. The rule for a message's last delivery
is the service's (``Batch.fire``): this handler only passes each record's receive count.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.records import MalformedRecord, parsed
from shared.domain.claims import Handled, Result
from shared.messages import StagedRecord
from shared.observability import LATENESS_METRIC, logger, metrics, runs_metric, tracer
from shared.services.factory import build_trigger
from shared.services.firing import Batch, Trigger
from shared.settings.environment import from_env

observers: list[Callable[[Handled], None]] = []
"""Called with every occurrence's result (the local runtime prints one line per fire)."""


@cache
def trigger() -> Trigger:
    return build_trigger(from_env())


def observe(fired: Handled) -> None:
    for observer in observers:
        observer(fired)
    ids = {"task_id": fired.staged.task_id, "run_id": fired.staged.run_id, "attempt": fired.staged.attempt}
    metrics.add_metric(name=runs_metric(fired.result), unit=MetricUnit.Count, value=1)
    if fired.lateness_ms is not None and fired.staged.attempt == 1:  # a retry is late by its backoff
        metrics.add_metric(name=LATENESS_METRIC, unit=MetricUnit.Milliseconds, value=fired.lateness_ms)
    if fired.result in (Result.SUCCEEDED, Result.DROPPED, Result.EARLY):
        logger.debug("occurrence", extra={**ids, "result": fired.result.value, "lateness_ms": fired.lateness_ms})
    else:
        logger.warning("occurrence", extra={**ids, "result": fired.result.value, "reason": fired.reason})


def _occurrence(record: dict[str, Any]) -> StagedRecord | MalformedRecord:
    """The record, parsed; or why it carries no occurrence (its own record handler fails it)."""
    try:
        return parsed(StagedRecord, record)
    except MalformedRecord as exc:
        return exc


class LeaseHeld(Exception):
    """Makes SQS deliver the message again later (a partial batch failure)."""


def _fire(batch: Batch, record: StagedRecord, last_delivery: bool) -> Handled:
    """On the record's own thread: claim (in turn), wait, fire, record."""
    receives = batch.max_receives if last_delivery else record.receives
    return batch.fire(record.staged, record.messageId, receives)


def _answer(fired: Handled) -> str:
    """On the handler's thread (metrics are not thread-safe): observe; a run another trigger
    holds fails the record, so that SQS delivers it again after the lease."""
    observe(fired)
    if fired.result is Result.IN_FLIGHT:
        raise LeaseHeld(f"run {fired.staged.run_id} is held by another trigger; retry after its lease")
    return fired.result.value


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return fire_records(event, context, last_delivery=False)


def fire_records(event: dict[str, Any], context: LambdaContext, *, last_delivery: bool) -> PartialItemFailureResponse:
    """Fire a batch of staged occurrences; ``last_delivery``: each record is its message's last
    delivery (the stranded queue's: functions/recover/handler.py), given up if it fails."""
    occurrences = {raw["messageId"]: _occurrence(raw) for raw in event.get("Records", [])}
    records = [r for r in occurrences.values() if isinstance(r, StagedRecord)]
    batch = trigger().new_batch()
    batch.take_turns([(r.messageId, r.staged) for r in records])
    # A thread per record, each with the handler's context (as asyncio.to_thread does): a
    # smaller pool would make a record wait for an earlier one's due time.
    threads = ThreadPoolExecutor(max_workers=max(1, len(records)))
    try:
        fired: dict[str, Future[Handled]] = {
            r.messageId: threads.submit(contextvars.copy_context().run, _fire, batch, r, last_delivery) for r in records
        }

        def record_handler(record: SQSRecord) -> str:
            occurrence = occurrences[record.message_id]
            if isinstance(occurrence, MalformedRecord):
                raise occurrence
            return _answer(fired[record.message_id].result())

        processor = BatchProcessor(event_type=EventType.SQS)  # per invocation: it holds the batch's state
        answer = process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    finally:
        threads.shutdown(wait=False)
    batch.close()
    return answer
