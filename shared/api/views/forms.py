"""Domain objects in their request models' form: a task's schedule, targets and alert, and a job's
processor are answered as they are registered, so whatever the API returns it accepts back.
Secret header values are write-only: every target shown here is :func:`redacted` first."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from shared.api.models.alerts import AlertIn
from shared.api.models.calls import (
    EventBridgePut,
    EventBridgeTarget,
    HttpCall,
    HttpProcessor,
    HttpTarget,
    HttpTaskCall,
    LambdaTarget,
    SnsPublish,
    SnsTarget,
    SqsSend,
    SqsTarget,
)
from shared.api.models.jobs import JobIn
from shared.api.models.rules import RULES
from shared.api.models.schedules import (
    AfterSchedule,
    AtSchedule,
    CronSchedule,
    EverySchedule,
    RepeatSchedule,
    Schedules,
)
from shared.api.models.starts import EcsTarget, StepFunctionsTarget
from shared.api.models.targets import JobTarget, Targets, WorkflowRef, WorkflowTarget
from shared.domain import schedules as sched
from shared.domain import tasks as t
from shared.domain.codec import repeat_to_api, target_to_dict
from shared.domain.secrets import redacted
from shared.observability import logger

M = TypeVar("M", bound=BaseModel)


def stored_call(model: type[M], call: dict[str, Any]) -> M:
    """An HTTP call as stored, in its request model: validated, so that what the API shows it
    accepts back; a call stored before a rule it breaks was added (a URL ending in a line break,
    refused since, which no call could ever have reached) is shown as it is stored rather than
    failing the whole answer."""
    try:
        return model.model_validate(call)
    except ValidationError as refused:
        logger.warning("a stored call breaks a rule added since", extra={"error": str(refused)})
        return model.model_construct(**call)


def schedule_of(schedule: sched.Schedule) -> Schedules:
    """A domain schedule as the API shows it (a flexible window, only the EventBridge Scheduler
    API's, is shown by that API)."""
    schedule = sched.base(schedule)
    if isinstance(schedule, sched.At):
        return AtSchedule(at=schedule.at)
    if isinstance(schedule, sched.After):
        return AfterSchedule(after_seconds=schedule.seconds)
    if isinstance(schedule, sched.Cron):
        return CronSchedule(
            # an EventBridge Scheduler expression may part its fields with any whitespace (a line
            # break); the native API's takes spaces and tabs only, and answers them as one space
            cron=" ".join(schedule.expression.split()),
            timezone=schedule.timezone,
            start=schedule.start,
            end=schedule.end,
            dialect=schedule.dialect,
        )
    if isinstance(schedule, sched.Every):
        return EverySchedule(
            every_seconds=schedule.seconds, start=schedule.start, end=schedule.end, after=schedule.after
        )
    return RepeatSchedule(repeat=RULES.validate_python(repeat_to_api(schedule)))


def target_of(target: t.Target) -> Targets:
    """A domain target as the API shows it."""
    if isinstance(target, t.HttpTarget):
        call = {
            "url": target.url,
            "method": target.method,
            "headers": target.headers,
            "timeout": target.timeout_seconds,
            "limit": target.limit,
        }
        return HttpTarget(http=stored_call(HttpTaskCall, call | {"timeout_seconds": call.pop("timeout")}))
    if isinstance(target, t.LambdaTarget):
        return LambdaTarget.model_validate({"lambda": {"function_arn": target.function_arn}})
    if isinstance(target, t.SqsTarget):
        return SqsTarget(sqs=SqsSend(queue_url=target.queue_url))
    if isinstance(target, t.SnsTarget):
        return SnsTarget(sns=SnsPublish(topic_arn=target.topic_arn))
    if isinstance(target, t.EventBridgeTarget):
        return EventBridgeTarget(
            eventbridge=EventBridgePut(event_bus=target.event_bus, source=target.source, detail_type=target.detail_type)
        )
    if isinstance(target, t.WorkflowTarget):
        return WorkflowTarget(workflow=WorkflowRef(id=target.workflow_id))
    if isinstance(target, t.StepFunctionsTarget):
        return StepFunctionsTarget.model_validate(target_to_dict(target))
    if isinstance(target, t.EcsTarget):
        return EcsTarget.model_validate(target_to_dict(target))
    return JobTarget(job=JobIn.model_validate(json.loads(target.job)))


def processor_of(target: t.Target) -> HttpProcessor | LambdaTarget:
    """A job's processor as the API shows it."""
    if isinstance(target, t.HttpTarget):
        call = {"url": target.url, "method": target.method, "headers": target.headers}
        return HttpProcessor(http=stored_call(HttpCall, call | {"timeout_seconds": target.timeout_seconds}))
    if isinstance(target, t.LambdaTarget):
        return LambdaTarget.model_validate({"lambda": {"function_arn": target.function_arn}})
    raise ValueError(f"a job's processor is an http or a lambda target, not {type(target).__name__}")


def alert_of(alert: t.Alert) -> AlertIn:
    """A domain alert as the API shows it."""
    return AlertIn.model_validate(
        {"target": target_of(alert.target), "after_consecutive_failures": alert.after_consecutive_failures}
    )


def targets_shown(targets: tuple[t.Target, ...], multicast: bool) -> dict[str, object]:
    """A task's (or a dead letter's) ``target``, or ``targets`` when it multicasts."""
    shown = [target_of(redacted(target)) for target in targets]
    return {"targets": shown} if multicast else {"target": shown[0]}


def alert_shown(alert: t.Alert | None) -> dict[str, object]:
    """A task's ``alert``, left out when it has none."""
    return {} if alert is None else {"alert": alert_of(replace(alert, target=redacted(alert.target)))}
