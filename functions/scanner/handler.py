"""Scanner: one scan request (one bucket shard) at a time, from the scan-request queue."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.records import parsed
from shared.messages import ScanRequestRecord
from shared.observability import logger, metrics, tracer
from shared.services.factory import build_scanner
from shared.services.firing import Scanner
from shared.settings import from_env


@cache
def scanner() -> Scanner:
    return build_scanner(from_env())


def scan(record: SQSRecord) -> int:
    request = parsed(ScanRequestRecord, record.raw_event).body
    staged = scanner().scan(request.shard, request.tick_ms, request.since_ms)
    if staged:  # none sent for an empty scan: an idle stack sends no custom metric (bench/bill.py)
        metrics.add_metric(name="Staged", unit=MetricUnit.Count, value=staged)
    return staged


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    processor = BatchProcessor(event_type=EventType.SQS)  # per invocation: it holds the batch's state
    return process_partial_response(event=event, record_handler=scan, processor=processor, context=context)
