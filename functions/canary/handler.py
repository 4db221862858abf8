"""Canary: the stack's custom resource that registers the canary task on deploy (and cancels it on
delete), and that task's target, which puts how late each minute's occurrence fired as the
``CanaryLatenessMs`` metric (shared/domain/canary.py). The stack alarms when a minute has none or
one over a second."""

from __future__ import annotations

import json
import urllib.request
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.messages import CanaryFire, CustomResourceRequest, canary_event
from shared.observability import CANARY_LATENESS_METRIC, logger, metrics
from shared.services.canary import ResourceAnswer, handle_resource
from shared.services.factory import build_task_service
from shared.services.tasks import TaskService
from shared.settings import from_env


@cache
def tasks() -> TaskService:
    return build_task_service(from_env())


def respond(request: CustomResourceRequest, answer: ResourceAnswer) -> None:
    """Tell CloudFormation (a PUT of the answer to the request's presigned URL, with no content
    type: "Custom resource response objects" in the CloudFormation user guide)."""
    body = {
        "Status": answer.status,
        "Reason": answer.reason or answer.status,
        "PhysicalResourceId": answer.physical_id,
        "StackId": request.stack_id,
        "RequestId": request.request_id,
        "LogicalResourceId": request.logical_resource_id,
        "Data": {"TaskId": answer.physical_id},
    }
    put = urllib.request.Request(  # noqa: S310 - CloudFormation's own https URL
        request.response_url, data=json.dumps(body).encode(), method="PUT", headers={"Content-Type": ""}
    )
    with urllib.request.urlopen(put, timeout=10) as response:  # noqa: S310
        response.read()


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = canary_event(event)
    if isinstance(request, CanaryFire):
        metrics.add_metric(name=CANARY_LATENESS_METRIC, unit=MetricUnit.Milliseconds, value=request.lateness_ms)
        return {"lateness_ms": request.lateness_ms}
    answer = handle_resource(tasks(), request)
    if answer.status != "SUCCESS" or answer.reason:
        logger.warning("canary resource", extra={"request": request.request_type, "reason": answer.reason})
    respond(request, answer)
    return {"status": answer.status, "task_id": answer.physical_id}
