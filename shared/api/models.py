"""The HTTP API's request models (pydantic): they are the contract the OpenAPI document shows.

"Exactly one of" is a union with a discriminator (``oneOf`` in the document); rules across
fields are model validators raising :class:`~shared.api.types.Problem` with the member they are
about; the domain's own checks (a cron expression, a calendar rule, a job's sharding) run in
those validators, so a model that validates converts to the domain without another error. The
schedule and target models are also how tasks are answered: whatever the API returns, it
accepts back.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from shared.api.errors import from_pydantic
from shared.api.types import (
    Instant,
    Model,
    Problem,
    exactly_one_schema,
    is_none,
    named,
    one_of,
    tag,
)
from shared.domain import schedules as sched
from shared.domain import tasks as t
from shared.domain.addresses import host_as_called, is_metadata_literal
from shared.domain.calendars import MAX_INTERVAL, Level, repeat_from_api
from shared.domain.chains import MAX_CHILDREN, MAX_HOPS, check_children
from shared.domain.codec import canonical_job, repeat_to_api, target_to_dict
from shared.domain.errors import ValidationFailed
from shared.domain.jobs import JobRequest
from shared.domain.limits import MAX_BURST as MAX_LIMIT_BURST
from shared.domain.limits import (
    MAX_IN_FLIGHT,
    MAX_PER_SECOND,
    MIN_PER_SECOND,
    NAME_PATTERN,
    LimitSpec,
    parse_origin,
)
from shared.domain.retry import MAX_ATTEMPTS, MAX_INTERVAL_SECONDS, Backoff, RetryPolicy
from shared.domain.secrets import kept
from shared.domain.sharding import MAX_LEVELS, MAX_SHARDS_PER_LEVEL, Sharding, plan
from shared.domain.signing import (
    DEFAULT_PREVIOUS_EXPIRES_IN_SECONDS,
    MAX_PREVIOUS_EXPIRES_IN_SECONDS,
    SIGNATURE_HEADERS,
)
from shared.domain.tenants import MAX_BURST, MAX_REQUESTS_PER_SECOND, MAX_TASKS, TENANT_ID_PATTERN
from shared.domain.wallclock import zone_of

MAX_AFTER_SECONDS = int(sched.MAX_AHEAD.total_seconds())
MAX_BATCH = 100
MAX_PREVIEW = 100
MAX_PAGE = 100
IDEMPOTENCY_KEY = "Idempotency-Key"
MAX_IDEMPOTENCY_KEY = 255
MAX_CRON_LENGTH = 200
MAX_ZONE_LENGTH = 64

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
    # the signature of a signed callback (Standard Webhooks): Sundial's to set
    *SIGNATURE_HEADERS,
}
LAMBDA_ARN = r"^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]{1,128})?$"
SNS_ARN = r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$"
QUEUE_URL = r"^https?://[^/\x00-\x20\x7f]+/[0-9]{12}/[A-Za-z0-9_-]{1,80}(\.fifo)?$"
r"""ASCII classes only, as in :data:`HTTP_URL`: a ``\s`` or ``\d`` reads differently in JSON Schema's
dialect (and the OpenAPI fuzzer's reading of it) than in the API's validator, which refused hosts
the document admitted (a non-ASCII space)."""
URL_PORT = (
    r"(0{0,4}[1-9]|0{0,3}[1-9][0-9]|0{0,2}[1-9][0-9]{2}|0?[1-9][0-9]{3}|[1-5][0-9]{4}|6[0-4][0-9]{3}"
    r"|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])?"
)
"""A URL's port: 1 to 65535 in at most five digits (leading zeros allowed, as the URL parser reads
them), or none after the colon (the scheme's default)."""
HTTP_URL = rf"^https?://(\[[0-9A-Fa-f:.]+\]|[^/?#@\[\]:\x00-\x20\x7f]+)(:{URL_PORT})?([/?#][^\x00-\x20\x7f]*)?$"
r"""An absolute http(s) URL: a host (or a bracketed IPv6 address), an optional port (1 to 65535), no
user info, no spaces or control characters (ASCII classes only: JSON Schema's and Python's ``\s``
differ)."""
LIMIT_NAME = NAME_PATTERN.pattern
PORT = r"(0?[0-9]{0,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
ORIGIN = rf"^[Hh][Tt][Tt][Pp][Ss]?://(\[[0-9A-Fa-f:.]+\]|[^/?#@\[\]:\x00-\x20\x7f]+)(:{PORT})?/?$"
"""An origin: http(s), a host or a bracketed IPv6 address, an optional port, nothing after."""
ZONE = r"^[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*$"
CRON_FIELDS = sched.CRON_PATTERN

CRON_DESCRIPTION = (
    "Cron expression: 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds "
    "first, evaluated in `timezone`. Fields take numbers, ranges (`1-5`), steps (`*/15`, `10-50/10`), "
    "lists (`1,15`) and names (`JAN`, `MON`); day-of-week 0 or 7 is Sunday. The two day fields "
    "follow Vixie cron (Debian, Ubuntu, RHEL): when both are restricted (neither starts with `*` or `?`) "
    "a day matches if either matches (`30 4 1,15 * 5`: the 1st, the 15th and every Friday); when one "
    "of them starts with `*` (`*`, `*/5`) or is `?`, both must match (`0 0 */5 * 1`: Mondays that "
    "are the 1st, 6th, 11th... of a month)."
)


# --- schedules -----------------------------------------------------------------------------------


def _end_after_start(start: Any, end: Any) -> None:
    if start is not None and end is not None and end <= start:
        raise Problem("end", "must be after start")


class AtSchedule(Model):
    """One shot, at an instant."""

    at: Instant = Field(
        description="One-shot instant with a UTC offset, millisecond precision. At most 366 days ahead; "
        "a time in the past (up to 24 h) fires at once when misfire is fire_now and is rejected "
        "otherwise; further back is rejected.",
    )


class AfterSchedule(Model):
    """One shot, a delay after registration."""

    after_seconds: float = Field(
        gt=0, le=MAX_AFTER_SECONDS, description="One-shot delay from registration, in seconds."
    )


class CronSchedule(Model):
    """Cron, in a time zone, optionally between ``start`` and ``end``."""

    cron: str = Field(
        min_length=1,
        max_length=MAX_CRON_LENGTH,
        description=CRON_DESCRIPTION,
        json_schema_extra={"pattern": CRON_FIELDS},  # checked by _cron, with a message that says why
    )
    timezone: str = Field(
        "UTC", min_length=1, max_length=MAX_ZONE_LENGTH, pattern=ZONE, description="IANA time zone (default UTC)."
    )
    start: Instant | None = Field(None, exclude_if=is_none, description="No occurrence before it.")
    end: Instant | None = Field(None, exclude_if=is_none, description="No occurrence after it.")

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        with named("cron"):
            sched.check_cron(value, "cron")
        return " ".join(value.split())

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        with named("timezone"):
            zone_of(value, "timezone")
        return value

    @model_validator(mode="after")
    def _window(self) -> CronSchedule:
        _end_after_start(self.start, self.end)
        return self


class EverySchedule(Model):
    """A fixed rate; without ``start`` the first fire is one period after registration."""

    every_seconds: float = Field(
        ge=sched.MIN_EVERY_SECONDS, le=sched.MAX_EVERY_SECONDS, description="The period, in seconds."
    )
    start: Instant | None = Field(
        None, exclude_if=is_none, description="The first occurrence (the grid counts from it)."
    )
    end: Instant | None = Field(None, exclude_if=is_none, description="No occurrence after it.")

    @model_validator(mode="after")
    def _window(self) -> EverySchedule:
        _end_after_start(self.start, self.end)
        return self


TIME_OF_DAY = r"^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?$"


def _days(high: int, what: str) -> Any:
    return Field(
        None,
        exclude_if=is_none,
        min_length=1,
        max_length=high,
        description=what,
    )


def _time() -> Any:
    return Field(
        None, exclude_if=is_none, pattern=TIME_OF_DAY, description="Local time of day HH:MM[:SS]; default start's."
    )


class Rule(Model):
    """What every calendar rule has; each level is a model of its own, with only its members."""

    interval: int = Field(1, ge=1, le=MAX_INTERVAL, description="Every Nth unit, counted from start's unit.")
    start: Instant | None = Field(
        None,
        exclude_if=is_none,
        description="The first occurrence when it matches the rule; the count starts here (default: now).",
    )
    end: Instant | None = Field(None, exclude_if=is_none, description="No occurrence after it.")
    timezone: str = Field(
        "UTC", min_length=1, max_length=MAX_ZONE_LENGTH, pattern=ZONE, description="IANA time zone (default UTC)."
    )

    @model_validator(mode="after")
    def _rule(self) -> Self:
        with named("repeat"):
            repeat_from_api(self.model_dump(mode="json", exclude_none=True), "repeat")
        return self


class HourRule(Rule):
    """Every ``interval`` hours from ``start`` on the absolute time line (no time of day)."""

    level: Literal["hour"]


class DayRule(Rule):
    level: Literal["day"]
    time: str | None = _time()


class WeekRule(Rule):
    level: Literal["week"]
    days: list[Annotated[int, Field(ge=1, le=7)]] | None = _days(7, "ISO weekdays (1 = Monday); default start's.")
    time: str | None = _time()


class MonthRule(Rule):
    level: Literal["month"]
    days: list[Annotated[int, Field(ge=1, le=31)]] | None = _days(
        31, "Days of month; a day a month lacks is skipped, not moved. Default start's."
    )
    time: str | None = _time()


class YearRule(Rule):
    """``start``'s month and day every ``interval`` years (February 29: leap years only)."""

    level: Literal["year"]
    time: str | None = _time()


class WorkdayRule(Rule):
    """Every ``interval``-th workday: a weekday that is not a public holiday of ``calendar``."""

    level: Literal["workday"]
    time: str | None = _time()
    calendar: str | None = Field(
        None,
        exclude_if=is_none,
        min_length=2,
        max_length=3,
        pattern=r"^[A-Z]{2,3}$",
        description="A country code whose public holidays are not workdays (working days it moves onto "
        "weekends are); default Monday to Friday.",
    )


LEVELS = tuple(level.value for level in Level)


def _level(value: Any) -> str | None:
    level = value.get("level") if isinstance(value, dict) else getattr(value, "level", None)
    return tag(level) if level in LEVELS else None


RepeatRule = Annotated[
    Annotated[HourRule, Tag(tag("hour"))]
    | Annotated[DayRule, Tag(tag("day"))]
    | Annotated[WeekRule, Tag(tag("week"))]
    | Annotated[MonthRule, Tag(tag("month"))]
    | Annotated[YearRule, Tag(tag("year"))]
    | Annotated[WorkdayRule, Tag(tag("workday"))],
    Discriminator(_level, custom_error_type="unknown_level", custom_error_message=f"is one of {', '.join(LEVELS)}"),
]
"""A calendar rule: "every 2nd month on the 3rd, 5th and 23rd at 09:00". The time of day is
``time``, else the local time of ``start``, in ``timezone``."""
RULES: TypeAdapter[HourRule | DayRule | WeekRule | MonthRule | YearRule | WorkdayRule] = TypeAdapter(RepeatRule)


class RepeatSchedule(Model):
    """A calendar rule (hour, day, week, month, year, workday)."""

    repeat: RepeatRule

    def rule(self) -> sched.Schedule:
        return repeat_from_api(self.repeat.model_dump(mode="json", exclude_none=True))


ScheduleIn = Annotated[
    Annotated[AtSchedule, Tag(tag("at"))]
    | Annotated[AfterSchedule, Tag(tag("after_seconds"))]
    | Annotated[CronSchedule, Tag(tag("cron"))]
    | Annotated[EverySchedule, Tag(tag("every_seconds"))]
    | Annotated[RepeatSchedule, Tag(tag("repeat"))],
    one_of(("at", "after_seconds", "cron", "every_seconds", "repeat"), "the schedule's kind"),
]
"""Exactly one of ``at``, ``after_seconds``, ``cron``, ``every_seconds``, ``repeat``."""

Schedules = AtSchedule | AfterSchedule | CronSchedule | EverySchedule | RepeatSchedule


def schedule_to_domain(schedule: Schedules) -> sched.Schedule:
    if isinstance(schedule, AtSchedule):
        return sched.At(schedule.at)
    if isinstance(schedule, AfterSchedule):
        return sched.After(schedule.after_seconds)
    if isinstance(schedule, CronSchedule):
        return sched.Cron(schedule.cron, schedule.timezone, schedule.start, schedule.end)
    if isinstance(schedule, EverySchedule):
        return sched.Every(schedule.every_seconds, schedule.start, schedule.end)
    return schedule.rule()


def schedule_of(schedule: sched.Schedule) -> Schedules:
    """A domain schedule as the API shows it."""
    if isinstance(schedule, sched.At):
        return AtSchedule(at=schedule.at)
    if isinstance(schedule, sched.After):
        return AfterSchedule(after_seconds=schedule.seconds)
    if isinstance(schedule, sched.Cron):
        return CronSchedule(
            cron=schedule.expression, timezone=schedule.timezone, start=schedule.start, end=schedule.end
        )
    if isinstance(schedule, sched.Every):
        return EverySchedule(every_seconds=schedule.seconds, start=schedule.start, end=schedule.end)
    return RepeatSchedule(repeat=RULES.validate_python(repeat_to_api(schedule)))


# --- targets -------------------------------------------------------------------------------------


class HttpCall(Model):
    url: str = Field(
        min_length=1,
        max_length=t.MAX_URL_LENGTH,
        description="Absolute http:// or https:// URL, without user:password@ (put credentials in a header).",
        json_schema_extra={"pattern": HTTP_URL},  # checked by _url, with a message that says why
    )
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[
        Annotated[str, Field(min_length=1, max_length=t.MAX_HEADER_NAME, pattern=HEADER_NAME.pattern)],
        Annotated[str, Field(max_length=t.MAX_HEADER_VALUE, pattern=r"^[^\r\n]*$")],
    ] = Field(
        default_factory=dict,
        max_length=t.MAX_HEADERS,
        description=f"At most {t.MAX_HEADERS} headers; Content-Type, Host, Idempotency-Key, webhook-*, "
        "hop-by-hop headers and Sundial-* are Sundial's.",
        json_schema_extra={"additionalProperties": False},  # a name outside the pattern is refused
    )
    timeout_seconds: float = Field(t.DEFAULT_TIMEOUT_SECONDS, gt=0, le=t.MAX_TIMEOUT_SECONDS)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        # the authority ends at the first /, ? or # after "//" (an @ in a path or fragment is not one)
        authority = re.split(r"[/?#]", value.partition("//")[2], maxsplit=1)[0]
        if "@" in authority:
            raise ValueError("must not carry credentials (user:password@): put them in a header")
        port = re.search(r"(?<!\]):([0-9]+)$|\]:([0-9]+)$", authority)
        if port is not None and not 1 <= int(port[1] or port[2]) <= 65_535:
            raise ValueError(f"has port {port[1] or port[2]}: a port is 1 to 65535")
        if not re.match(HTTP_URL, value):
            raise ValueError("must be an absolute http:// or https:// URL, without spaces or control characters")
        try:
            host = host_as_called(urlsplit(value).hostname or "")
        except ValueError as exc:  # a bracketed host that is no IPv6 address, or one with no IDNA form
            raise ValueError(f"has no valid host ({exc})") from exc
        if is_metadata_literal(host):
            raise ValueError(f"points at a cloud metadata endpoint ({host}): a target that can never be right")
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if name.lower() in RESERVED_HEADERS or name.lower().startswith("sundial-"):
                raise ValueError(f"{name!r} is set by Sundial and cannot be overridden")
        return value


class HttpTaskCall(HttpCall):
    """A task's HTTP target: a call, and the limit per destination it is held to."""

    limit: str | None = Field(
        None,
        exclude_if=is_none,
        min_length=1,
        max_length=64,
        pattern=LIMIT_NAME,
        description="The name of one of the tenant's limits (`PUT /v1/limits/{name}`) this target is held to, "
        "whatever its URL; without it, the limit whose `origin` is the URL's, if there is one. A name the "
        "tenant has no limit of is refused when the target is given; a limit deleted later stops applying.",
    )


class LambdaCall(Model):
    function_arn: str = Field(max_length=256, pattern=LAMBDA_ARN)


class SqsSend(Model):
    queue_url: str = Field(max_length=512, pattern=QUEUE_URL)


class SnsPublish(Model):
    topic_arn: str = Field(max_length=300, pattern=SNS_ARN)


class EventBridgePut(Model):
    event_bus: str = Field(min_length=1, max_length=1600, description="Bus name or ARN.")
    source: str = Field(
        min_length=1,
        max_length=256,
        description="Not starting with `aws.` (AWS's own).",
        json_schema_extra={"pattern": r"^(?!aws\.)"},
    )
    detail_type: str = Field(min_length=1, max_length=128)

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        if value.startswith("aws."):
            raise ValueError("sources starting with 'aws.' are reserved for AWS services")
        return value


class HttpTarget(Model):
    http: HttpTaskCall


class HttpProcessor(Model):
    """A job's HTTP processor (not held to limits per destination: it has no ``limit``)."""

    http: HttpCall


class LambdaTarget(Model):
    lambda_: LambdaCall = Field(alias="lambda")


class SqsTarget(Model):
    sqs: SqsSend


class SnsTarget(Model):
    sns: SnsPublish


class EventBridgeTarget(Model):
    eventbridge: EventBridgePut


class ShardingIn(Model):
    min_items_per_shard: int = Field(1, ge=1, le=1_000_000)
    max_items_per_shard: int = Field(100, ge=1, le=1_000_000)
    max_shards: int = Field(20, ge=1, le=MAX_SHARDS_PER_LEVEL)


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
    notify_every_percent: int | None = Field(None, exclude_if=is_none, ge=1, le=100)

    @model_validator(mode="after")
    def _shardable(self) -> JobIn:
        with named(""):
            plan(self.data, Sharding(**self.sharding.model_dump()))  # a job that cannot be sharded is refused now
        return self

    def to_request(self) -> JobRequest:
        processor = target_to_domain(self.processor)
        assert isinstance(processor, t.HttpTarget | t.LambdaTarget)
        return JobRequest(
            processor=processor,
            processor_dict=target_to_dict(processor),
            data=self.data,
            sharding=Sharding(**self.sharding.model_dump()),
            notify_every_percent=self.notify_every_percent,
            name=self.name,
        )


class JobTarget(Model):
    job: JobIn = Field(description="Start this sharded batch job at every occurrence.")


TargetIn = Annotated[
    Annotated[HttpTarget, Tag(tag("http"))]
    | Annotated[LambdaTarget, Tag(tag("lambda"))]
    | Annotated[SqsTarget, Tag(tag("sqs"))]
    | Annotated[SnsTarget, Tag(tag("sns"))]
    | Annotated[EventBridgeTarget, Tag(tag("eventbridge"))]
    | Annotated[JobTarget, Tag(tag("job"))],
    one_of(("http", "lambda", "sqs", "sns", "eventbridge", "job"), "the target's kind"),
]
"""Exactly one of ``http``, ``lambda``, ``sqs``, ``sns``, ``eventbridge``, ``job``."""

Targets = HttpTarget | LambdaTarget | SqsTarget | SnsTarget | EventBridgeTarget | JobTarget


def target_to_domain(target: Targets | HttpProcessor) -> t.Target:
    if isinstance(target, HttpTarget):
        h = target.http
        return t.HttpTarget(h.url, h.method, dict(h.headers), h.timeout_seconds, h.limit)
    if isinstance(target, HttpProcessor):
        p = target.http
        return t.HttpTarget(p.url, p.method, dict(p.headers), p.timeout_seconds)
    if isinstance(target, LambdaTarget):
        return t.LambdaTarget(target.lambda_.function_arn)
    if isinstance(target, SqsTarget):
        return t.SqsTarget(target.sqs.queue_url)
    if isinstance(target, SnsTarget):
        return t.SnsTarget(target.sns.topic_arn)
    if isinstance(target, EventBridgeTarget):
        e = target.eventbridge
        return t.EventBridgeTarget(e.event_bus, e.source, e.detail_type)
    return t.JobTarget(canonical_job(target.job.model_dump(mode="json", by_alias=True, exclude_none=True)))


def target_of(target: t.Target) -> Targets:
    """A domain target as the API shows it."""
    if isinstance(target, t.HttpTarget):
        call = {
            "url": target.url,
            "method": target.method,
            "headers": target.headers,
            "timeout": target.timeout_seconds,
            "limit": target.limit,
        }
        return HttpTarget(http=HttpTaskCall.model_validate(call | {"timeout_seconds": call.pop("timeout")}))
    if isinstance(target, t.LambdaTarget):
        return LambdaTarget.model_validate({"lambda": {"function_arn": target.function_arn}})
    if isinstance(target, t.SqsTarget):
        return SqsTarget(sqs=SqsSend(queue_url=target.queue_url))
    if isinstance(target, t.SnsTarget):
        return SnsTarget(sns=SnsPublish(topic_arn=target.topic_arn))
    if isinstance(target, t.EventBridgeTarget):
        return EventBridgeTarget(
            eventbridge=EventBridgePut(event_bus=target.event_bus, source=target.source, detail_type=target.detail_type)
        )
    return JobTarget(job=JobIn.model_validate(json.loads(target.job)))


def processor_of(target: t.Target) -> HttpProcessor | LambdaTarget:
    """A job's processor as the API shows it."""
    if isinstance(target, t.HttpTarget):
        call = {"url": target.url, "method": target.method, "headers": target.headers}
        return HttpProcessor(http=HttpCall.model_validate(call | {"timeout_seconds": target.timeout_seconds}))
    if isinstance(target, t.LambdaTarget):
        return LambdaTarget.model_validate({"lambda": {"function_arn": target.function_arn}})
    raise ValueError(f"a job's processor is an http or a lambda target, not {type(target).__name__}")


# --- alerts (shared/domain/alerts.py) -----------------------------------------------------------


def whole(value: object) -> object:
    """JSON's ``5.0`` is the integer 5 (JSON Schema's ``integer`` admits it) for a strict integer
    field, which still refuses ``5.5``, ``"5"`` and ``false``."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


AlertTargetIn = Annotated[
    Annotated[HttpTarget, Tag(tag("http"))]
    | Annotated[LambdaTarget, Tag(tag("lambda"))]
    | Annotated[SqsTarget, Tag(tag("sqs"))]
    | Annotated[SnsTarget, Tag(tag("sns"))]
    | Annotated[EventBridgeTarget, Tag(tag("eventbridge"))],
    one_of(("http", "lambda", "sqs", "sns", "eventbridge"), "the alert target's kind: a job receives no alert"),
]
"""A task's target but a job: exactly one of ``http``, ``lambda``, ``sqs``, ``sns``, ``eventbridge``."""

FailureCount = Annotated[int, Field(strict=True, ge=1, le=t.MAX_FAILURE_COUNT), BeforeValidator(whole)]
"""1 to MAX_FAILURE_COUNT, an integer (``5.0`` is 5; ``"5"`` and ``true`` are refused)."""


class AlertIn(Model):
    """Where a task's alerts go: ``{"type", "task_id", "run_id", "reason", "at"}`` to ``target``
    when a run of the task is dead-lettered (``sundial.run.dead_lettered``), and with
    ``after_consecutive_failures``, once when that many occurrences in a row have failed
    (``sundial.task.failing``)."""

    target: AlertTargetIn = Field(description="Any target but a job, signed and refused as a task's target is.")
    after_consecutive_failures: FailureCount | None = Field(
        None,
        exclude_if=is_none,
        description=f"Alert once when this many occurrences in a row have failed (1 to {t.MAX_FAILURE_COUNT}).",
    )

    def to_domain(self, before: t.Alert | None = None) -> t.Alert:
        """The alert; ``before``: the task's (a PATCH's ``[redacted]`` headers keep its values)."""
        target = kept(target_to_domain(self.target), (before.target,) if before else (), "alert.target")
        return t.Alert(target, self.after_consecutive_failures)


def alert_of(alert: t.Alert) -> AlertIn:
    """A domain alert as the API shows it."""
    return AlertIn.model_validate(
        {"target": target_of(alert.target), "after_consecutive_failures": alert.after_consecutive_failures}
    )


ALERT = "Where the task's alerts go (default none)."
PAUSE_AFTER = (
    f"Pause the task when this many of its occurrences in a row have failed (1 to {t.MAX_FAILURE_COUNT}; "
    "a recurring task's: a one-shot ends with its occurrence). Default: never."
)


# --- tasks ---------------------------------------------------------------------------------------


class RetryIn(Model):
    max_attempts: int = Field(3, ge=1, le=MAX_ATTEMPTS, description="Attempts in all, the first included.")
    backoff: Backoff = Backoff.EXPONENTIAL
    interval_seconds: float = Field(
        2.0, ge=1, le=MAX_INTERVAL_SECONDS, description="Fixed delay, or the first delay (doubling)."
    )

    def to_domain(self) -> RetryPolicy:
        return RetryPolicy(**self.model_dump())


def _payload_fits(payload: Any) -> Any:
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


def _children(value: list[str] | None, info: ValidationInfo) -> list[str] | None:
    """``on_success`` / ``on_failure``: no id twice (their existence is the service's check)."""
    if value is None:
        return None
    member = str(info.field_name)
    try:
        return list(check_children(member, value))
    except ValidationFailed as exc:
        detail = exc.details[0]
        raise Problem(detail.field.removeprefix(member), detail.message) from exc


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

    _payload = field_validator("payload")(_payload_fits)
    _chains = field_validator("on_success", "on_failure")(_children)

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
            retry=RetryPolicy() if self.retry is None else self.retry.to_domain(),
            misfire=self.misfire,
            priority=self.priority,
            alert=self.alert.to_domain() if self.alert is not None else None,
            pause_after_failures=self.pause_after_failures,
            on_success=tuple(self.on_success or ()),
            on_failure=tuple(self.on_failure or ()),
        )


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

    _payload = field_validator("payload")(_payload_fits)
    _chains = field_validator("on_success", "on_failure")(_children)

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


