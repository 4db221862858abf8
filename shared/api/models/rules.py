"""Calendar rules ("every 2nd month on the 3rd, 5th and 23rd at 09:00"): each level a model of its
own, with only its members; the domain's own check of a rule runs in their validator."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BeforeValidator, Discriminator, Field, Tag, TypeAdapter, field_validator, model_validator

from shared.api.models.fields import MAX_ZONE_LENGTH, ZONE, whole
from shared.api.types import Instant, Model, is_none, named, tag
from shared.domain.calendars import MAX_INTERVAL, Level, repeat_from_api

TIME_OF_DAY = r"^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?$"


Weekday = Annotated[int, Field(strict=True, ge=1, le=7), BeforeValidator(whole)]
MonthDay = Annotated[int, Field(strict=True, ge=1, le=31), BeforeValidator(whole)]
"""A weekday (1-7) and a day of the month (1-31): integers, ``3.0`` included, never ``"3"`` or ``true``."""


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

    interval: int = Field(
        1, strict=True, ge=1, le=MAX_INTERVAL, description="Every Nth unit, counted from start's unit."
    )
    start: Instant | None = Field(
        None,
        exclude_if=is_none,
        description="The first occurrence when it matches the rule; the count starts here (default: now).",
    )
    end: Instant | None = Field(None, exclude_if=is_none, description="No occurrence after it.")
    timezone: str = Field(
        "UTC", min_length=1, max_length=MAX_ZONE_LENGTH, pattern=ZONE, description="IANA time zone (default UTC)."
    )

    _whole = field_validator("interval", mode="before")(whole)

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
    days: list[Weekday] | None = _days(7, "ISO weekdays (1 = Monday); default start's.")
    time: str | None = _time()


class MonthRule(Rule):
    level: Literal["month"]
    days: list[MonthDay] | None = _days(
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
