"""The EventBridge Scheduler API's dialect (not the event-bus target: shared/delivery/aws.py): its
schedule expressions, read as the service documents them (docs/eventbridge.md, section 2), and
the ``Input`` its targets receive, context attributes replaced (:func:`delivered_input`).
Expressions:

* ``at(yyyy-mm-ddThh:mm:ss)``: one time, on the wall clock of the schedule's time zone;
* ``rate(value unit)``: a positive whole ``value`` of ``minute(s)``, ``hour(s)`` or ``day(s)``
  (a day is 24 hours, whatever the clocks do), from the schedule's start;
* ``cron(minutes hours day-of-month month day-of-week year)``: the service's dialect (the
  Quartz family): day-of-week 1-7 = SUN-SAT, a year field 1970-2199, exactly one of the two day
  fields ``?``, ``L`` (in day-of-month the month's last day; alone in day-of-week the week's
  last day, every Saturday; ``nL``, the last weekday n of the month), ``nW`` (the weekday
  nearest day n, within its month), ``n#k`` (the k-th weekday n of the month, alone in its
  field), ``a/b`` steps from ``a``.

A cron expression is evaluated on the wall clock of its time zone as the service does across
daylight-saving changes: a wall time that does not exist (the hour skipped when clocks go forward)
is skipped, and one that happens twice fires once, at its first occurrence. This is not the
native API's rule for a skipped wall time (shared/domain/schedules.py fires it at the first instant
after the gap): a schedule created through the EventBridge Scheduler API keeps the service's.

Nothing here reads the clock or does I/O: :func:`parse` turns the text into an expression or
raises :class:`~shared.domain.errors.ValidationFailed` naming ``ScheduleExpression``, and
:func:`cron_at_or_after` answers the first time at or after an instant.
"""

from __future__ import annotations

import calendar
import json
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from shared.domain.errors import ValidationFailed

FIELD = "ScheduleExpression"
MIN_YEAR, MAX_YEAR = 1970, 2199
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
"""Day-of-week 1 is Sunday, as the service numbers them."""
RATE_UNITS = {"minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400}


@dataclass(frozen=True)
class AtExpression:
    wall: datetime
    """The naive wall time, in the schedule's time zone."""


@dataclass(frozen=True)
class RateExpression:
    value: int
    unit: str

    @property
    def seconds(self) -> int:
        return self.value * RATE_UNITS[self.unit]


@dataclass(frozen=True)
class DaySpec:
    """One day field: ``any`` (``*`` or ``?``), a set of values, or one of the special forms."""

    values: frozenset[int] = frozenset()
    any: bool = False
    last: bool = False
    """``L`` in day-of-month: the month's last day."""
    nearest_weekday: int | None = None
    """``nW`` in day-of-month: the weekday (Monday-Friday) nearest day n, within the month."""
    last_weekday: int | None = None
    """``nL`` in day-of-week: the last weekday n (1 = Sunday) of the month."""
    nth: tuple[int, int] | None = None
    """``n#k`` in day-of-week: the k-th weekday n of the month."""


@dataclass(frozen=True)
class CronExpression:
    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    day_of_month: DaySpec
    months: frozenset[int]
    day_of_week: DaySpec
    years: frozenset[int]
    dom_given: bool
    """Which day field carries the days (the other is ``?``)."""

    def matches_day(self, day: date) -> bool:
        if day.month not in self.months or day.year not in self.years:
            return False
        return _dom_matches(self.day_of_month, day) if self.dom_given else _dow_matches(self.day_of_week, day)


Expression = AtExpression | RateExpression | CronExpression


def refuse(message: str) -> ValidationFailed:
    return ValidationFailed.on(FIELD, message)


def invalid_expression(text: str, reason: str) -> str:
    """The message of a refused expression: the service's own first (``Invalid Schedule Expression
    cron(0 1 * * * *).``, the expression as given, as AWS answers every refused expression
    recorded in LocalStack's AWS-validated tests/aws/services/scheduler/test_scheduler.snapshot.json,
    tests_create_schedule_with_invalid_schedule_expression), then why (``reason``, from
    :func:`parse`, without the expression it repeats)."""
    why = reason.removeprefix(f"{text}: ")
    return f"Invalid Schedule Expression {text}. {why[:1].upper()}{why[1:]}"


def parse(text: str) -> Expression:
    """The expression ``text`` stands for, or :class:`ValidationFailed` saying what is wrong.
    The service refuses spaces around the expression and inside a rate's parentheses (AWS's
    answers to ``" rate(10 minutes)"`` and ``"rate( 10 minutes )"``, recorded in LocalStack's
    AWS-validated tests/aws/services/scheduler/test_scheduler.snapshot.json); so does this."""
    if text != text.strip():
        raise refuse(f"the expression has spaces before or after it ({text!r})")
    match = re.fullmatch(r"(at|rate|cron)\((.*)\)", text, re.DOTALL)
    if not match:
        raise refuse(f"{text!r} is not at(...), rate(...) or cron(...)")
    kind, body = match[1], match[2].strip()
    if kind == "rate" and body != match[2]:
        raise refuse(f"{text}: a rate has no spaces inside its parentheses")
    if kind == "at":
        try:
            wall = datetime.strptime(body, "%Y-%m-%dT%H:%M:%S")
        except ValueError as exc:
            raise refuse(f"at({body}): a one-time schedule is at(yyyy-mm-ddThh:mm:ss)") from exc
        return AtExpression(wall)
    if kind == "rate":
        return _rate(body)
    return _cron(body)


def _rate(body: str) -> RateExpression:
    parts = body.split()
    if len(parts) != 2 or not parts[0].isdigit() or parts[1] not in RATE_UNITS:
        raise refuse(f"rate({body}): a rate is rate(value unit), value a positive number, unit minutes, hours or days")
    value = int(parts[0])
    if value < 1:
        raise refuse(f"rate({body}): the value must be positive")
    if (value == 1) != (parts[1] in ("minute", "hour", "day")):
        raise refuse(f"rate({body}): write 1 with a singular unit (minute, hour, day), more with a plural one")
    return RateExpression(value, parts[1])


_NAMES = {
    3: {name: number for number, name in enumerate(MONTHS, 1)},
    4: {name: n for n, name in enumerate(WEEKDAYS, 1)},
}
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (1, 7), (MIN_YEAR, MAX_YEAR))
_FIELD_NAMES = ("minutes", "hours", "day-of-month", "month", "day-of-week", "year")


