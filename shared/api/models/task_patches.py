"""``PATCH /v1/tasks/{id}``: a change to a task."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import Field, field_validator, model_validator

from shared.api.models.alerts import AlertIn
from shared.api.models.fields import FailureCount
from shared.api.models.schedules import ScheduleIn, schedule_to_domain
from shared.api.models.targets import TargetIn, target_to_domain
from shared.api.models.task_members import (
    PAYLOAD,
    ChildList,
    Name,
    RetryIn,
    TargetList,
    distinct_children,
    payload_fits,
)
from shared.api.types import Model, Problem
from shared.domain import tasks as t
from shared.domain.retry import RetryPolicy
from shared.domain.secrets import kept


class TaskPatchIn(Model):
    """``PATCH /v1/tasks/{id}``: any of these members; those given replace the task's. A new
    ``schedule`` (even the same one) re-arms the task; ``target`` replaces ``targets`` and the
    other way round. ``null`` clears ``name``, ``payload``, ``alert``, ``pause_after_failures``,
    ``on_success`` and ``on_failure``, resets ``retry`` to the default and leaves ``misfire`` as
    it is."""

    model_config = Model.model_config | {"json_schema_extra": lambda schema: _patch_schema(schema)}  # noqa: PLW0108 (defined below)

    name: Name | None = None
    schedule: ScheduleIn | None = None
    target: TargetIn | None = None
    targets: TargetList | None = None
    payload: Any = Field(None, description=PAYLOAD)
    retry: RetryIn | None = None
    misfire: t.Misfire | None = None
    priority: t.Priority | None = Field(None, description="normal or high; null leaves it as it is.")
    alert: AlertIn | None = Field(None, description="Replaces the task's alert; null: no alert.")
    pause_after_failures: FailureCount | None = Field(None, description="null: never pause.")
    on_success: ChildList | None = Field(None, description="Replaces the task's list; null or []: none.")
    on_failure: ChildList | None = Field(None, description="Replaces the task's list; null or []: none.")

    _payload = field_validator("payload")(payload_fits)
    _chains = field_validator("on_success", "on_failure")(distinct_children)

    @model_validator(mode="after")
    def _coherent(self) -> TaskPatchIn:
        given = self.model_fields_set
        if not given:
            raise Problem("", "give at least one of " + ", ".join(TaskPatchIn.model_fields))
        if "target" in given and "targets" in given:
            raise Problem("target", "give target or targets, not both")
        for member in ("schedule", "target", "targets"):
            if member in given and getattr(self, member) is None:
                raise Problem(member, "cannot be null")
        return self

    def change(self, task: t.Task) -> tuple[t.TaskSpec, bool]:
        """The task's spec once this patch is applied, and whether it gives a schedule."""
        given = self.model_fields_set
        spec = t.TaskSpec(
            schedule=task.schedule,
            targets=task.targets,
            multicast=task.multicast,
            name=task.name,
            payload=task.payload,
            retry=task.retry,
            misfire=task.misfire,
            priority=task.priority,
            alert=task.alert,
            pause_after_failures=task.pause_after_failures,
            on_success=task.on_success,
            on_failure=task.on_failure,
        )
        if self.schedule is not None:
            spec = replace(spec, schedule=schedule_to_domain(self.schedule))
        if self.target is not None:
            target = kept(target_to_domain(self.target), task.targets, "target")
            spec = replace(spec, targets=(target,), multicast=False)
        if self.targets is not None:
            targets = [target_to_domain(x) for x in self.targets]
            chosen = [kept(x, task.targets, f"targets[{i}]") for i, x in enumerate(targets)]
            spec = replace(spec, targets=tuple(chosen), multicast=True)
        if "name" in given:
            spec = replace(spec, name=self.name)
        if "payload" in given:
            spec = replace(spec, payload=self.payload)
        if "retry" in given:
            spec = replace(spec, retry=RetryPolicy() if self.retry is None else self.retry.to_domain())
        if self.misfire is not None:
            spec = replace(spec, misfire=self.misfire)
        if self.priority is not None:
            spec = replace(spec, priority=self.priority)
        if "alert" in given:
            spec = replace(spec, alert=self.alert.to_domain(task.alert) if self.alert is not None else None)
        if "pause_after_failures" in given:
            spec = replace(spec, pause_after_failures=self.pause_after_failures)
        if "on_success" in given:
            spec = replace(spec, on_success=tuple(self.on_success or ()))
        if "on_failure" in given:
            spec = replace(spec, on_failure=tuple(self.on_failure or ()))
        return spec, "schedule" in given


def _patch_schema(schema: dict[str, Any]) -> None:
    """What the patch's validator says, in the document: at least one member, never both
    ``target`` and ``targets``, and ``schedule``, ``target``, ``targets`` not null."""
    schema["minProperties"] = 1
    schema["not"] = {"required": ["target", "targets"]}
    for member in ("schedule", "target", "targets"):
        options = schema["properties"][member].pop("anyOf")
        schema["properties"][member].update(next(o for o in options if o != {"type": "null"}))
