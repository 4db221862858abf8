"""Calendar rules (``schedule.repeat``): "every 2nd month on the 3rd, 5th and 23rd at 09:00".

A rule has a ``level`` (hour, day, week, month, year or workday), an ``interval`` counted in
units of that level from ``start``'s unit, a time of day and a time zone. The time of day is
``time`` if given, else the local time of ``start`` (to the millisecond); dates are local dates
of ``timezone`` (default UTC). The occurrences of each level:

* ``day``: the dates ``start_date + k * interval`` (k >= 0) at the time of day;
* ``week``: the ISO weekdays ``days`` (1 = Monday; default ``start``'s weekday) of the ISO
  weeks (Monday-based) ``w`` with ``(w - start_week) % interval == 0``;
* ``month``: the days of month ``days`` (default ``start``'s day) of the months ``m`` with
  ``(m - start_month) % interval == 0``; a day a month lacks (31 in April, 30 in February) is
  skipped, not moved;
* ``year``: ``start``'s month and day in the years ``y`` with ``(y - start_year) % interval == 0``
  (a February 29 start fires in leap years only);
* ``workday``: the workdays on or after ``start``'s date, ``w0, w1, w2, ...``; the rule fires
  on ``w0, w_N, w_2N, ...`` (N = ``interval``). A workday is a working day of the country
  ``calendar`` (the ``holidays`` package: its weekend, its public holidays, and the weekend
  days it moves work onto, as China does around its Golden Weeks), or Monday to Friday without
  a calendar;
* ``hour``: the instants ``start + k * interval`` hours on the absolute time line (a change of
  the clocks does not shift them); an hourly rule has no ``time``.

No occurrence lies before ``start`` (one that would is dropped; the grid is never shifted) or
after ``end``. ``start`` itself is the first occurrence when it matches the rule. Wall times
become instants as cron's do (:mod:`shared.domain.wallclock`): a wall time skipped when the
clocks go forward fires at the first instant after the gap; one repeated when they go back
fires once, at its first occurrence (except that ``start`` itself, when it matches, is the
occurrence of its date).

:func:`repeat_at_or_after` jumps arithmetically to the neighbourhood of its lower bound, so its
cost does not grow with the age of a rule; only a workday rule with an interval above 1 counts
workdays from ``start`` (year by year, cached), for at most :data:`WORKDAY_HORIZON_YEARS`.
"""

from __future__ import annotations

import calendar as gregorian
import importlib
import re
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from enum import StrEnum
from functools import cache, lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from shared.domain.errors import ValidationFailed
from shared.domain.times import iso, truncate_ms
from shared.domain.wallclock import localize, zone_of

if TYPE_CHECKING:
    from holidays import HolidayBase


@cache
def _library() -> ModuleType:
    """The ``holidays`` package, imported on first use (about 60 ms): a function that never
    meets a workday rule (most triggers, the scanners) does not pay for it at cold start."""
    return importlib.import_module("holidays")


MAX_INTERVAL = 1000
"""The largest ``interval`` of any level (1,000 hours is 41 days; 1,000 workdays about 4 years)."""
WORKDAY_HORIZON_YEARS = 100
"""A workday rule with an interval above 1 counts workdays from ``start``: it has no occurrence
more than this many years after ``start``'s year."""
WORKDAY_SEARCH_YEARS = 3
"""A workday rule with interval 1 looks this many years ahead of its lower bound for a workday."""
MONTH_SEARCH_STEPS = 4800
"""Months a month rule tries before concluding it never fires again: the Gregorian calendar
repeats every 400 years (4,800 months), so a rule that fires in none of them never fires."""

_HOUR_MS = 3_600_000
_MAX_YEAR = 9999
_MAX_ORDINAL = date.max.toordinal()
_TIME = re.compile(r"([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?")
_KEYS = frozenset({"level", "interval", "days", "time", "start", "timezone", "calendar", "end"})


class Level(StrEnum):
    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"
    WORKDAY = "workday"


_LEVELS = frozenset(level.value for level in Level)
_DAY_RANGES = {Level.WEEK: (1, 7), Level.MONTH: (1, 31)}


@dataclass(frozen=True)
class Repeat:
    level: Level
    interval: int = 1
    days: tuple[int, ...] = ()
    """ISO weekdays (week) or days of month (month), sorted and unique; empty: ``start``'s."""
    time: clock_time | None = None
    """The local time of day (naive); ``None``: ``start``'s local time."""
    start: datetime | None = None
    """Aware, UTC, millisecond precision; ``None`` until the rule is anchored at registration."""
    timezone: str = "UTC"
    calendar: str | None = None
    """A country code of the ``holidays`` package (workday rules only)."""
    end: datetime | None = None