def _cron(body: str) -> CronExpression:
    fields = body.split()
    if len(fields) != 6:
        raise refuse(
            f"cron({body}): a cron expression has six fields (minutes hours day-of-month month day-of-week year), "
            f"not {len(fields)}"
        )
    dom_text, dow_text = fields[2], fields[4]
    if (dom_text == "?") == (dow_text == "?"):
        raise refuse(
            f"cron({body}): one of day-of-month and day-of-week must be ? (they cannot both be given, nor both be ?)"
        )
    minutes, hours = _values(fields[0], 0, body), _values(fields[1], 1, body)
    months, years = _values(fields[3], 3, body), _values(fields[5], 5, body)
    day_of_month = _dom(dom_text, body)
    day_of_week = _dow(dow_text, body)
    return CronExpression(
        f"cron({body})", minutes, hours, day_of_month, months, day_of_week, years, dom_given=dom_text != "?"
    )


def _number(text: str, index: int, body: str) -> int:
    names = _NAMES.get(index, {})
    value = names.get(text.upper()) if not text.isdigit() else int(text)
    low, high = _BOUNDS[index]
    if value is None or not low <= value <= high:
        raise refuse(f"cron({body}): {text!r} is not a {_FIELD_NAMES[index]} value ({low}-{high})")
    return value


def _values(text: str, index: int, body: str) -> frozenset[int]:
    """A field of ``, - * /`` items as the set of values it covers."""
    low, high = _BOUNDS[index]
    found: set[int] = set()
    for item in text.split(","):
        if not item:
            raise refuse(f"cron({body}): the {_FIELD_NAMES[index]} field {text!r} has an empty item")
        base, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) < 1:
                raise refuse(f"cron({body}): the step {step_text!r} in {item!r} is not a positive number")
            step = int(step_text)
        if base == "*":
            start, end = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, end = _number(first, index, body), _number(last, index, body)
            if start > end:
                raise refuse(f"cron({body}): the range {base!r} runs backwards")
        else:
            start = _number(base, index, body)
            end = high if slash else start  # "a/b": from a, every b, to the field's end
        found.update(range(start, end + 1, step))
    return frozenset(found)


def _dom(text: str, body: str) -> DaySpec:
    if text in ("*", "?"):
        return DaySpec(any=True)
    if text == "L":
        return DaySpec(last=True)
    if text.endswith("W"):
        day = text[:-1]
        if not day.isdigit() or not 1 <= int(day) <= 31:
            raise refuse(f"cron({body}): W follows one day of the month (1W-31W), not {text!r}")
        return DaySpec(nearest_weekday=int(day))
    if "L" in text or "W" in text:
        raise refuse(f"cron({body}): L and W stand alone in day-of-month (L, or nW), not in {text!r}")
    return DaySpec(values=_values(text, 2, body))


