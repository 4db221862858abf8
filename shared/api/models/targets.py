"""A task's target: exactly one of ``http``, ``lambda``, ``sqs``, ``sns``, ``eventbridge``, ``job``,
``workflow``, ``stepfunctions``, ``ecs``."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, Tag

from shared.api.models.calls import (
    EventBridgeTarget,
    HttpTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
    call_to_domain,
)
from shared.api.models.jobs import JobIn
from shared.api.models.starts import EcsTarget, StepFunctionsTarget, start_to_domain
from shared.api.types import Model, one_of, tag
from shared.domain import tasks as t
from shared.domain.codec import canonical_job


class JobTarget(Model):
    job: JobIn = Field(description="Start this sharded batch job at every occurrence.")


class WorkflowRef(Model):
    id: str = Field(min_length=1, max_length=64, description="The id of one of the tenant's workflows.")


class WorkflowTarget(Model):
    workflow: WorkflowRef = Field(
        description="Start a run of this workflow at every occurrence (the run's id is the occurrence's)."
    )


TargetIn = Annotated[
    Annotated[HttpTarget, Tag(tag("http"))]
    | Annotated[LambdaTarget, Tag(tag("lambda"))]
    | Annotated[SqsTarget, Tag(tag("sqs"))]
    | Annotated[SnsTarget, Tag(tag("sns"))]
    | Annotated[EventBridgeTarget, Tag(tag("eventbridge"))]
    | Annotated[JobTarget, Tag(tag("job"))]
    | Annotated[WorkflowTarget, Tag(tag("workflow"))]
    | Annotated[StepFunctionsTarget, Tag(tag("stepfunctions"))]
    | Annotated[EcsTarget, Tag(tag("ecs"))],
    one_of(
        ("http", "lambda", "sqs", "sns", "eventbridge", "job", "workflow", "stepfunctions", "ecs"), "the target's kind"
    ),
]
"""Exactly one of ``http``, ``lambda``, ``sqs``, ``sns``, ``eventbridge``, ``job``, ``workflow``,
``stepfunctions``, ``ecs``."""

NodeTargetIn = Annotated[
    Annotated[HttpTarget, Tag(tag("http"))]
    | Annotated[LambdaTarget, Tag(tag("lambda"))]
    | Annotated[SqsTarget, Tag(tag("sqs"))]
    | Annotated[SnsTarget, Tag(tag("sns"))]
    | Annotated[EventBridgeTarget, Tag(tag("eventbridge"))]
    | Annotated[JobTarget, Tag(tag("job"))]
    | Annotated[StepFunctionsTarget, Tag(tag("stepfunctions"))]
    | Annotated[EcsTarget, Tag(tag("ecs"))],
    one_of(
        ("http", "lambda", "sqs", "sns", "eventbridge", "job", "stepfunctions", "ecs"),
        "a workflow node's target: a workflow is none of them",
    ),
]
"""A workflow node's target: any task's but a ``workflow`` (a run would start runs)."""

Targets = (
    HttpTarget
    | LambdaTarget
    | SqsTarget
    | SnsTarget
    | EventBridgeTarget
    | JobTarget
    | WorkflowTarget
    | StepFunctionsTarget
    | EcsTarget
)


def target_to_domain(target: Targets) -> t.Target:
    if isinstance(target, JobTarget):
        return t.JobTarget(canonical_job(target.job.model_dump(mode="json", by_alias=True, exclude_none=True)))
    if isinstance(target, WorkflowTarget):
        return t.WorkflowTarget(target.workflow.id.upper())
    if isinstance(target, StepFunctionsTarget | EcsTarget):
        return start_to_domain(target)
    return call_to_domain(target)
