"""The targets that start something in AWS: ``stepfunctions`` (StartExecution) and ``ecs``
(RunTask on Fargate). Their rules, and the AWS documentation behind each, are
shared/domain/starts.py's."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from shared.api.types import Model, Problem, is_none
from shared.domain import starts as s
from shared.domain import tasks as t
from shared.domain.codec import compact_json


class StepFunctionsStart(Model):
    state_machine_arn: str = Field(
        max_length=256,
        pattern=s.STATE_MACHINE_ARN,
        description="A state machine's ARN, or one of its versions' or aliases'. Its execution is named after the "
        "occurrence (its run id and a digest of the target), so a repeated call starts no second one.",
    )
    input: Any = Field(
        None,
        exclude_if=is_none,
        description=f"The execution's input: any JSON value, at most {t.MAX_PAYLOAD_BYTES} bytes as compact JSON. "
        "Absent: Sundial's envelope (the occurrence's ids, times, attempt and the task's payload).",
    )

    @field_validator("input")
    @classmethod
    def _fits(cls, value: Any) -> Any:
        size = len(compact_json(value).encode())
        if size > t.MAX_PAYLOAD_BYTES:
            raise ValueError(f"is {size} bytes as JSON; the limit is {t.MAX_PAYLOAD_BYTES}")
        return value


Subnet = Annotated[str, Field(pattern=s.SUBNET, description="A subnet id (`subnet-` and 8 or 17 hex digits).")]
SecurityGroup = Annotated[
    str, Field(pattern=s.SECURITY_GROUP, description="A security group id (`sg-` and 8 or 17 hex digits).")
]


class EcsNetwork(Model):
    """The task's awsvpc configuration (Fargate tasks have one)."""

    subnets: list[Subnet] = Field(
        min_length=1, max_length=s.MAX_SUBNETS, json_schema_extra={"uniqueItems": True}, description="1 to 16 subnets."
    )
    security_groups: list[SecurityGroup] = Field(
        default_factory=list,
        max_length=s.MAX_SECURITY_GROUPS,
        json_schema_extra={"uniqueItems": True},
        description="Up to 5 security groups (none: the VPC's default one).",
    )
    assign_public_ip: Literal["ENABLED", "DISABLED"] = "DISABLED"

    @field_validator("subnets", "security_groups")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        for index, item in enumerate(value):
            if item in value[:index]:
                raise ValueError(f"names {item} twice")
        return value


def _named_variables(schema: dict[str, Any]) -> None:
    """Names as :data:`~shared.domain.starts.VARIABLE_NAME` says, in the document (a look-ahead
    pydantic's own patterns cannot run: :meth:`ContainerOverride._names` checks it)."""
    value = schema.pop("additionalProperties")
    schema.pop("propertyNames", None)
    schema["patternProperties"] = {s.VARIABLE_NAME: value}
    schema["additionalProperties"] = False


Variables = Annotated[
    dict[str, Annotated[str, Field(max_length=s.MAX_TEXT_CHARS)]],
    Field(max_length=s.MAX_VARIABLES, json_schema_extra=_named_variables),
]


class ContainerOverride(Model):
    name: str = Field(pattern=s.CONTAINER_NAME, description="A container of the task definition.")
    command: list[Annotated[str, Field(max_length=s.MAX_TEXT_CHARS)]] | None = Field(
        None, exclude_if=is_none, max_length=s.MAX_COMMAND_ARGUMENTS, description="Replaces the image's command."
    )
    environment: Variables = Field(
        default_factory=dict,
        description=f"Variables added to the container's. Sundial also sets {s.TASK_ID_VARIABLE}, "
        f"{s.RUN_ID_VARIABLE} and {s.SCHEDULED_FOR_VARIABLE} (names starting with {s.OCCURRENCE_PREFIX} "
        "are Sundial's).",
    )

    @field_validator("environment")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if name.startswith(s.OCCURRENCE_PREFIX):
                raise ValueError(
                    f"sets {name}: variables starting with {s.OCCURRENCE_PREFIX} are Sundial's (the occurrence's "
                    "task id, run id and time)"
                )
            if not re.fullmatch(s.VARIABLE_NAME, name):
                raise ValueError(
                    f"names the variable {name!r}: a name is letters, digits and _, not starting with a digit"
                )
        return value


class EcsOverrides(Model):
    containers: list[ContainerOverride] = Field(
        default_factory=list,
        max_length=s.MAX_CONTAINER_OVERRIDES,
        description="Per container of the task definition: its command and added variables.",
    )
    cpu: str | None = Field(
        None, exclude_if=is_none, pattern=s.TASK_SIZE, description="The task's CPU units (a Fargate size: `1024`)."
    )
    memory: str | None = Field(
        None, exclude_if=is_none, pattern=s.TASK_SIZE, description="The task's memory in MiB (`2048`)."
    )


class EcsRun(Model):
    cluster_arn: str = Field(max_length=400, pattern=s.CLUSTER_ARN, description="The cluster's ARN.")
    task_definition_arn: str = Field(
        max_length=400,
        pattern=s.TASK_DEFINITION_ARN,
        description="The task definition's ARN, with a revision (`:3`) or without (its latest ACTIVE one); "
        "in the cluster's Region and account.",
    )
    launch_type: Literal["FARGATE"] = Field("FARGATE", description="FARGATE: the only launch type Sundial runs.")
    network: EcsNetwork
    overrides: EcsOverrides | None = Field(
        None,
        exclude_if=is_none,
        description=f"At most {s.MAX_OVERRIDES_CHARS} characters as RunTask takes them, the occurrence's "
        "variables included.",
    )

    @model_validator(mode="after")
    def _rules(self) -> EcsRun:
        if s.arn_region(self.task_definition_arn) != s.arn_region(self.cluster_arn):
            raise Problem(
                "task_definition_arn", "is in another Region than the cluster: RunTask takes its own Region's"
            )
        if s.arn_account(self.task_definition_arn) != s.arn_account(self.cluster_arn):
            raise Problem("task_definition_arn", "is in another account than the cluster")
        if self.overrides is not None:
            problem = s.overrides_problem(compact_json(self.overrides.model_dump(mode="json", exclude_none=True)))
            if problem is not None:
                member, why = problem
                raise Problem(f"overrides.{member}" if member else "overrides", why)
        return self


class StepFunctionsTarget(Model):
    stepfunctions: StepFunctionsStart


class EcsTarget(Model):
    ecs: EcsRun


def start_to_domain(target: StepFunctionsTarget | EcsTarget) -> t.Target:
    if isinstance(target, StepFunctionsTarget):
        given = target.stepfunctions.input
        return t.StepFunctionsTarget(
            target.stepfunctions.state_machine_arn, compact_json(given) if given is not None else None
        )
    run = target.ecs
    overrides = run.overrides.model_dump(mode="json", exclude_none=True) if run.overrides is not None else None
    return t.EcsTarget(
        cluster_arn=run.cluster_arn,
        task_definition_arn=run.task_definition_arn,
        subnets=tuple(run.network.subnets),
        security_groups=tuple(run.network.security_groups),
        assign_public_ip=run.network.assign_public_ip,
        overrides=compact_json(overrides, sort_keys=True) if overrides is not None else None,
        launch_type=run.launch_type,
    )
