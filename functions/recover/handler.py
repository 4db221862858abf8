"""The recovering trigger: the trigger's code (functions/trigger/handler.py) on the stranded
queue, where SQS moves a delay-queue message after its last receive (shared/topology.py,
``STRANDED``). Such a message may never have reached the trigger (its invocations throttled, or
stopped by Lambda's recursive loop detection), so each record is handled as a last delivery: the
occurrence fires (late, under its task's misfire policy) or, if that fails, is given up as a dead
letter that the API lists and can redrive. A run another trigger still holds fails the record,
which comes back after the queue's visibility timeout and, after its receives, goes on to the
dead-letter queue (alarmed).

No event source feeds it: the tick invokes it asynchronously with a drain event
(:class:`~shared.messages.DrainInvocation`) when the queue holds messages (shared/adapters/stranded.py),
and it receives them itself (functions/recover/drain.py)."""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.records import parsed_event
from functions.recover.drain import drain
from functions.trigger.handler import fire_records
from shared.messages import DrainInvocation
from shared.observability import logger, metrics, tracer
from shared.settings.environment import from_env


@cache
def _sqs() -> Any:
    return boto3.client("sqs")


@cache
def stranded_queue_url() -> str:
    url = from_env().stranded_queue_url
    assert url, "the recovering trigger needs the stranded queue (settings.stranded_queue_url)"
    return url


def fire_last_deliveries(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    return fire_records(event, context, last_delivery=True)


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    parsed_event(DrainInvocation, event)
    return drain(_sqs(), stranded_queue_url(), fire_last_deliveries, context).answer()