def _dow(text: str, body: str) -> DaySpec:
    if text in ("*", "?"):
        return DaySpec(any=True)
    if text == "L":  # alone, the week's last day: every Saturday (as in Quartz)
        return DaySpec(values=frozenset({7}))
    if "#" in text:
        weekday, _, nth = text.partition("#")
        if "," in text or not nth.isdigit() or not 1 <= int(nth) <= 5:
            raise refuse(f"cron({body}): # stands alone in day-of-week, as n#k with k from 1 to 5, not {text!r}")
        return DaySpec(nth=(_number(weekday, 4, body), int(nth)))
    if "L" in text.upper():  # no weekday's name holds an L
        if text.endswith("L") and re.fullmatch(r"[0-9]|[A-Za-z]{3}", text[:-1]):
            return DaySpec(last_weekday=_number(text[:-1], 4, body))
        raise refuse(f"cron({body}): L stands alone in day-of-week (L, or nL), not in {text!r}")
    return DaySpec(values=_values(text, 4, body))


CONTEXT_ATTRIBUTES = (
    "<aws.scheduler.schedule-arn>",
    "<aws.scheduler.scheduled-time>",
    "<aws.scheduler.execution-id>",
    "<aws.scheduler.attempt-number>",
)
NO_INPUT = "{}"
"""What a target gets when its schedule has no ``Input``: the service "delivers a default
notification" (the API reference's ``Target.Input``) whose shape it does not document; Sundial's
choice is an empty JSON object (docs/eventbridge.md, section 6)."""


def input_template(payload: Any) -> str | None:
    """A task's payload as the ``Input`` text it was given (JSON text for one kept parsed)."""
    if payload is None or isinstance(payload, str):
        return payload
    return json.dumps(payload, separators=(",", ":"))


def delivered_input(
    template: str | None, *, schedule_arn: str, scheduled_for: datetime, execution_id: str, attempt: int
) -> str:
    """A schedule's ``Input`` as its target receives it: the service's context attributes replaced
    by the occurrence's (its nominal time in UTC to the second, its run id, its attempt from 1)."""
    text = NO_INPUT if template is None else template
    values = (schedule_arn, scheduled_for.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), execution_id, str(attempt))
    for name, value in zip(CONTEXT_ATTRIBUTES, values, strict=True):
        text = text.replace(name, value)
    return text


def _weekday(day: date) -> int:
    """1 = Sunday ... 7 = Saturday."""
    return (day.weekday() + 1) % 7 + 1


def _dom_matches(spec: DaySpec, day: date) -> bool:
    last = calendar.monthrange(day.year, day.month)[1]
    if spec.any:
        return True
    if spec.last:
        return day.day == last
    if spec.nearest_weekday is not None:
        if spec.nearest_weekday > last:  # a month without day n has no weekday nearest it
            return False
        target = date(day.year, day.month, spec.nearest_weekday)
        if target.weekday() == 5:  # Saturday: the Friday before, or the Monday after on the 1st
            target = target - timedelta(days=1) if target.day > 1 else target + timedelta(days=2)
        elif target.weekday() == 6:  # Sunday: the Monday after, or the Friday before at the month's end
            target = target + timedelta(days=1) if target.day < last else target - timedelta(days=2)
        return day == target
    return day.day in spec.values


def _dow_matches(spec: DaySpec, day: date) -> bool:
    if spec.any:
        return True
    weekday = _weekday(day)
    if spec.last_weekday is not None:
        last = calendar.monthrange(day.year, day.month)[1]
        return weekday == spec.last_weekday and day.day + 7 > last
    if spec.nth is not None:
        wanted, nth = spec.nth
        return weekday == wanted and (day.day - 1) // 7 + 1 == nth
    return weekday in spec.values


def _wall_instant(wall: datetime, zone: ZoneInfo) -> datetime | None:
    """The instant of a wall time in ``zone`` by the service's rule: None when the wall time does
    not exist (skipped when clocks go forward), its first instant when it happens twice."""
    first = wall.replace(tzinfo=zone, fold=0)
    back = first.astimezone(UTC).astimezone(zone).replace(tzinfo=None)
    if back != wall:
        return None
    return first.astimezone(UTC)


def cron_at_or_after(
    cron: CronExpression, timezone: str, instant: datetime, end: datetime | None = None
) -> datetime | None:
    """The first time of ``cron`` (in ``timezone``'s wall clock) at or after ``instant``, never
    after ``end``; None when there is none (its years are past)."""
    zone = ZoneInfo(timezone)
    start_wall = instant.astimezone(zone).replace(tzinfo=None)
    hours, minutes = sorted(cron.hours), sorted(cron.minutes)
    day = start_wall.date() - timedelta(days=1)  # a wall time a day back may still be ahead (fold)
    last_year = max(cron.years)
    while day.year <= last_year:
        if day.year not in cron.years:
            day = date(day.year + 1, 1, 1)
            continue
        if day.month not in cron.months:
            day = date(day.year + (day.month == 12), day.month % 12 + 1, 1)
            continue
        if cron.matches_day(day):
            for hour in hours:
                for minute in minutes:
                    moment = _wall_instant(datetime.combine(day, time(hour, minute)), zone)
                    if moment is None or moment < instant:
                        continue
                    if end is not None and moment > end:
                        return None
                    return moment
        day += timedelta(days=1)
    return None