def parse_version(header: str) -> int:
    """An ``If-Match`` header: the task's ``version`` (as its ``ETag``, quoted or not)."""
    text = header.strip().removeprefix("W/").strip('"')
    if not text.isdigit() or len(text) > 18:
        raise ValidationFailed.on("If-Match", 'is the task\'s version, as GET returns it in ETag (e.g. "3")')
    return int(text)


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


class PreviewIn(Model):
    """``POST /v1/schedules:preview``: the next occurrences of a schedule, without registering."""

    schedule: ScheduleIn
    count: int = Field(5, ge=1, le=MAX_PREVIEW)
    after: Instant | None = Field(
        None,
        description="Occurrences at or after this instant; without it, from now, as if registered now "
        "(the first time is then the task's next_fire_at).",
    )


LetterId = Annotated[str, Field(min_length=1, max_length=64)]


class RedriveIn(Model):
    """``POST /v1/dead-letters/redrive``: ``{"ids": [...]}`` or ``{"all": true}``."""

    model_config = Model.model_config | {"json_schema_extra": exactly_one_schema("ids", "all")}

    ids: list[LetterId] | None = Field(None, min_length=1, max_length=100, description="Up to 100 letter ids.")
    all: Literal[True] | None = Field(
        None,
        description="The letters not redriven yet, a step at a time: up to 100 a call, among the letters one call "
        "reads; call again with the answer's `next_cursor` as `cursor` until it is null.",
    )
    cursor: str | None = Field(
        None, max_length=512, description='With `"all": true`: the `next_cursor` of the previous call.'
    )

    @model_validator(mode="after")
    def _one(self) -> RedriveIn:
        if (self.ids is None) == (self.all is None):
            raise Problem("ids", 'give {"ids": [...]} or {"all": true}')
        if self.cursor is not None and self.all is None:
            raise Problem("cursor", 'goes with {"all": true} only')
        return self

    def chosen(self) -> list[str] | None:
        """The ids to redrive, or ``None`` for every one not redriven yet."""
        return self.ids


