"""A task's target: exactly one of ``http``, ``lambda``, ``sqs``, ``sns``, ``eventbridge``, ``job``."""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import Field, Tag

from shared.api.models.calls import (
    EventBridgePut,
    EventBridgeTarget,
    HttpTarget,
    HttpTaskCall,
    LambdaTarget,
    SnsPublish,
    SnsTarget,
    SqsSend,
    SqsTarget,
    call_to_domain,
)
from shared.api.models.jobs import JobIn
from shared.api.types import Model, one_of, tag
from shared.domain import tasks as t
from shared.domain.codec import canonical_job


class JobTarget(Model):
    job: JobIn = Field(description="Start this sharded batch job at every occurrence.")


TargetIn = Annotated[
    Annotated[HttpTarget, Tag(tag("http"))]
    | Annotated[LambdaTarget, Tag(tag("lambda"))]
    | Annotated[SqsTarget, Tag(tag("sqs"))]
    | Annotated[SnsTarget, Tag(tag("sns"))]
    | Annotated[EventBridgeTarget, Tag(tag("eventbridge"))]
    | Annotated[JobTarget, Tag(tag("job"))],
    one_of(("http", "lambda", "sqs", "sns", "eventbridge", "job"), "the target's kind"),
]
"""Exactly one of ``http``, ``lambda``, ``sqs``, ``sns``, ``eventbridge``, ``job``."""

Targets = HttpTarget | LambdaTarget | SqsTarget | SnsTarget | EventBridgeTarget | JobTarget


def target_to_domain(target: Targets) -> t.Target:
    if isinstance(target, JobTarget):
        return t.JobTarget(canonical_job(target.job.model_dump(mode="json", by_alias=True, exclude_none=True)))
    return call_to_domain(target)


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
        return HttpTarget(http=HttpTaskCall.model_validate(call | {"timeout_seconds": call.pop("timeout")}))
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
    return JobTarget(job=JobIn.model_validate(json.loads(target.job)))
