"""``POST /v1/tasks:pause``, ``:resume``, ``:cancel``: a selector and a dry run (docs/bulk.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from shared.api.models.fields import whole
from shared.api.models.tags import Tags
from shared.api.types import Model, Problem, exactly_one_schema
from shared.domain import tasks as t
from shared.domain.bulk import MAX_STEP, Selector
from shared.domain.states import TaskFilter


class SelectorIn(Model):
    """Which tasks: exactly one of ``name_prefix``, ``tag`` (one key and its value) or ``status``."""

    model_config = Model.model_config | {"json_schema_extra": exactly_one_schema("name_prefix", "tag", "status")}

    name_prefix: Annotated[str, Field(min_length=1, max_length=t.MAX_NAME_LENGTH)] | None = Field(
        None, description="The tasks whose name starts with it (as GET /v1/tasks?name_prefix=)."
    )
    tag: Annotated[Tags, Field(min_length=1, max_length=1)] | None = Field(
        None, description='The tasks that have this tag: one key and its value, {"team": "orders"}.'
    )
    status: TaskFilter | None = Field(
        None, description="The tasks in this status (as GET /v1/tasks?status=; paused_after_failures too)."
    )

    @model_validator(mode="after")
    def _one(self) -> SelectorIn:
        given = [name for name in ("name_prefix", "tag", "status") if getattr(self, name) is not None]
        if len(given) != 1:
            raise Problem("", "give exactly one of name_prefix, tag, status")
        return self

    def to_domain(self) -> Selector:
        tag = next(iter(self.tag.items())) if self.tag else None
        return Selector(name_prefix=self.name_prefix, tag=tag, status=self.status)


class BulkIn(Model):
    """One step of a bulk operation: the selector, whether to write nothing (``dry_run``), and where
    the step starts (``cursor``: the last step's ``next_cursor``)."""

    selector: SelectorIn
    dry_run: bool = Field(False, strict=True, description="true: change nothing; answer what would change.")
    cursor: Annotated[str, Field(min_length=1, max_length=512)] | None = Field(
        None, description="next_cursor of the previous step (with the same selector)."
    )
    limit: int = Field(
        MAX_STEP, strict=True, ge=1, le=MAX_STEP, description=f"Tasks this step lists at most (1 to {MAX_STEP})."
    )

    _whole = field_validator("limit", mode="before")(whole)
