"""``POST /v1/tasks`` and ``POST /v1/tasks:batch``: a task's registration."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from shared.api.errors import from_pydantic
from shared.api.models.alerts import AlertIn
from shared.api.models.fields import FailureCount
from shared.api.models.schedules import ScheduleIn, schedule_to_domain
from shared.api.models.tags import TAGS, Tags
from shared.api.models.targets import TargetIn, target_to_domain
from shared.api.models.task_members import (
    ALERT,
    ON_FAILURE,
    ON_SUCCESS,
    PAUSE_AFTER,
    PAYLOAD,
    PRIORITY,
    ChildList,
    Name,
    RetryIn,
    TargetList,
    distinct_children,
    payload_fits,
    retry_policy,
)
from shared.api.types import Model, Problem, exactly_one_schema
from shared.domain import tasks as t
from shared.domain.errors import ValidationFailed
from shared.domain.secrets import kept

MAX_BATCH = 100
MAX_PAGE = 100


class TaskIn(Model):
    """``POST /v1/tasks``: a schedule, and ``target`` (one) or ``targets`` (multicast)."""

    model_config = Model.model_config | {"json_schema_extra": exactly_one_schema("target", "targets")}

    name: Name | None = None
    schedule: ScheduleIn
    target: TargetIn | None = Field(None, description="The one target (exactly one of target and targets).")
    targets: TargetList | None = Field(None, description=f"Multicast: 1 to {t.MAX_TARGETS} targets.")
    payload: Any = Field(None, description=PAYLOAD)
    retry: RetryIn | None = Field(None, description="Default: 3 attempts, exponential from 2 s.")
    misfire: t.Misfire | None = Field(None, description="Default: fire_now for one-shot, skip for recurring.")
    priority: t.Priority = Field(t.Priority.NORMAL, description=PRIORITY)
    alert: AlertIn | None = Field(None, description=ALERT)
    pause_after_failures: FailureCount | None = Field(None, description=PAUSE_AFTER)
    on_success: ChildList | None = Field(None, description=ON_SUCCESS)
    on_failure: ChildList | None = Field(None, description=ON_FAILURE)
    tags: Tags | None = Field(None, description=TAGS)

    _payload = field_validator("payload")(payload_fits)
    _chains = field_validator("on_success", "on_failure")(distinct_children)

    @model_validator(mode="after")
    def _one_target(self) -> TaskIn:
        if (self.target is None) == (self.targets is None):
            raise Problem("target", "give exactly one of target or targets")
        return self

    def to_spec(self) -> t.TaskSpec:
        """The spec. A secret header sent as ``[redacted]`` stands for a stored value, and a new
        task has none: refused naming the header (it was stored and sent as the literal text)."""
        if self.targets is not None:
            named = [(f"targets[{i}]", target) for i, target in enumerate(self.targets)]
        else:
            named = [("target", self.target)] if self.target is not None else []
        return t.TaskSpec(
            schedule=schedule_to_domain(self.schedule),
            targets=tuple(kept(target_to_domain(target), (), field) for field, target in named),
            multicast=self.targets is not None,
            name=self.name,
            payload=self.payload,
            retry=retry_policy(self.retry),
            misfire=self.misfire,
            priority=self.priority,
            alert=self._alert(),
            pause_after_failures=self.pause_after_failures,
            on_success=tuple(self.on_success or ()),
            on_failure=tuple(self.on_failure or ()),
            tags=dict(sorted((self.tags or {}).items())),
        )

    def _alert(self) -> t.Alert | None:
        """The alert, its target refused as the task's are when it sends ``[redacted]``."""
        if self.alert is None:
            return None
        alert = self.alert.to_domain()
        return replace(alert, target=kept(alert.target, (), "alert.target"))


class BatchIn(Model):
    """``POST /v1/tasks:batch``: each spec is validated and registered on its own; a spec that is
    not valid is answered at its index and does not stop the others."""

    tasks: list[Any] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description="Task specs, each as the body of POST /v1/tasks (TaskIn); one that is not valid (or not "
        "an object) is answered with its error at its index.",
    )


def spec_or_error(raw: Any) -> t.TaskSpec | ValidationFailed:
    """One batch item as a spec, or the error that answers its index (fields named within it)."""
    if not isinstance(raw, dict):
        return ValidationFailed.on("body", "a task spec is a JSON object")
    try:
        return TaskIn.model_validate(raw).to_spec()
    except ValidationError as exc:
        return from_pydantic(exc.errors())
    except ValidationFailed as exc:  # a rule to_spec applies (a [redacted] with no stored value)
        return exc
