"""Tick: the minute EventBridge rule's target. Fans out one scan request per bucket shard."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.domain.times import now_ms
from shared.observability import logger, metrics, tracer
from shared.services.factory import build_scan_requests
from shared.services.ports import ScanRequester
from shared.settings import from_env


@cache
def scan_requests() -> ScanRequester:
    return build_scan_requests(from_env())


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    shards = list(range(from_env().bucket_shards))
    scan_requests().request(shards, now_ms())
    metrics.add_metric(name="ScanRequests", unit=MetricUnit.Count, value=len(shards))
    return {"shards": len(shards)}
