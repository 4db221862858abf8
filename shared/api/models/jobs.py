"""``POST /v1/jobs``: a sharded batch job, also a task's ``job`` target."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, Tag, field_validator, model_validator

from shared.api.models.calls import HttpProcessor, LambdaTarget, call_to_domain
from shared.api.models.fields import whole
from shared.api.types import Model, is_none, named, one_of, tag
from shared.domain import tasks as t
from shared.domain.codec import target_to_dict
from shared.domain.jobs import JobRequest
from shared.domain.progress import MAX_DONE_ITEMS
from shared.domain.sharding import MAX_LEVELS, MAX_SHARDS_PER_LEVEL, Sharding, plan


class ShardingIn(Model):
    min_items_per_shard: int = Field(1, strict=True, ge=1, le=1_000_000)
    max_items_per_shard: int = Field(100, strict=True, ge=1, le=1_000_000)
    max_shards: int = Field(20, strict=True, ge=1, le=MAX_SHARDS_PER_LEVEL)

    _whole = field_validator("min_items_per_shard", "max_items_per_shard", "max_shards", mode="before")(whole)


ProcessorIn = Annotated[
    Annotated[HttpProcessor, Tag(tag("http"))] | Annotated[LambdaTarget, Tag(tag("lambda"))],
    one_of(("http", "lambda"), "a job's processor"),
]


class JobIn(Model):
    """``POST /v1/jobs``, and a task's ``job`` target. Processor calls are retried by the state
    machine (3 attempts in all, 1 s then 2 s apart); a job has no ``retry`` of its own."""

    name: str | None = Field(None, exclude_if=is_none, min_length=1, max_length=t.MAX_NAME_LENGTH)
    processor: ProcessorIn
    data: list[list[Any]] = Field(
        default_factory=list,
        max_length=MAX_LEVELS,
        description=f"Items grouped by priority level (at most {MAX_LEVELS} levels).",
    )
    sharding: ShardingIn = Field(default_factory=lambda: ShardingIn.model_validate({}))
    notify_every_percent: int | None = Field(None, exclude_if=is_none, strict=True, ge=1, le=100)

    _whole = field_validator("notify_every_percent", mode="before")(whole)

    @model_validator(mode="after")
    def _shardable(self) -> JobIn:
        with named(""):
            plan(self.data, Sharding(**self.sharding.model_dump()))  # a job that cannot be sharded is refused now
        return self

    def to_request(self) -> JobRequest:
        processor = call_to_domain(self.processor)
        assert isinstance(processor, t.HttpTarget | t.LambdaTarget)
        return JobRequest(
            processor=processor,
            processor_dict=target_to_dict(processor),
            data=self.data,
            sharding=Sharding(**self.sharding.model_dump()),
            notify_every_percent=self.notify_every_percent,
            name=self.name,
        )


class ProgressIn(Model):
    """``POST /v1/jobs/{id}/progress``: a running shard's items done so far (a count never goes
    back: a lower one is taken and ignored)."""

    done_items: int = Field(strict=True, ge=0, le=MAX_DONE_ITEMS)

    _whole = field_validator("done_items", mode="before")(whole)


class ProgressOut(Model):
    cancelled: bool = Field(description="The job was cancelled: stop the shard's work.")