# --- the API form -------------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _level_of(data: dict[str, Any], field: str) -> Level:
    value = data.get("level")
    if value is None:
        raise ValidationFailed.on(f"{field}.level", "is required (hour, day, week, month, year or workday)")
    if not isinstance(value, str) or value not in _LEVELS:
        raise ValidationFailed.on(f"{field}.level", f"must be one of {', '.join(Level)}, not {value!r}")
    return Level(value)


def _interval_of(data: dict[str, Any], field: str) -> int:
    value = data.get("interval")
    if value is None:
        return 1
    if not _is_int(value) or not 1 <= value <= MAX_INTERVAL:
        raise ValidationFailed.on(f"{field}.interval", f"must be an integer from 1 to {MAX_INTERVAL}")
    return int(value)


def _days_of(data: dict[str, Any], level: Level, field: str) -> tuple[int, ...]:
    value = data.get("days")
    if value is None:
        return ()
    name = f"{field}.days"
    bounds = _DAY_RANGES.get(level)
    if bounds is None:
        raise ValidationFailed.on(name, "only a week rule (ISO weekdays) or a month rule (days of month) takes days")
    low, high = bounds
    what = "ISO weekdays (1 = Monday to 7 = Sunday)" if level is Level.WEEK else "days of month (1 to 31)"
    if not isinstance(value, list) or not value or not all(_is_int(day) and low <= day <= high for day in value):
        raise ValidationFailed.on(name, f"must be a non-empty list of {what}")
    return tuple(sorted(set(value)))


def _time_of(data: dict[str, Any], level: Level, field: str) -> clock_time | None:
    value = data.get("time")
    if value is None:
        return None
    name = f"{field}.time"
    if level is Level.HOUR:
        raise ValidationFailed.on(name, "not for level hour: an hourly rule fires at start's minute and second")
    match = _TIME.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValidationFailed.on(name, 'must be a 24-hour local time "HH:MM" or "HH:MM:SS"')
    hour, minute, second = match.groups()
    return clock_time(int(hour), int(minute), int(second or 0))


def _instant_of(data: dict[str, Any], key: str, field: str) -> datetime | None:
    value = data.get(key)
    if value is None:
        return None
    name = f"{field}.{key}"
    if not isinstance(value, str):
        raise ValidationFailed.on(name, "must be an ISO 8601 time with an offset or Z")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValidationFailed.on(name, f"{value!r} is not an ISO 8601 time") from exc
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValidationFailed.on(name, "needs a UTC offset or Z")
    try:
        return truncate_ms(parsed.astimezone(UTC))
    except OverflowError as exc:
        raise ValidationFailed.on(name, f"{value!r} is out of range") from exc


def _timezone_of(data: dict[str, Any], field: str) -> str:
    value = data.get("timezone")
    if value is None:
        return "UTC"
    name = f"{field}.timezone"
    if not isinstance(value, str):
        raise ValidationFailed.on(name, "must be an IANA time zone name")
    zone_of(value, name)
    return value


@cache
def _countries() -> frozenset[str]:
    return frozenset(_library().list_supported_countries())


def _calendar_of(data: dict[str, Any], level: Level, field: str) -> str | None:
    value = data.get("calendar")
    if value is None:
        return None
    name = f"{field}.calendar"
    if level is not Level.WORKDAY:
        raise ValidationFailed.on(name, "only a workday rule takes a calendar")
    if not isinstance(value, str) or value not in _countries():
        raise ValidationFailed.on(name, f"unknown calendar {value!r} (use an upper-case country code: CN, US, DE...)")
    return value


def repeat_from_api(data: dict[str, Any], field: str = "schedule.repeat") -> Repeat:
    """The rule the API's ``repeat`` object describes; a :class:`ValidationFailed` naming the
    offending field (``schedule.repeat.days``...) otherwise. A ``null`` member counts as absent."""
    if not isinstance(data, dict):
        raise ValidationFailed.on(field, "must be an object")
    for key in data:
        if key not in _KEYS:
            raise ValidationFailed.on(
                f"{field}.{key}", f"unknown field (a repeat rule takes {', '.join(sorted(_KEYS))})"
            )
    level = _level_of(data, field)
    interval = _interval_of(data, field)
    days = _days_of(data, level, field)
    time_of_day = _time_of(data, level, field)
    timezone = _timezone_of(data, field)
    calendar = _calendar_of(data, level, field)
    start = _instant_of(data, "start", field)
    end = _instant_of(data, "end", field)
    if start is not None and end is not None and end <= start:
        raise ValidationFailed.on(f"{field}.end", "must be after start")
    return Repeat(level, interval, days, time_of_day, start, timezone, calendar, end)


