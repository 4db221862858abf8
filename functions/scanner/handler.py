"""Scanner: the shards of one asynchronous invocation from the tick (shared/adapters/scans.py), scanned
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
from shared.services.firing.scan import scan_group
from shared.settings.environment import from_env


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
    done = scan_group(
        scanner().scan, [(r.shard, r.tick_ms, r.since_ms) for r in requests], context.get_remaining_time_in_millis
    )
    if done.staged:  # none sent for an empty scan: an idle stack sends no custom metric (bench/bill.py)
        metrics.add_metric(name="Staged", unit=MetricUnit.Count, value=done.staged)
    if done.failed:
        raise ScanFailed(f"the scans of shards {done.failed} failed")
    if done.left:
        logger.warning("out of time: shards left to the next tick", extra={"shards": done.left})
    return {"staged": done.staged, "scanned": done.scanned, "left": done.left}
