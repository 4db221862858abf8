"""Tick: the minute EventBridge rule's target. Asks for a scan of each bucket shard that has
something in its window (shared/services/firing/scan.py, ``Ticker``).

It sends no metric: a custom metric costs $0.30 a month for every hour it is sent in
(CloudWatch's pricing), and an idle stack should cost nothing but the tick. Its invocations are
Lambda's own metrics."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.observability import logger, tracer
from shared.services.factory import build_ticker
from shared.services.firing import Ticker
from shared.settings.environment import from_env


@cache
def ticker() -> Ticker:
    return build_ticker(from_env())


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    return {"shards": len(ticker().tick())}
