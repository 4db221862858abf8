"""Tick: the minute EventBridge rule's target. Fans out one scan request per bucket shard.

It sends no metric: a custom metric costs $0.30 a month for every hour it is sent in
(CloudWatch's pricing), and the tick's count of requests is the number of shards, every minute,
idle or not. Its invocations are Lambda's own metrics."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.domain.times import now_ms
from shared.observability import logger, tracer
from shared.services.factory import build_scan_requests
from shared.services.ports import ScanRequester
from shared.settings import from_env


@cache
def scan_requests() -> ScanRequester:
    return build_scan_requests(from_env())


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    shards = list(range(from_env().bucket_shards))
    scan_requests().request(shards, now_ms())
    return {"shards": len(shards)}
