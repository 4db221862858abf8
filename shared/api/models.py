"""The HTTP API's request models (pydantic) and their conversion to domain specs.

Pydantic checks each field on its own (types, ranges, lengths); :meth:`TaskIn.to_spec` checks
what spans fields (exactly one schedule kind, ``target`` xor ``targets``...) and names the field
it is about. Responses are built from the domain by :mod:`shared.api.views`.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared.api.errors import from_pydantic
from shared.domain import schedules as sched
from shared.domain import tasks as t
from shared.domain.calendars import repeat_from_api
from shared.domain.codec import canonical_job, target_to_dict
from shared.domain.errors import FieldError, ValidationFailed
from shared.domain.retry import MAX_ATTEMPTS, MAX_INTERVAL_SECONDS, Backoff, RetryPolicy
from shared.domain.sharding import MAX_SHARDS_PER_LEVEL, Sharding, plan
from shared.domain.times import truncate_ms
from shared.services.jobs import JobRequest

MAX_AFTER_SECONDS = int(sched.MAX_AHEAD.total_seconds())
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
RESERVED_HEADERS = {
    "content-type",
    "content-length",
    "host",
    "idempotency-key",
    "transfer-encoding",
    # hop-by-hop: they describe one connection, not the request
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "proxy-connection",
}
LAMBDA_ARN = re.compile(r"^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]+)?$")
SNS_ARN = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$")
QUEUE_URL = re.compile(r"^https?://[^/\s]+/\d{12}/[A-Za-z0-9_-]{1,80}(\.fifo)?$")

Strict = ConfigDict(extra="forbid")


class Model(BaseModel):
    model_config = Strict


class ScheduleIn(Model):
    """Exactly one of ``at``, ``after_seconds``, ``cron`` or ``every_seconds``."""

    at: AwareDatetime | None = Field(
        None,
        description="One-shot instant with a UTC offset, millisecond precision. At most 366 days ahead; "
        "a time in the past (up to 24 h) fires at once when misfire is fire_now and is rejected "
        "otherwise; further back is rejected.",
    )
    after_seconds: float | None = Field(
        None, gt=0, le=MAX_AFTER_SECONDS, description="One-shot delay from registration, in seconds."
    )
    cron: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Cron expression: 5 fields (min hour dom mon dow) or 6 with seconds first.",
    )
    timezone: str | None = Field(None, max_length=64, description="IANA zone for cron (default UTC).")
    every_seconds: float | None = Field(
        None,
        ge=sched.MIN_EVERY_SECONDS,
        le=sched.MAX_EVERY_SECONDS,
        description="Fixed rate; without start, the first fire is one period after registration.",
    )
    start: AwareDatetime | None = Field(None, description="cron/every: no occurrence before it.")
    end: AwareDatetime | None = Field(None, description="cron/every: no occurrence after it.")
    repeat: dict[str, Any] | None = Field(
        None,
        description='Calendar rule: {"level": "hour|day|week|month|year|workday", "interval": 1, "days": [..], '
        '"time": "HH:MM[:SS]", "start": TIME, "timezone": IANA, "calendar": "CN", "end": TIME}. '
        "The time of day is `time`, else the local time of `start` (default: registration); `start` is the "
        "first occurrence when it matches. `interval` counts levels from start's: `month` with `days` "
        "[3, 5, 23] fires on those days (days a month lacks are skipped); `week` takes ISO weekdays "
        "(1 = Monday); `workday` fires on every Nth workday, a weekday that is not a public holiday "
        "of `calendar` (working days the calendar moves onto weekends count).",
    )

    def to_domain(self) -> sched.Schedule:
        kinds = [k for k in ("at", "after_seconds", "cron", "every_seconds", "repeat") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValidationFailed.on(
                "schedule",
                "give exactly one of at, after_seconds, cron, every_seconds, repeat"
                + (f" (got {', '.join(kinds)})" if kinds else ""),
            )
        kind = kinds[0]
        if self.timezone is not None and kind != "cron":
            raise ValidationFailed.on("schedule.timezone", "only a cron schedule takes a time zone")
        for name in ("start", "end"):
            if getattr(self, name) is not None and kind not in ("cron", "every_seconds"):
                raise ValidationFailed.on(f"schedule.{name}", f"only cron and every_seconds take {name}")
        start = truncate_ms(self.start) if self.start else None
        end = truncate_ms(self.end) if self.end else None
        if start and end and end <= start:
            raise ValidationFailed.on("schedule.end", "must be after start")
        if self.repeat is not None:
            return repeat_from_api(self.repeat)
        if self.at is not None:
            return sched.At(truncate_ms(self.at))
        if self.after_seconds is not None:
            return sched.After(self.after_seconds)
        if self.cron is not None:
            sched.check_cron(self.cron)
            zone = self.timezone or "UTC"
            sched.zone_of(zone)
            return sched.Cron(" ".join(self.cron.split()), zone, start, end)
        assert self.every_seconds is not None
        return sched.Every(self.every_seconds, start, end)


class HttpTargetIn(Model):
    url: str = Field(min_length=1, max_length=t.MAX_URL_LENGTH, description="http or https URL.")
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict, description=f"At most {t.MAX_HEADERS} headers.")
    timeout_seconds: float = Field(t.DEFAULT_TIMEOUT_SECONDS, gt=0, le=t.MAX_TIMEOUT_SECONDS)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s?#]+", value) or any(c.isspace() for c in value):
            raise ValueError("must be an absolute http:// or https:// URL")
        if "@" in value.split("/", 3)[2]:
            raise ValueError("must not carry credentials (user:password@): put them in a header")
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > t.MAX_HEADERS:
            raise ValueError(f"at most {t.MAX_HEADERS} headers")
        for name, text in value.items():
            if not HEADER_NAME.match(name) or len(name) > t.MAX_HEADER_NAME:
                raise ValueError(f"{name!r} is not a valid header name")
            if name.lower() in RESERVED_HEADERS or name.lower().startswith("sundial-"):
                raise ValueError(f"{name!r} is set by Sundial and cannot be overridden")
            if len(text) > t.MAX_HEADER_VALUE or "\r" in text or "\n" in text:
                raise ValueError(f"the value of {name!r} is too long or has a line break")
        return value


def _matching(pattern: re.Pattern[str], what: str) -> Any:
    def check(cls: type, value: str) -> str:
        if not pattern.match(value):
            raise ValueError(f"must be {what}")
        return value

    return classmethod(check)


class LambdaTargetIn(Model):
    function_arn: str = Field(max_length=256)
    _check = field_validator("function_arn")(_matching(LAMBDA_ARN, "a Lambda function ARN"))


class SqsTargetIn(Model):
    queue_url: str = Field(max_length=512)
    _check = field_validator("queue_url")(_matching(QUEUE_URL, "an SQS queue URL"))


class SnsTargetIn(Model):
    topic_arn: str = Field(max_length=300)
    _check = field_validator("topic_arn")(_matching(SNS_ARN, "an SNS topic ARN"))


class EventBridgeTargetIn(Model):
    event_bus: str = Field(min_length=1, max_length=1600, description="Bus name or ARN.")
    source: str = Field(min_length=1, max_length=256, description="Not starting with `aws.` (AWS's own).")
    detail_type: str = Field(min_length=1, max_length=128)

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        if value.startswith("aws."):
            raise ValueError("sources starting with 'aws.' are reserved for AWS services")
        return value


class TargetIn(Model):
    """Exactly one of ``http``, ``lambda``, ``sqs``, ``sns``, ``eventbridge``."""

    http: HttpTargetIn | None = None
    lambda_: LambdaTargetIn | None = Field(None, alias="lambda")
    sqs: SqsTargetIn | None = None
    sns: SnsTargetIn | None = None
    eventbridge: EventBridgeTargetIn | None = None
    job: JobIn | None = Field(None, description="Start this sharded batch job at every occurrence.")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_domain(self, field: str) -> t.Target:
        given = [k for k in ("http", "lambda_", "sqs", "sns", "eventbridge", "job") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValidationFailed.on(field, "give exactly one of http, lambda, sqs, sns, eventbridge, job")
        if self.job is not None:
            try:
                self.job.to_request()
            except ValidationFailed as exc:
                details = [FieldError(f"{field}.job.{d.field}", d.message) for d in exc.details]
                raise ValidationFailed("; ".join(f"{d.field}: {d.message}" for d in details), details) from exc
            return t.JobTarget(canonical_job(self.job.model_dump(mode="json", by_alias=True, exclude_none=True)))
        if self.http is not None:
            h = self.http
            return t.HttpTarget(h.url, h.method, dict(h.headers), h.timeout_seconds)
        if self.lambda_ is not None:
            return t.LambdaTarget(self.lambda_.function_arn)
        if self.sqs is not None:
            return t.SqsTarget(self.sqs.queue_url)
        if self.sns is not None:
            return t.SnsTarget(self.sns.topic_arn)
        assert self.eventbridge is not None
        e = self.eventbridge
        return t.EventBridgeTarget(e.event_bus, e.source, e.detail_type)


class RetryIn(Model):
    max_attempts: int = Field(3, ge=1, le=MAX_ATTEMPTS, description="Attempts in all, the first included.")
    backoff: Backoff = Backoff.EXPONENTIAL
    interval_seconds: float = Field(
        2.0, ge=1, le=MAX_INTERVAL_SECONDS, description="Fixed delay, or the first delay (doubling)."
    )


class TaskIn(Model):
    name: str | None = Field(None, min_length=1, max_length=t.MAX_NAME_LENGTH)
    schedule: ScheduleIn
    target: TargetIn | None = None
    targets: list[TargetIn] | None = Field(None, min_length=1, max_length=t.MAX_TARGETS)
    payload: Any = Field(None, description=f"Any JSON value, at most {t.MAX_PAYLOAD_BYTES} bytes as JSON.")
    retry: RetryIn | None = None
    misfire: t.Misfire | None = None

    def to_spec(self) -> t.TaskSpec:
        errors: list[FieldError] = []
        schedule: sched.Schedule | None = None
        targets: list[t.Target] = []
        try:
            schedule = self.schedule.to_domain()
        except ValidationFailed as exc:
            errors.extend(exc.details)
        if (self.target is None) == (self.targets is None):
            errors.append(FieldError("target", "give exactly one of target or targets"))
        for index, target in enumerate(self.targets or ([self.target] if self.target else [])):
            field = f"targets[{index}]" if self.targets is not None else "target"
            try:
                targets.append(target.to_domain(field))
            except ValidationFailed as exc:
                errors.extend(exc.details)
        if self.payload is not None:
            size = len(json.dumps(self.payload, separators=(",", ":")).encode())
            if size > t.MAX_PAYLOAD_BYTES:
                errors.append(FieldError("payload", f"is {size} bytes as JSON; the limit is {t.MAX_PAYLOAD_BYTES}"))
        if errors or schedule is None:
            raise ValidationFailed(
                "the task is not valid: " + "; ".join(f"{e.field}: {e.message}" for e in errors), errors
            )
        retry = RetryPolicy() if self.retry is None else RetryPolicy(**self.retry.model_dump())
        return t.TaskSpec(
            schedule=schedule,
            targets=tuple(targets),
            multicast=self.targets is not None,
            name=self.name,
            payload=self.payload,
            retry=retry,
            misfire=self.misfire,
        )


class ShardingIn(Model):
    min_items_per_shard: int = Field(1, ge=1)
    max_items_per_shard: int = Field(100, ge=1)
    max_shards: int = Field(20, ge=1, le=MAX_SHARDS_PER_LEVEL)


class JobIn(Model):
    """``POST /v1/jobs`` (docs/api.md "Jobs"). Processor calls are retried by the state machine
    (infra/jobs.py: 3 attempts in all, 1 s then 2 s apart); a job has no ``retry`` of its own."""

    name: str | None = Field(None, min_length=1, max_length=t.MAX_NAME_LENGTH)
    processor: TargetIn
    data: list[list[Any]] = Field(default_factory=list, description="Items grouped by priority level.")
    sharding: ShardingIn = Field(default_factory=lambda: ShardingIn.model_validate({}))
    notify_every_percent: int | None = Field(None, ge=1, le=100)

    def to_request(self) -> JobRequest:
        processor = self.processor.to_domain("processor")
        if not isinstance(processor, t.HttpTarget | t.LambdaTarget):
            raise ValidationFailed.on("processor", "a job's processor is an http or a lambda target")
        sharding = Sharding(**self.sharding.model_dump())
        plan(self.data, sharding)  # a job that cannot be sharded is refused now, not when it runs
        return JobRequest(
            processor=processor,
            processor_dict=target_to_dict(processor),
            data=self.data,
            sharding=sharding,
            notify_every_percent=self.notify_every_percent,
            name=self.name,
        )


TargetIn.model_rebuild()  # its ``job`` is a JobIn, whose processor is a TargetIn

Limit = Annotated[int, Field(ge=1, le=100)]
MAX_BATCH = 100
MAX_PREVIEW = 100
IDEMPOTENCY_KEY = "Idempotency-Key"
MAX_IDEMPOTENCY_KEY = 255


class TaskPatchIn(Model):
    """``PATCH /v1/tasks/{id}``: any of these fields; those given replace the task's. A new
    ``schedule`` (even the same one) re-arms the task; ``target`` replaces ``targets`` and the
    other way round."""

    name: str | None = Field(None, min_length=1, max_length=t.MAX_NAME_LENGTH)
    schedule: ScheduleIn | None = None
    target: TargetIn | None = None
    targets: list[TargetIn] | None = Field(None, min_length=1, max_length=t.MAX_TARGETS)
    payload: Any = None
    retry: RetryIn | None = None
    misfire: t.Misfire | None = None

    def apply(self, current: dict[str, Any]) -> tuple[t.TaskSpec, bool]:
        """The spec of a task whose API form is ``current`` once this patch is applied, and
        whether it gives a schedule."""
        given = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if not given:
            raise ValidationFailed.on("body", "give at least one of " + ", ".join(TaskPatchIn.model_fields))
        if "target" in given and "targets" in given:
            raise ValidationFailed.on("target", "give target or targets, not both")
        merged = {k: v for k, v in current.items() if k in TaskIn.model_fields}
        if "target" in given:
            merged.pop("targets", None)
        if "targets" in given:
            merged.pop("target", None)
        merged.update(given)
        if merged.get("name") is None:
            merged.pop("name", None)
        try:
            spec = TaskIn.model_validate(merged).to_spec()
        except ValidationError as exc:
            raise from_pydantic(exc.errors()) from exc
        return spec, "schedule" in given


def parse_version(header: str) -> int:
    """An ``If-Match`` header: the task's ``version`` (as its ``ETag``, quoted or not)."""
    text = header.strip().removeprefix("W/").strip('"')
    if not text.isdigit():
        raise ValidationFailed.on("If-Match", 'is the task\'s version, as GET returns it in ETag (e.g. "3")')
    return int(text)