def repeat_to_api(rule: Repeat) -> dict[str, Any]:
    """The canonical API form: ``level``, ``interval`` and ``timezone`` always, the rest when set."""
    out: dict[str, Any] = {"level": rule.level.value, "interval": rule.interval}
    if rule.days:
        out["days"] = list(rule.days)
    if rule.time is not None:
        out["time"] = rule.time.strftime("%H:%M:%S")
    if rule.start is not None:
        out["start"] = iso(rule.start)
    out["timezone"] = rule.timezone
    if rule.calendar is not None:
        out["calendar"] = rule.calendar
    if rule.end is not None:
        out["end"] = iso(rule.end)
    return out


# --- occurrences ------------------------------------------------------------------------------


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def _aligned(origin: int, first: int, interval: int) -> int:
    """The smallest ``origin + k * interval >= first`` with ``k >= 0``."""
    return origin + max(0, _ceil_div(first - origin, interval)) * interval


def _day_dates(rule: Repeat, start: date, first: int) -> Iterator[int]:
    ordinal = _aligned(start.toordinal(), first, rule.interval)
    while ordinal <= _MAX_ORDINAL:
        yield ordinal
        ordinal += rule.interval


def _week_dates(rule: Repeat, start: date, first: int) -> Iterator[int]:
    # Ordinal 1 (0001-01-01) is a Monday: week ``(o - 1) // 7``, ISO weekday ``(o - 1) % 7 + 1``.
    days = rule.days or (start.isoweekday(),)
    week = _aligned((start.toordinal() - 1) // 7, (first - 1) // 7, rule.interval)
    while week * 7 + 1 <= _MAX_ORDINAL:
        for day in days:
            ordinal = week * 7 + day
            if first <= ordinal <= _MAX_ORDINAL:
                yield ordinal
        week += rule.interval


def _month_dates(rule: Repeat, start: date, first: int) -> Iterator[int]:
    days = rule.days or (start.day,)
    first_date = date.fromordinal(first)
    month = _aligned(start.year * 12 + start.month - 1, first_date.year * 12 + first_date.month - 1, rule.interval)
    for _ in range(MONTH_SEARCH_STEPS):
        year, month_index = divmod(month, 12)
        if year > _MAX_YEAR:
            return
        length = gregorian.monthrange(year, month_index + 1)[1]
        for day in days:
            if day <= length:
                ordinal = date(year, month_index + 1, day).toordinal()
                if ordinal >= first:
                    yield ordinal
        month += rule.interval


def _year_dates(rule: Repeat, start: date, first: int) -> Iterator[int]:
    year = _aligned(start.year, date.fromordinal(first).year, rule.interval)
    while year <= _MAX_YEAR:
        if start.month != 2 or start.day != 29 or gregorian.isleap(year):
            ordinal = date(year, start.month, start.day).toordinal()
            if ordinal >= first:
                yield ordinal
        year += rule.interval


@lru_cache(maxsize=64)
def _holidays_of(code: str) -> HolidayBase:
    """One holidays object per calendar: it fills in the years it is asked about."""
    country: HolidayBase = _library().country_holidays(code)
    return country


@cache
def published_through(calendar: str) -> int | None:
    """The last year whose official schedule the holiday data has, for a calendar whose
    government moves working days year by year (China's working weekends); ``None`` for a
    calendar fixed by rules, known for any year. A later year's workdays are only its
    weekdays without its rule-based holidays: the moves are published a few weeks before the
    year starts, and reach Sundial with a newer ``holidays`` package."""
    country = _holidays_of(calendar)
    specials: dict[Any, Any] = getattr(country, "special_public_holidays", None) or {}
    if not specials:
        return None
    latest = max(int(year) for year in specials)
    _ = date(latest, 1, 1) in country  # fills the year in
    moves: set[date] = getattr(country, "weekend_workdays", set())
    return latest if any(day.year == latest for day in moves) else None


def calendar_notes(rule: Repeat, times: list[datetime]) -> list[str]:
    """What a user should know about these occurrences of ``rule``: workdays counted in years
    the holiday data does not have the official schedule of yet."""
    if rule.level is not Level.WORKDAY or rule.calendar is None:
        return []
    last = published_through(rule.calendar)
    if last is None or not any(t.astimezone(zone_of(rule.timezone)).year > last for t in times):
        return []
    return [
        f"calendar {rule.calendar}: the holiday data (holidays {_library().__version__}) has the official "
        f"schedule up to {last}; in later years the workdays are the weekdays without the rule-based "
        "holidays, and days the government moves (bridge days, working weekends) count once Sundial is "
        "deployed with a holidays package that has them"
    ]


@lru_cache(maxsize=1024)
def _workdays_in(calendar: str | None, year: int) -> tuple[int, ...]:
    """The ordinals of a year's workdays, in order."""
    first, last = date(year, 1, 1).toordinal(), date(year, 12, 31).toordinal()
    if calendar is None:
        return tuple(o for o in range(first, last + 1) if (o - 1) % 7 < 5)
    country = _holidays_of(calendar)
    return tuple(o for o in range(first, last + 1) if country.is_working_day(date.fromordinal(o)))


def _workday_dates(rule: Repeat, start: date, first: int) -> Iterator[int]:
    """Every ``interval``-th workday counted from ``start`` (its own index 0), from ``first`` on."""
    start_ordinal = start.toordinal()
    first_year = date.fromordinal(first).year
    if rule.interval == 1:  # every workday fires: nothing to count
        year, last_year, counted = first_year, first_year + WORKDAY_SEARCH_YEARS, 0
    else:
        year, last_year, counted = start.year, start.year + WORKDAY_HORIZON_YEARS, 0
    while year <= min(last_year, _MAX_YEAR):
        workdays = _workdays_in(rule.calendar, year)
        skip = bisect_left(workdays, start_ordinal) if year == start.year else 0
        if year < first_year:  # wholly before the search: only counted
            counted += len(workdays) - skip
            year += 1
            continue
        lowest = max(skip, bisect_left(workdays, first))
        index = skip + _aligned(0, counted + lowest - skip, rule.interval) - counted
        while index < len(workdays):
            yield workdays[index]
            index += rule.interval
        counted += len(workdays) - skip
        year += 1


_DATES = {
    Level.DAY: _day_dates,
    Level.WEEK: _week_dates,
    Level.MONTH: _month_dates,
    Level.YEAR: _year_dates,
    Level.WORKDAY: _workday_dates,
}


def _hour_at_or_after(rule: Repeat, start: datetime, lower: datetime) -> datetime:
    step = timedelta(milliseconds=rule.interval * _HOUR_MS)
    steps = max(0, _ceil_div((lower - start) // timedelta(milliseconds=1), rule.interval * _HOUR_MS))
    return start + steps * step


def _dated_at_or_after(rule: Repeat, start: datetime, lower: datetime) -> datetime | None:
    zone = zone_of(rule.timezone)
    local_start = start.astimezone(zone).replace(tzinfo=None)
    time_of_day = rule.time if rule.time is not None else local_start.time()
    start_date = local_start.date()
    # The instant of a date's wall time lies at most a day or so after the date's local midnight
    # (a gap skips forward), and the local date of instants only steps back by a day (a fall-back
    # across midnight): a date three days before ``lower``'s local date is early enough.
    first = max(start_date.toordinal(), lower.astimezone(zone).date().toordinal() - 3)
    for ordinal in _DATES[rule.level](rule, start_date, first):
        naive = datetime.combine(date.fromordinal(ordinal), time_of_day)
        instant = start if naive == local_start else localize(naive, zone)
        if instant >= lower:
            return instant
    return None


def repeat_at_or_after(rule: Repeat, lower: datetime) -> datetime | None:
    """The first occurrence of ``rule`` at or after ``lower`` (UTC, millisecond precision);
    ``None`` once it has none (past ``end``, beyond year 9999 or a search limit)."""
    if rule.start is None:
        raise ValueError("a calendar rule counts from its start: anchor it first")
    start = truncate_ms(rule.start)
    lower = max(lower, start)
    try:
        if rule.level is Level.HOUR:
            found: datetime | None = _hour_at_or_after(rule, start, lower)
        else:
            found = _dated_at_or_after(rule, start, lower)
    except OverflowError:
        return None
    if found is None or (rule.end is not None and found > rule.end):
        return None
    return found.astimezone(UTC)
