"""The members a task's registration and its PATCH share: their types, bounds and descriptions."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator

from shared.api.models.fields import whole
from shared.api.models.targets import TargetIn
from shared.api.types import Model, Problem
from shared.domain import tasks as t
from shared.domain.chains import MAX_CHILDREN, MAX_HOPS, check_children
from shared.domain.errors import ValidationFailed
from shared.domain.retry import (
    MAX_AGE_SECONDS,
    MAX_ATTEMPTS,
    MAX_INTERVAL_SECONDS,
    MIN_AGE_SECONDS,
    Backoff,
    RetryPolicy,
)

ALERT = "Where the task's alerts go (default none)."
PAUSE_AFTER = (
    f"Pause the task when this many of its occurrences in a row have failed (1 to {t.MAX_FAILURE_COUNT}; "
    "a recurring task's: a one-shot ends with its occurrence). Default: never."
)


class RetryIn(Model):
    max_attempts: int = Field(3, strict=True, ge=1, le=MAX_ATTEMPTS, description="Attempts in all, the first included.")
    backoff: Backoff = Backoff.EXPONENTIAL
    interval_seconds: float = Field(
        2.0, strict=True, ge=1, le=MAX_INTERVAL_SECONDS, description="Fixed delay, or the first delay (doubling)."
    )
    max_age_seconds: int | None = Field(
        None,
        strict=True,
        ge=MIN_AGE_SECONDS,
        le=MAX_AGE_SECONDS,
        description="No attempt starts later than this after the occurrence's time (null: attempts alone "
        "bound the retries). An occurrence too old to retry is dead-lettered.",
    )

    _whole = field_validator("max_attempts", "max_age_seconds", mode="before")(whole)

    def to_domain(self) -> RetryPolicy:
        return RetryPolicy(**self.model_dump())


def retry_policy(retry: RetryIn | None) -> RetryPolicy:
    """``retry`` in the domain; ``null`` or left out of a registration: the default policy."""
    return RetryPolicy() if retry is None else retry.to_domain()


def payload_fits(payload: Any) -> Any:
    size = len(json.dumps(payload, separators=(",", ":")).encode())
    if size > t.MAX_PAYLOAD_BYTES:
        raise ValueError(f"is {size} bytes as JSON; the limit is {t.MAX_PAYLOAD_BYTES}")
    return payload


Name = Annotated[str, Field(min_length=1, max_length=t.MAX_NAME_LENGTH)]
TargetList = Annotated[list[TargetIn], Field(min_length=1, max_length=t.MAX_TARGETS)]
PAYLOAD = f"Any JSON value, at most {t.MAX_PAYLOAD_BYTES} bytes as compact JSON."
PRIORITY = (
    "high: the task's occurrences travel through their own delay queue and trigger capacity, so a "
    "flood of normal tasks does not delay them. Default: normal."
)


TASK_ID_PATTERN = "^[0-7][0-9A-HJKMNP-TV-Z]{25}$"
"""A task id as the API answers it: 26 upper-case Crockford base32 characters, 128 bits."""
ChildList = Annotated[
    list[Annotated[str, Field(pattern=TASK_ID_PATTERN, description="A task id of the same tenant, as answered.")]],
    Field(max_length=MAX_CHILDREN, json_schema_extra={"uniqueItems": True}),
]
ON_SUCCESS = (
    f"Tasks (up to {MAX_CHILDREN}, of the same tenant) that each run once, now, when an occurrence of this "
    "task succeeds, as POST /v1/tasks/{id}/run would; their callback body carries `parent`. A chain stops "
    f"after {MAX_HOPS} hops. Default: none."
)
ON_FAILURE = (
    f"Tasks (up to {MAX_CHILDREN}, of the same tenant) that each run once when an occurrence of this task "
    "fails for good (failed, or dead-lettered after its retries). Default: none."
)


def distinct_children(value: list[str] | None, info: ValidationInfo) -> list[str] | None:
    """``on_success`` / ``on_failure``: no id twice (their existence is the service's check)."""
    if value is None:
        return None
    member = str(info.field_name)
    try:
        return list(check_children(member, value))
    except ValidationFailed as exc:
        detail = exc.details[0]
        raise Problem(detail.field.removeprefix(member), detail.message) from exc
