"""Trigger: claims, fires and records each occurrence of a delay-queue batch, concurrently."""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    AsyncBatchProcessor,
    EventType,
    async_process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.domain.claims import Fired, Result
from shared.domain.firing import Staged
from shared.observability import LATENESS_METRIC, logger, metrics, runs_metric, tracer
from shared.services.factory import build_trigger
from shared.services.firing import Trigger
from shared.settings import from_env
from shared.topology import DELAY_MAX_RECEIVES

observers: list[Callable[[Fired], None]] = []
"""Called with every occurrence's result (the local runtime prints one line per fire)."""


@cache
def trigger() -> Trigger:
    return build_trigger(from_env())


def max_receives() -> int:
    """Deliveries of a delay-queue message before SQS dead-letters it (the queues' setting)."""
    return DELAY_MAX_RECEIVES


def observe(fired: Fired) -> None:
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


def _staged(body: str) -> Staged | None:
    """The occurrence a record carries, or None when it is malformed (its own handler fails it)."""
    try:
        return Staged.from_message(json.loads(body))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


class LeaseHeld(Exception):
    """Makes SQS deliver the message again later (a partial batch failure)."""


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    batch = trigger().new_batch()
    staged_records = [(r["messageId"], _staged(r["body"])) for r in event.get("Records", [])]
    batch.take_turns([(record_id, staged) for record_id, staged in staged_records if staged is not None])
    # One thread per record: each waits for its own due time. asyncio's default executor has
    # min(32, cores + 4) threads, which on a 2-core machine made the 7th record of a batch wait
    # for the first to finish.
    threads = ThreadPoolExecutor(max_workers=max(1, len(event.get("Records", []))))

    async def fire(record: SQSRecord) -> str:
        staged = Staged.from_message(json.loads(record.body))
        context = contextvars.copy_context()  # as asyncio.to_thread does
        loop = asyncio.get_running_loop()
        try:
            fired = await loop.run_in_executor(threads, context.run, batch.fire, staged, record.message_id)
        except Exception as exc:
            receives = int(record.attributes.approximate_receive_count or 1)
            if receives < max_receives():
                raise
            # The last delivery: SQS would move the message to the DLQ and the task would wait
            # on a run nobody finishes. Give it up as a dead letter the API can redrive.
            reason = f"the trigger failed on it {receives} times: {type(exc).__name__}: {exc}"
            logger.exception("giving an occurrence up", extra={"run_id": staged.run_id})
            fired = await loop.run_in_executor(
                threads, contextvars.copy_context().run, trigger().abandon, staged, reason, batch.log_id
            )
        observe(fired)
        if fired.result is Result.IN_FLIGHT:
            raise LeaseHeld(f"run {fired.staged.run_id} is held by another trigger; retry after its lease")
        return fired.result.value

    processor = AsyncBatchProcessor(event_type=EventType.SQS)  # per invocation: it holds the batch's state
    try:
        answer = async_process_partial_response(event=event, record_handler=fire, processor=processor, context=context)
    finally:
        threads.shutdown(wait=False)
    batch.close()
    return answer
