"""Canary: the stack's custom resource that registers the canary task on deploy (and cancels it on
delete), and that task's target, which puts how late each minute's occurrence fired as the
``CanaryLatenessMs`` metric (shared/domain/canary.py). The stack alarms when a minute has none or
one over a second.

CloudFormation waits for the custom resource's answer: it is given in every case, settings that do
not load and a timeout included (shared/adapters/custom_resource.py)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.adapters import custom_resource
from shared.domain.canary import RESOURCE_PREFIX
from shared.domain.times import now_ms
from shared.messages import CanaryFire, CustomResourceRequest, canary_event
from shared.observability import CANARY_LATENESS_METRIC, logger, metrics
from shared.services.canary import handle_resource, physical_id
from shared.services.factory import build_canary_resources, build_task_service
from shared.services.ports.pipeline import CanaryResources
from shared.services.tasks import TaskService
from shared.settings.environment import from_env


@cache
def tasks() -> TaskService:
    return build_task_service(from_env())


@cache
def resources() -> CanaryResources:
    return build_canary_resources(from_env())


def work(request: CustomResourceRequest) -> custom_resource.Answer:
    return handle_resource(tasks(), resources(), request, now_ms)


def fallback_id(event: Mapping[str, Any]) -> str:
    """The physical id of an answer the work did not make: the resource's, as every answer's."""
    stack, logical, given = event.get("StackId"), event.get("LogicalResourceId"), event.get("PhysicalResourceId")
    if isinstance(given, str) and given:
        return given
    if isinstance(stack, str) and isinstance(logical, str):
        return physical_id(stack, logical, None)
    return f"{RESOURCE_PREFIX}unnamed"


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if custom_resource.is_request(event):
        answer = custom_resource.answer(event, context, work, fallback_id=fallback_id)
        if answer.status != "SUCCESS" or answer.reason:
            logger.warning("canary resource", extra={"request": event.get("RequestType"), "reason": answer.reason})
        return {"status": answer.status, "physical_id": answer.physical_id, "task_id": answer.data.get("TaskId")}
    fire = canary_event(event)
    if not isinstance(fire, CanaryFire):
        raise TypeError("a custom resource request without the members CloudFormation sends")
    metrics.add_metric(name=CANARY_LATENESS_METRIC, unit=MetricUnit.Milliseconds, value=fire.lateness_ms)
    return {"lateness_ms": fire.lateness_ms}
