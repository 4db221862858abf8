"""``POST /v1/jobs``: a sharded batch job, also a task's ``job`` target."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, Tag, field_validator, model_validator

from shared.api.models.calls import HttpProcessor, LambdaTarget, call_to_domain
from shared.api.models.fields import whole
from shared.api.types import Instant, Model, is_none, named, one_of, tag
from shared.domain import tasks as t
from shared.domain.codec import target_to_dict
from shared.domain.job_commands import (
    COMMAND_LEASE_MS,
    COMMAND_PATTERN,
    MAX_ACKNOWLEDGED,
    MAX_ARGS_BYTES,
    MAX_COMMAND_ID_LENGTH,
    MAX_COMMAND_LENGTH,
    checked_args,
)
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
    acknowledged: list[Annotated[str, Field(min_length=1, max_length=MAX_COMMAND_ID_LENGTH)]] = Field(
        default_factory=list,
        max_length=MAX_ACKNOWLEDGED,
        description="The ids of the commands earlier answers carried to this processor: they are dropped. One "
        f"not acknowledged within {COMMAND_LEASE_MS // 1000} s of its offer is offered again to the next report.",
    )

    _whole = field_validator("done_items", mode="before")(whole)


class CommandIn(Model):
    """``POST /v1/jobs/{id}/commands``: a command to the running job's processor, offered in the
    answer to a shard's next progress report until a report acknowledges it."""

    command: str = Field(
        min_length=1,
        max_length=MAX_COMMAND_LENGTH,
        pattern=COMMAND_PATTERN,
        description="The command's name, as the processor knows it: a letter or digit, then letters, digits, "
        "`_ . : -`.",
    )
    args: dict[str, Any] = Field(
        default_factory=dict, description=f"Its arguments: a JSON object, at most {MAX_ARGS_BYTES} bytes as JSON."
    )

    @field_validator("args")
    @classmethod
    def _args(cls, value: dict[str, Any]) -> dict[str, Any]:
        with named("args"):
            return checked_args(value)


class CommandOut(Model):
    """A command, as it is kept and as a progress report's answer carries it."""

    id: str = Field(description="The command's id (the processor may use it to do a command once).")
    command: str
    args: dict[str, Any]
    sent_at: Instant = Field(description="When the API took it.")


class ProgressOut(Model):
    cancelled: bool = Field(description="The job was cancelled: stop the shard's work.")
    commands: list[CommandOut] = Field(
        default_factory=list,
        description="The commands sent to the job (POST /v1/jobs/{job_id}/commands) that no report was offered, "
        f"or was offered over {COMMAND_LEASE_MS // 1000} s ago and did not acknowledge, oldest first: acknowledge "
        "their ids in the next report (a command may come again until then: tell them apart by id).",
    )