class BatchIn(Model):
    """``POST /v1/tasks:batch``: each spec is validated and registered on its own."""

    tasks: list[Any] = Field(min_length=1, max_length=MAX_BATCH, description="Task specs, as POST /v1/tasks.")


def spec_or_error(raw: Any) -> t.TaskSpec | ValidationFailed:
    """One batch item as a spec, or the error that answers its index (fields named within it)."""
    if not isinstance(raw, dict):
        return ValidationFailed.on("body", "a task spec is a JSON object")
    try:
        return TaskIn.model_validate(raw).to_spec()
    except ValidationError as exc:
        return from_pydantic(exc.errors())
    except ValidationFailed as exc:
        return exc


class PreviewIn(Model):
    """``POST /v1/schedules:preview``: the next occurrences of a schedule, without registering."""

    schedule: ScheduleIn
    count: int = Field(5, ge=1, le=MAX_PREVIEW)
    after: AwareDatetime | None = Field(
        None,
        description="Occurrences at or after this instant; without it, from now, as if registered now "
        "(the first time is then the task's next_fire_at).",
    )


class RedriveIn(Model):
    """``POST /v1/dead-letters/redrive``: ``{"ids": [...]}`` or ``{"all": true}``."""

    ids: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(None, min_length=1, max_length=100)
    all: bool | None = None

    def chosen(self) -> list[str] | None:
        """The ids to redrive, or ``None`` for every one not redriven yet."""
        if (self.ids is None) == (self.all is not True):
            raise ValidationFailed.on("ids", 'give {"ids": [...]} or {"all": true}')
        return self.ids


class ErrorDetail(Model):
    field: str
    message: str


class ErrorBody(Model):
    code: str
    message: str
    details: list[ErrorDetail] | None = None


class ErrorOut(Model):
    error: ErrorBody
