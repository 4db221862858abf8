"""Scanner: the shards of one asynchronous invocation from the tick (shared/scans.py), scanned
one after another."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.records import parsed_event
from shared.messages import ScanInvocation
from shared.observability import logger, metrics, tracer
from shared.services.factory import build_scanner
from shared.services.firing import Scanner
from shared.settings import from_env

RESERVE_MS = 10_000
"""A shard's scan starts only while this much of the function's timeout (60 s) is left: a scan
cut off by the timeout leaves its shard leased until the lease runs out. A shard not started is
asked for again by the next tick (its mark did not move)."""


class ScanFailed(RuntimeError):
    """Some shards' scans failed: the invocation fails, and Lambda runs it again (the shards
    already scanned find their marks past the tick and do nothing)."""


@cache
def scanner() -> Scanner:
    return build_scanner(from_env())


@logger.inject_lambda_context
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    requests = parsed_event(ScanInvocation, event).requests
    staged, scanned, failed = 0, [], []
    for request in requests:
        if context.get_remaining_time_in_millis() < RESERVE_MS:
            break
        try:
            staged += scanner().scan(request.shard, request.tick_ms, request.since_ms)
        except Exception:
            logger.exception("scan failed", extra={"shard": request.shard})
            failed.append(request.shard)
        else:
            scanned.append(request.shard)
    if staged:  # none sent for an empty scan: an idle stack sends no custom metric (bench/bill.py)
        metrics.add_metric(name="Staged", unit=MetricUnit.Count, value=staged)
    if failed:
        raise ScanFailed(f"the scans of shards {failed} failed")
    left = [request.shard for request in requests[len(scanned) :]]
    if left:
        logger.warning("out of time: shards left to the next tick", extra={"shards": left})
    return {"staged": staged, "scanned": scanned, "left": left}
