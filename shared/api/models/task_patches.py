"""``PATCH /v1/tasks/{id}``: a change to a task."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import Field, field_validator, model_validator

from shared.api.models.alerts import AlertIn
from shared.api.models.fields import FailureCount
from shared.api.models.schedules import ScheduleIn, schedule_to_domain
from shared.api.models.tags import Tags
from shared.api.models.targets import TargetIn, target_to_domain
from shared.api.models.task_members import (
    PAYLOAD,
    ChildList,
    Name,
    RetryIn,
    TargetList,
    distinct_children,
    payload_fits,
    retry_policy,
)
from shared.api.types import Model, Problem
from shared.domain import tasks as t
from shared.domain.patches import KEEP, Keep, TaskPatch

V = TypeVar("V")


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
    tags: Tags | None = Field(None, description="Replaces the task's tags whole; null or {}: none.")

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

    def to_patch(self) -> TaskPatch:
        """The change as the domain applies it (:func:`~shared.domain.patches.patched`): a member
        left out is kept, one given as ``null`` clears (``retry``: the default policy), except
        ``misfire`` and ``priority``, which ``null`` leaves as they are."""
        return TaskPatch(
            schedule=KEEP if self.schedule is None else schedule_to_domain(self.schedule),
            targets=self._targets(),
            multicast=self.targets is not None,
            name=self._if_given("name", self.name),
            payload=self._if_given("payload", self.payload),
            retry=self._if_given("retry", retry_policy(self.retry)),
            misfire=KEEP if self.misfire is None else self.misfire,
            priority=KEEP if self.priority is None else self.priority,
            alert=self._if_given("alert", self.alert.to_domain() if self.alert is not None else None),
            pause_after_failures=self._if_given("pause_after_failures", self.pause_after_failures),
            on_success=self._if_given("on_success", tuple(self.on_success or ())),
            on_failure=self._if_given("on_failure", tuple(self.on_failure or ())),
            tags=self._if_given("tags", dict(sorted((self.tags or {}).items()))),
        )

    def _if_given(self, member: str, value: V) -> V | Keep:
        """``value`` when the request has ``member`` (``null`` included), else :data:`KEEP`."""
        return value if member in self.model_fields_set else KEEP

    def _targets(self) -> tuple[t.Target, ...] | Keep:
        if self.targets is not None:
            return tuple(target_to_domain(target) for target in self.targets)
        return KEEP if self.target is None else (target_to_domain(self.target),)


def _patch_schema(schema: dict[str, Any]) -> None:
    """What the patch's validator says, in the document: at least one member, never both
    ``target`` and ``targets``, and ``schedule``, ``target``, ``targets`` not null."""
    schema["minProperties"] = 1
    schema["not"] = {"required": ["target", "targets"]}
    for member in ("schedule", "target", "targets"):
        options = schema["properties"][member].pop("anyOf")
        schema["properties"][member].update(next(o for o in options if o != {"type": "null"}))