# --- signing secrets (docs/tenancy.md, section 4) ------------------------------------------------


class SigningRotateIn(Model):
    """``POST /v1/signing-secrets:rotate``: how long the current secret keeps signing next to the new one."""

    previous_expires_in_seconds: int = Field(
        DEFAULT_PREVIOUS_EXPIRES_IN_SECONDS,
        strict=True,  # false is not 0
        ge=0,
        le=MAX_PREVIOUS_EXPIRES_IN_SECONDS,
        description=(
            "The secrets in use keep signing (a second signature) this long; 0 stops them at once. Up to a week."
        ),
    )

    _whole = field_validator("previous_expires_in_seconds", mode="before")(whole)


# --- tenants and API keys (docs/tenancy.md): the admin's routes -----------------------------------


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


# --- limits per destination (docs/receivers.md, section 1) ----------------------------------------


class DestinationLimitIn(Model):
    """``PUT /v1/limits/{name}``: the limit as a whole (a member left out takes its default)."""

    origin: str | None = Field(
        None,
        min_length=1,
        max_length=t.MAX_URL_LENGTH,
        description="`scheme://host[:port]` (http or https; the scheme's default port may be left out, it is "
        "the same origin): every HTTP target of the tenant whose URL has this origin is held to the limit, "
        "unless it names another. At most one limit per origin (`409 origin_taken`). Without it, the limit "
        "holds only the targets that name it (`limit`).",
        json_schema_extra={"pattern": ORIGIN},  # checked by _origin, with a message that says why
    )
    per_second: float = Field(
        strict=True,
        ge=MIN_PER_SECOND,
        le=MAX_PER_SECOND,
        allow_inf_nan=False,
        description=f"Calls a second, on average (fractions allowed: 0.5 is one call every 2 s; at least "
        f"{MIN_PER_SECOND}, one every {round(1 / MIN_PER_SECOND):,} s).",
    )
    burst: int = Field(
        1,
        strict=True,
        ge=1,
        le=MAX_LIMIT_BURST,
        description="Calls that may go at once after a quiet spell (1: evenly spaced).",
    )
    max_in_flight: int | None = Field(
        None,
        strict=True,
        ge=1,
        le=MAX_IN_FLIGHT,
        description="Calls outstanding at once (a call's end frees its place); null: no such cap.",
    )

    _whole = field_validator("burst", "max_in_flight", mode="before")(whole)

    @field_validator("origin")
    @classmethod
    def _origin(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            urlsplit(value.strip()).hostname  # noqa: B018 (it is the parse that checks)
        except ValueError as exc:  # a bracketed host that is no IPv6 address, or NFKC trouble
            raise ValueError(f"has no valid host ({exc})") from exc
        return parse_origin(value)

    def to_spec(self) -> LimitSpec:
        return LimitSpec(
            per_second=self.per_second, burst=self.burst, max_in_flight=self.max_in_flight, origin=self.origin
        )
