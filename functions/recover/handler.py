"""The recovering trigger: the trigger's code (functions/trigger/handler.py) on the stranded
queue, where SQS moves a delay-queue message after its last receive (shared/topology.py,
``STRANDED``). Such a message may never have reached the trigger (its invocations throttled, or
stopped by Lambda's recursive loop detection), so each record is handled as a last delivery: the
occurrence fires (late, under its task's misfire policy) or, if that fails, is given up as a dead
letter that the API lists and can redrive. A run another trigger still holds fails the record,
which comes back after the queue's visibility timeout and, after its receives, goes on to the
dead-letter queue (alarmed)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.trigger.handler import fire_records
from shared.observability import logger, metrics, tracer


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return fire_records(event, context, last_delivery=True)
