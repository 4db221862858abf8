"""Schedules (exactly one of ``at``, ``after_seconds``, ``cron``, ``every_seconds``, ``repeat``), and
``POST /v1/schedules:preview``."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import ConfigDict, Field, Tag, field_validator, model_validator

from shared.api.models.fields import MAX_ZONE_LENGTH, ZONE, whole
from shared.api.models.rules import RepeatRule
from shared.api.types import Instant, Model, Problem, is_none, named, one_of, tag
from shared.domain import schedules as sched
from shared.domain.calendars import repeat_from_api
from shared.domain.wallclock import zone_of

MAX_AFTER_SECONDS = int(sched.MAX_AHEAD.total_seconds())
MAX_PREVIEW = 100
MAX_CRON_LENGTH = 200
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
        strict=True, gt=0, le=MAX_AFTER_SECONDS, description="One-shot delay from registration, in seconds."
    )


EVENTBRIDGE_CRON_FIELDS = r"^[ \t]*[!-~]+([ \t]+[!-~]+){5}[ \t]*$"
"""EventBridge Scheduler's six fields (``minutes hours day-of-month month day-of-week year``)."""


def _eventbridge_fields(schema: dict[str, Any]) -> None:
    """The document says that the ``eventbridge`` dialect takes six fields, where the default
    takes five or six (``if``/``then``: JSON Schema's way to make one member's rule depend on
    another's value)."""
    schema["if"] = {"properties": {"dialect": {"const": sched.EVENTBRIDGE}}, "required": ["dialect"]}
    schema["then"] = {"properties": {"cron": {"pattern": EVENTBRIDGE_CRON_FIELDS}}}


class CronSchedule(Model):
    """Cron, in a time zone, optionally between ``start`` and ``end``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, json_schema_extra=_eventbridge_fields)

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
    dialect: sched.Dialect = Field(
        sched.LINUX,
        exclude_if=lambda value: value == sched.LINUX,
        description="`linux` (the default, as above) or `eventbridge`: the expression is read as EventBridge "
        "Scheduler reads the fields inside its `cron(...)`: `minutes hours day-of-month month day-of-week year`, "
        "day-of-week 1-7 = SUN-SAT, exactly one day field `?`, `L`, `nL`, `nW`, `n#k`, a year field 1970-2199; "
        "a wall time a spring daylight-saving change skips does not fire (the service's rule) and one the autumn "
        "change repeats fires once.",
    )

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        if re.search(r"[^\S \t]", value):  # what str.split() would take apart, past the pattern's [ \t]
            raise ValueError("separates its fields with spaces and tabs only (no line breaks or other whitespace)")
        return " ".join(value.split())

    @model_validator(mode="after")
    def _dialect(self) -> CronSchedule:
        with named(""):  # raised on the model: the member is named in full
            sched.check_dialect_cron(self.cron, self.dialect, "cron")
        return self

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
    """A fixed rate, or with ``after: end`` a fixed delay; without ``start`` the first fire is one
    period after registration."""

    every_seconds: float = Field(
        strict=True, ge=sched.MIN_EVERY_SECONDS, le=sched.MAX_EVERY_SECONDS, description="The period, in seconds."
    )
    start: Instant | None = Field(
        None,
        exclude_if=is_none,
        description="The first occurrence (a fixed rate's grid counts from it; a fixed delay's start already "
        "past fires at once).",
    )
    end: Instant | None = Field(None, exclude_if=is_none, description="No occurrence after it.")
    after: sched.Counted = Field(
        sched.FROM_START,
        exclude_if=lambda value: value == sched.FROM_START,
        description="What the period counts from. `start` (the default): a fixed rate, each occurrence the period "
        "after the one before was due. `end`: a fixed delay, each occurrence the period after the run before it "
        "ended, whatever its final state (succeeded, failed, dead-lettered after its retries, skipped): two "
        "occurrences never run at once, and only the first time can be previewed.",
    )

    @model_validator(mode="after")
    def _window(self) -> EverySchedule:
        _end_after_start(self.start, self.end)
        return self


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
        return sched.Cron(schedule.cron, schedule.timezone, schedule.start, schedule.end, schedule.dialect)
    if isinstance(schedule, EverySchedule):
        return sched.Every(schedule.every_seconds, schedule.start, schedule.end, after=schedule.after)
    return schedule.rule()


class PreviewIn(Model):
    """``POST /v1/schedules:preview``: the next occurrences of a schedule, without registering."""

    schedule: ScheduleIn
    count: int = Field(5, strict=True, ge=1, le=MAX_PREVIEW)
    after: Instant | None = Field(
        None,
        description="Occurrences at or after this instant; without it, from now, as if registered now "
        "(the first time is then the task's next_fire_at).",
    )

    _whole = field_validator("count", mode="before")(whole)
