"""Tenants and their limits (docs/tenancy.md): the admin's routes."""

from __future__ import annotations

from typing import Self

from pydantic import ConfigDict, Field, field_validator, model_validator

from shared.api.models.fields import whole
from shared.api.types import Model, Problem
from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND, MAX_TASKS, TENANT_ID_PATTERN


class LimitsIn(Model):
    """A tenant's limits; a member left out keeps its value (a new tenant: the deployment's default)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"minProperties": 1})

    requests_per_second: int | None = Field(
        None, strict=True, ge=1, le=MAX_REQUESTS_PER_SECOND, description="Requests a second, on average."
    )
    burst: int | None = Field(None, strict=True, ge=1, le=MAX_BURST, description="Requests at once above the rate.")
    max_tasks: int | None = Field(
        None, strict=True, ge=1, le=MAX_TASKS, description="Tasks that can still fire (registrations above: 429)."
    )

    _whole = field_validator("requests_per_second", "burst", "max_tasks", mode="before")(whole)

    @model_validator(mode="after")
    def _at_least_one(self) -> Self:
        if not self.model_fields_set:
            raise Problem("", "give at least one of " + ", ".join(LimitsIn.model_fields))
        return self


class TenantIn(Model):
    """``POST /v1/tenants``."""

    id: str = Field(pattern=TENANT_ID_PATTERN, min_length=1, max_length=64, description="1-64 of a-z, 0-9 and -.")
    limits: LimitsIn | None = None


class TenantPatchIn(Model):
    """``PATCH /v1/tenants/{id}``."""

    limits: LimitsIn
