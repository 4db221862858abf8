"""Calendar rules (shared/domain/calendars.py): hand-checked calendars, an independent brute-force
oracle for random rules, and the validation of the API's ``repeat`` object.

The oracle walks local dates one by one from ``start``'s date and decides membership from the
rule's definition (``(month - start_month) % interval == 0`` and so on; workdays counted from
``start`` with a ``holidays`` object of its own), and turns wall times into instants by a search
of its own over the UTC line.
"""

from __future__ import annotations

import functools
import time as wall_clock
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time
from typing import Any
from zoneinfo import ZoneInfo

import holidays
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from shared.domain.calendars import (
    MAX_INTERVAL,
    WORKDAY_HORIZON_YEARS,
    Level,
    Repeat,
    repeat_at_or_after,
    repeat_from_api,
    repeat_to_api,
)
from shared.domain.errors import ValidationFailed
from shared.domain.times import iso, truncate_ms

pytestmark = pytest.mark.unit

MS = timedelta(milliseconds=1)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def occurrences(rule: Repeat, count: int, lower: datetime | None = None) -> list[str]:
    """The first ``count`` occurrences at or after ``lower`` (default: start), as ISO strings."""
    assert rule.start is not None
    cursor = lower or rule.start
    out: list[str] = []
    while len(out) < count:
        found = repeat_at_or_after(rule, cursor)
        if found is None:
            break
        out.append(iso(found))
        cursor = found + MS
    return out


def rule(**data: Any) -> Repeat:
    return repeat_from_api(data)


def zs(*texts: str) -> list[str]:
    """ISO instants in the API's form (``...T09:00`` -> ``...T09:00:00.000Z``)."""
    return [iso(utc(text + ("" if text.endswith("Z") else "Z"))) for text in texts]


# --- hand-checked calendars -----------------------------------------------------------------------


def test_month_interval_two_on_three_days_counts_from_start_month() -> None:
    every_other = rule(level="month", interval=2, days=[23, 5, 3], start="2026-01-10T08:00:00Z")
    assert occurrences(every_other, 8) == zs(
        "2026-01-23T08:00",
        "2026-03-03T08:00",
        "2026-03-05T08:00",
        "2026-03-23T08:00",
        "2026-05-03T08:00",
        "2026-05-05T08:00",
        "2026-05-23T08:00",
        "2026-07-03T08:00",
    )


def test_month_days_a_month_lacks_are_skipped_in_february() -> None:
    common = rule(level="month", days=[29, 30, 31], time="12:00", start="2026-01-29T00:00:00Z")
    assert occurrences(common, 7) == zs(
        "2026-01-29T12:00",
        "2026-01-30T12:00",
        "2026-01-31T12:00",
        "2026-03-29T12:00",  # February 2026 has none of them
        "2026-03-30T12:00",
        "2026-03-31T12:00",
        "2026-04-29T12:00",
    )
    leap = rule(level="month", days=[29, 30, 31], time="12:00", start="2028-01-30T00:00:00Z")
    assert occurrences(leap, 5) == zs(
        "2028-01-30T12:00", "2028-01-31T12:00", "2028-02-29T12:00", "2028-03-29T12:00", "2028-03-30T12:00"
    )


def test_month_default_day_is_start_day_and_short_months_are_skipped() -> None:
    last = rule(level="month", start="2026-03-31T06:00:00Z")
    assert occurrences(last, 8) == zs(
        "2026-03-31T06:00",
        "2026-05-31T06:00",  # no April 31
        "2026-07-31T06:00",
        "2026-08-31T06:00",
        "2026-10-31T06:00",
        "2026-12-31T06:00",
        "2027-01-31T06:00",
        "2027-03-31T06:00",
    )


def test_month_rule_that_never_fires_again_ends() -> None:
    april = rule(level="month", interval=12, days=[31], start="2026-04-01T00:00:00Z")
    began = wall_clock.perf_counter()
    assert repeat_at_or_after(april, utc("2026-04-01T00:00:00Z")) is None
    assert wall_clock.perf_counter() - began < 1


def test_week_interval_two_from_a_wednesday() -> None:
    # 2026-01-07 is a Wednesday of the ISO week starting Monday 2026-01-05.
    biweekly = rule(level="week", interval=2, days=[3, 1], start="2026-01-07T09:00:00Z")
    assert occurrences(biweekly, 6) == zs(
        "2026-01-07T09:00",
        "2026-01-19T09:00",
        "2026-01-21T09:00",
        "2026-02-02T09:00",
        "2026-02-04T09:00",
        "2026-02-16T09:00",
    )
    from_thursday = rule(level="week", interval=2, days=[1, 3], start="2026-01-08T09:00:00Z")
    assert occurrences(from_thursday, 2) == zs("2026-01-19T09:00", "2026-01-21T09:00")


def test_week_default_day_is_start_weekday_in_local_time() -> None:
    # 23:30 UTC on Sunday 2026-01-04 is Monday 07:30 in Shanghai: the rule fires on Mondays.
    mondays = rule(level="week", start="2026-01-04T23:30:00Z", timezone="Asia/Shanghai")
    assert occurrences(mondays, 3) == zs("2026-01-04T23:30", "2026-01-11T23:30", "2026-01-18T23:30")


def test_day_interval_three_in_shanghai() -> None:
    every_third = rule(level="day", interval=3, time="09:30", timezone="Asia/Shanghai", start="2026-01-01T00:00:00Z")
    assert occurrences(every_third, 3) == zs("2026-01-01T01:30", "2026-01-04T01:30", "2026-01-07T01:30")


def test_day_time_before_start_drops_the_first_date_without_shifting_the_grid() -> None:
    late = rule(level="day", interval=3, time="09:30", timezone="Asia/Shanghai", start="2026-01-01T02:00:00Z")
    assert occurrences(late, 2) == zs("2026-01-04T01:30", "2026-01-07T01:30")


def test_hour_steps_on_the_absolute_line_across_a_clock_change() -> None:
    hourly = rule(level="hour", interval=5, timezone="Europe/Berlin", start="2026-03-28T20:00:00+01:00")
    # 20:00 CET, 01:00 CET, 07:00 CEST, 12:00 CEST: five hours apart on the UTC line.
    assert occurrences(hourly, 4) == zs("2026-03-28T19:00", "2026-03-29T00:00", "2026-03-29T05:00", "2026-03-29T10:00")


def test_year_from_february_29_fires_in_leap_years_only() -> None:
    leap_day = rule(level="year", start="2028-02-29T10:00:00Z")
    assert occurrences(leap_day, 3) == zs("2028-02-29T10:00", "2032-02-29T10:00", "2036-02-29T10:00")
    biennial = rule(level="year", interval=2, start="2026-03-15T10:00:00Z")
    assert occurrences(biennial, 3) == zs("2026-03-15T10:00", "2028-03-15T10:00", "2030-03-15T10:00")
    centuries = rule(level="year", interval=100, start="2000-02-29T00:00:00Z")
    assert occurrences(centuries, 2, utc("2001-01-01T00:00:00Z")) == zs("2400-02-29T00:00", "2800-02-29T00:00")


def shanghai_nine(*days: str) -> list[str]:
    return zs(*(f"{day}T01:00" for day in days))


def test_workday_cn_across_chinese_new_year_2025() -> None:
    # Off Jan 28 - Feb 4; Sunday Jan 26 and Saturday Feb 8 are working days.
    cn = rule(level="workday", calendar="CN", time="09:00", timezone="Asia/Shanghai", start="2025-01-24T00:00:00Z")
    assert occurrences(cn, 9) == shanghai_nine(
        "2025-01-24",
        "2025-01-26",
        "2025-01-27",
        "2025-02-05",
        "2025-02-06",
        "2025-02-07",
        "2025-02-08",
        "2025-02-10",
        "2025-02-11",
    )


def test_workday_cn_across_national_day_2025() -> None:
    # Off Oct 1 - 8; Sunday Sep 28 and Saturday Oct 11 are working days.
    cn = rule(level="workday", calendar="CN", time="09:00", timezone="Asia/Shanghai", start="2025-09-26T00:00:00Z")
    assert occurrences(cn, 8) == shanghai_nine(
        "2025-09-26", "2025-09-28", "2025-09-29", "2025-09-30", "2025-10-09", "2025-10-10", "2025-10-11", "2025-10-13"
    )


def test_workday_interval_two_counts_workdays_from_start() -> None:
    cn = rule(
        level="workday",
        interval=2,
        calendar="CN",
        time="09:00",
        timezone="Asia/Shanghai",
        start="2025-01-24T00:00:00Z",
    )
    # Workdays 0..8: Jan 24, 26, 27, Feb 5, 6, 7, 8, 10, 11 -> every second from the first.
    assert occurrences(cn, 5) == shanghai_nine("2025-01-24", "2025-01-27", "2025-02-06", "2025-02-08", "2025-02-11")
    # Asked from the middle, the count still runs from start.
    assert occurrences(cn, 2, utc("2025-02-07T00:00:00Z")) == shanghai_nine("2025-02-08", "2025-02-11")


def test_workday_count_carries_over_the_new_year() -> None:
    # Workdays from Monday 2025-12-29: Dec 29 (0), 30, 31, Jan 1 (3), Jan 2 (4), 5, 6 (6), 7, 8 (8).
    plain = rule(level="workday", interval=2, time="12:00", start="2025-12-29T00:00:00Z")
    assert occurrences(plain, 3, utc("2026-01-01T00:00:00Z")) == zs(
        "2026-01-02T12:00", "2026-01-06T12:00", "2026-01-08T12:00"
    )


def test_workday_us_across_thanksgiving_and_christmas_2026() -> None:
    us = rule(level="workday", calendar="US", time="09:00", timezone="America/New_York", start="2026-11-24T00:00:00Z")
    assert occurrences(us, 4) == zs("2026-11-24T14:00", "2026-11-25T14:00", "2026-11-27T14:00", "2026-11-30T14:00")
    winter = occurrences(us, 6, utc("2026-12-23T00:00:00Z"))
    assert winter == zs(
        "2026-12-23T14:00",
        "2026-12-24T14:00",
        "2026-12-28T14:00",  # Christmas Friday off
        "2026-12-29T14:00",
        "2026-12-30T14:00",
        "2026-12-31T14:00",
    )
    assert occurrences(us, 1, utc("2027-01-01T00:00:00Z")) == zs("2027-01-04T14:00")  # New Year Friday off


def test_workday_without_calendar_skips_weekends_only() -> None:
    plain = rule(level="workday", start="2026-01-01T09:00:00Z")  # Thursday, a holiday almost everywhere
    assert occurrences(plain, 4) == zs("2026-01-01T09:00", "2026-01-02T09:00", "2026-01-05T09:00", "2026-01-06T09:00")


def test_workday_uses_the_country_weekend() -> None:
    # Israel's weekend is Friday and Saturday: Sunday 2026-01-04 is a working day.
    israel = rule(level="workday", calendar="IL", time="09:00", start="2026-01-01T00:00:00Z")
    assert occurrences(israel, 3) == zs("2026-01-01T09:00", "2026-01-04T09:00", "2026-01-05T09:00")


def test_day_rule_in_the_spring_forward_gap_fires_after_the_gap() -> None:
    berlin = rule(level="day", time="02:30", timezone="Europe/Berlin", start="2026-03-28T00:00:00Z")
    # 02:30 CET, then 02:30 does not exist on Mar 29: 03:00 CEST; then 02:30 CEST.
    assert occurrences(berlin, 3) == zs("2026-03-28T01:30", "2026-03-29T01:00", "2026-03-30T00:30")


def test_day_rule_in_the_repeated_hour_fires_once_at_the_first() -> None:
    berlin = rule(level="day", time="02:30", timezone="Europe/Berlin", start="2026-10-24T00:00:00Z")
    assert occurrences(berlin, 3) == zs("2026-10-24T00:30", "2026-10-25T00:30", "2026-10-26T01:30")


def test_start_in_the_second_repeated_hour_is_itself_the_first_occurrence() -> None:
    second = rule(level="day", timezone="Europe/Berlin", start="2026-10-25T01:30:00Z")  # 02:30 CET, the second
    assert occurrences(second, 2) == zs("2026-10-25T01:30", "2026-10-26T01:30")


# --- start, lower and end -----------------------------------------------------------------------


def test_start_is_the_first_occurrence_with_its_milliseconds() -> None:
    daily = rule(level="day", start="2026-01-10T08:00:00.123Z")
    assert occurrences(daily, 2) == ["2026-01-10T08:00:00.123Z", "2026-01-11T08:00:00.123Z"]


def test_start_not_matching_moves_to_the_next_match() -> None:
    mondays = rule(level="week", days=[1], start="2026-01-07T09:00:00Z")  # a Wednesday
    assert occurrences(mondays, 1) == zs("2026-01-12T09:00")


def test_lower_before_start_gives_the_first_occurrence() -> None:
    daily = rule(level="day", time="10:00", start="2026-01-10T08:00:00Z")
    assert repeat_at_or_after(daily, utc("2020-01-01T00:00:00Z")) == utc("2026-01-10T10:00:00Z")
    hourly = rule(level="hour", interval=3, start="2026-01-10T08:00:00Z")
    assert repeat_at_or_after(hourly, utc("2020-01-01T00:00:00Z")) == utc("2026-01-10T08:00:00Z")


def test_end_stops_the_rule_and_is_inclusive() -> None:
    daily = rule(level="day", start="2026-01-10T08:00:00Z", end="2026-01-12T08:00:00Z")
    assert occurrences(daily, 5) == zs("2026-01-10T08:00", "2026-01-11T08:00", "2026-01-12T08:00")
    shy = rule(level="hour", start="2026-01-10T08:00:00Z", end="2026-01-10T09:59:59.999Z")
    assert occurrences(shy, 5) == zs("2026-01-10T08:00", "2026-01-10T09:00")


def test_an_unanchored_rule_has_no_occurrences_to_compute() -> None:
    with pytest.raises(ValueError, match="anchor"):
        repeat_at_or_after(rule(level="day"), utc("2026-01-01T00:00:00Z"))


@pytest.mark.parametrize(
    ("data", "lower", "expected"),
    [
        ({"level": "day", "interval": 7}, "2400-01-01T00:00:00Z", "2400-01-06T09:00"),
        ({"level": "hour", "interval": 7}, "2400-01-01T00:00:00Z", "2400-01-01T03:00"),
        ({"level": "week", "interval": 3, "days": [5]}, "2400-01-01T00:00:00Z", "2400-01-07T09:00"),
        ({"level": "month", "interval": 5, "days": [1]}, "2400-01-01T00:00:00Z", "2400-03-01T09:00"),
        ({"level": "year", "interval": 3}, "2400-01-01T00:00:00Z", "2401-01-01T09:00"),
        ({"level": "workday"}, "2400-01-01T00:00:00Z", "2400-01-03T09:00"),
    ],
)
def test_far_lower_jumps_instead_of_walking(data: dict[str, Any], lower: str, expected: str) -> None:
    # start: Thursday 2026-01-01 09:00 UTC.
    far = repeat_from_api({**data, "start": "2026-01-01T09:00:00Z"})
    began = wall_clock.perf_counter()
    assert occurrences(far, 1, utc(lower)) == zs(expected)
    assert wall_clock.perf_counter() - began < 0.2


def test_workday_counting_ends_at_the_horizon() -> None:
    counted = rule(level="workday", interval=2, start="2026-01-01T09:00:00Z")
    beyond = datetime(2026 + WORKDAY_HORIZON_YEARS + 1, 1, 1, tzinfo=UTC)
    assert repeat_at_or_after(counted, beyond) is None
    every = rule(level="workday", start="2026-01-01T09:00:00Z")
    assert repeat_at_or_after(every, beyond) is not None


@pytest.mark.parametrize("level", [level.value for level in Level])
def test_the_end_of_the_calendar_is_none_not_an_error(level: str) -> None:
    last = repeat_from_api({"level": level, "start": "2026-01-01T09:00:00Z"})
    assert repeat_at_or_after(last, datetime(9999, 12, 31, 23, 0, 0, 1000, tzinfo=UTC)) is None


# --- the oracle -----------------------------------------------------------------------------------


def wall_instant(naive: datetime, zone: ZoneInfo) -> datetime:
    """The first UTC instant whose local wall time is ``naive``, or else (a gap) the first whole
    minute after it whose wall time is past ``naive``, found by a walk over the UTC line."""
    readings = [naive.replace(tzinfo=zone, fold=fold).astimezone(UTC) for fold in (0, 1)]
    exact = [moment for moment in readings if moment.astimezone(zone).replace(tzinfo=None) == naive]
    if exact:
        return min(exact)
    moment = min(readings).replace(second=0, microsecond=0)
    for _ in range(48 * 60):
        if moment.astimezone(zone).replace(tzinfo=None) > naive:
            return moment
        moment += timedelta(minutes=1)
    raise AssertionError("no wall time found")


@functools.cache
def country(code: str) -> holidays.HolidayBase:
    return holidays.country_holidays(code)


def is_workday(day: date, calendar: str | None) -> bool:
    return country(calendar).is_working_day(day) if calendar else day.weekday() < 5


def in_grid(rule: Repeat, first: date, day: date) -> bool:
    """Whether ``day`` is a date of a day, week, month or year rule whose start's date is ``first``."""
    n = rule.interval
    if rule.level is Level.DAY:
        return (day - first).days % n == 0
    if rule.level is Level.WEEK:
        weeks = (day - timedelta(days=day.weekday()) - (first - timedelta(days=first.weekday()))).days // 7
        return weeks % n == 0 and day.isoweekday() in (rule.days or (first.isoweekday(),))
    if rule.level is Level.MONTH:
        months = (day.year - first.year) * 12 + day.month - first.month
        return months % n == 0 and day.day in (rule.days or (first.day,))
    return (day.year - first.year) % n == 0 and (day.month, day.day) == (first.month, first.day)


def member_dates(rule: Repeat, first: date, until: date) -> Iterator[date]:
    """The rule's dates from ``first`` (start's local date) to ``until``; workdays counted from ``first``."""
    day, workdays = first, 0
    while day <= until:
        if rule.level is Level.WORKDAY:
            if is_workday(day, rule.calendar):
                if workdays % rule.interval == 0:
                    yield day
                workdays += 1
        elif in_grid(rule, first, day):
            yield day
        day += timedelta(days=1)


def oracle(rule: Repeat, until: date) -> list[datetime]:
    """Every occurrence whose local date is at most ``until``, by definition, date by date."""
    assert rule.start is not None
    zone = ZoneInfo(rule.timezone)
    local_start = rule.start.astimezone(zone).replace(tzinfo=None)
    first = local_start.date()
    tod = rule.time or local_start.time()
    out: list[datetime] = []
    if rule.level is Level.HOUR:
        moment = rule.start
        while moment.astimezone(zone).date() <= until:
            out.append(moment)
            moment += timedelta(hours=rule.interval)
    else:
        for day in member_dates(rule, first, until):
            naive = datetime.combine(day, tod)
            out.append(rule.start if naive == local_start else wall_instant(naive, zone))
    return [moment for moment in out if moment >= rule.start and (rule.end is None or moment <= rule.end)]


ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Shanghai",
    "Australia/Lord_Howe",  # half-hour DST
    "America/Santiago",  # DST at midnight
    "Asia/Kolkata",
    "America/St_Johns",
]
SPANS = {Level.HOUR: 6, Level.DAY: 40, Level.WEEK: 90, Level.MONTH: 500, Level.YEAR: 2000, Level.WORKDAY: 40}
"""How many days past ``lower`` the oracle looks."""


@st.composite
def rules(draw: st.DrawFn) -> Repeat:
    level = draw(st.sampled_from(list(Level)))
    interval = draw(st.one_of(st.integers(1, 4), st.sampled_from([1, 7, 13])))
    days: tuple[int, ...] = ()
    if level is Level.WEEK:
        days = tuple(sorted(draw(st.sets(st.integers(1, 7), max_size=3))))
    elif level is Level.MONTH:
        days = tuple(sorted(draw(st.sets(st.sampled_from([1, 2, 15, 28, 29, 30, 31]), max_size=3))))
    time_of_day = None
    if level is not Level.HOUR:
        time_of_day = draw(
            st.none()
            | st.sampled_from([clock_time(0, 0), clock_time(2, 30), clock_time(1, 59, 59), clock_time(23, 59, 59)])
            | st.builds(clock_time, st.integers(0, 23), st.sampled_from([0, 15, 30, 45]), st.integers(0, 59))
        )
    start = truncate_ms(draw(st.datetimes(datetime(2024, 1, 1), datetime(2030, 12, 31), timezones=st.just(UTC))))
    calendar = draw(st.sampled_from([None, "CN", "US", "DE"])) if level is Level.WORKDAY else None
    end = draw(st.none() | st.integers(0, 200 * 24).map(lambda hours: start + timedelta(hours=hours, milliseconds=1)))
    return Repeat(level, interval, days, time_of_day, start, draw(st.sampled_from(ZONES)), calendar, end)


@settings(max_examples=400, deadline=None)
@given(rules(), st.integers(-3 * 24, 300 * 24))
@example(Repeat(Level.DAY, 1, (), clock_time(2, 30), utc("2026-03-28T00:00:00Z"), "Europe/Berlin"), 0)
@example(Repeat(Level.DAY, 1, (), clock_time(2, 30), utc("2026-10-24T00:00:00Z"), "Europe/Berlin"), 0)
@example(Repeat(Level.DAY, 2, (), None, utc("2026-10-25T01:30:00Z"), "Europe/Berlin"), -5)
@example(Repeat(Level.DAY, 1, (), clock_time(0, 0), utc("2026-09-05T00:00:00Z"), "America/Santiago"), 0)
@example(Repeat(Level.WORKDAY, 3, (), clock_time(9), utc("2025-01-20T00:00:00Z"), "Asia/Shanghai", "CN"), 24 * 5)
@example(Repeat(Level.MONTH, 2, (29, 30, 31), None, utc("2027-12-30T23:00:00Z"), "Asia/Kolkata"), 24 * 40)
@example(Repeat(Level.WORKDAY, 2, (), None, utc("2025-12-29T12:00:00Z"), "UTC"), 24 * 4)
@example(Repeat(Level.WORKDAY, 4, (), clock_time(9), utc("2025-11-03T00:00:00Z"), "Europe/Berlin", "DE"), 24 * 70)
@example(Repeat(Level.DAY, 1, (), clock_time(23, 30), utc("2026-04-02T12:00:00Z"), "America/Santiago"), 0)
@example(Repeat(Level.HOUR, 1, (), None, utc("2026-04-04T02:30:00Z"), "America/Santiago"), 0)
def test_occurrences_match_the_oracle(rule: Repeat, lower_hours: int) -> None:
    assert rule.start is not None
    lower = rule.start + timedelta(hours=lower_hours, milliseconds=lower_hours * 7)
    until = lower.date() + timedelta(days=SPANS[rule.level])
    cutoff = datetime.combine(until - timedelta(days=2), clock_time(), tzinfo=UTC)
    expected = [moment for moment in oracle(rule, until) if lower <= moment < cutoff]
    found: list[datetime] = []
    cursor = lower
    while (following := repeat_at_or_after(rule, cursor)) is not None and following < cutoff:
        assert following >= lower
        assert following >= rule.start
        assert following.tzinfo is UTC
        assert following == truncate_ms(following)
        assert repeat_at_or_after(rule, following) == following  # idempotent
        found.append(following)
        cursor = following + MS
    assert found == expected


@settings(max_examples=150, deadline=None)
@given(rules(), st.integers(-3 * 24 * 60, 400 * 24 * 60), st.integers(0, 40 * 24 * 60))
def test_at_or_after_is_idempotent_and_monotonic(rule: Repeat, first_minutes: int, more_minutes: int) -> None:
    assert rule.start is not None
    early = rule.start + timedelta(minutes=first_minutes)
    late = early + timedelta(minutes=more_minutes)
    first, second = repeat_at_or_after(rule, early), repeat_at_or_after(rule, late)
    if first is None:
        assert second is None
        return
    assert first >= early
    assert repeat_at_or_after(rule, first) == first
    assert second is None or second >= first
    if second is not None and first >= late:
        assert second == first


@settings(max_examples=100, deadline=None)
@given(rules().filter(lambda rule: rule.level is not Level.WORKDAY), st.integers(50, 300))
def test_far_lower_matches_the_definition_around_it(rule: Repeat, years: int) -> None:
    """Decades after start, the answer is a member and no member lies between lower and it."""
    assert rule.start is not None
    rule = Repeat(rule.level, rule.interval, rule.days, rule.time, rule.start, rule.timezone)  # no end
    assert rule.start is not None
    lower = rule.start + timedelta(days=365 * years + 17, hours=5)
    found = repeat_at_or_after(rule, lower)
    assert found is None or found >= lower
    # The oracle from a start moved by whole units of the level into lower's neighbourhood, up to
    # the answer (a month or year rule may skip many units: the 31st in every 12th month of 30).
    shifted = shift_start(rule, lower)
    until = found.date() + timedelta(days=2) if found is not None else lower.date() + timedelta(days=SPANS[rule.level])
    expected = [moment for moment in oracle(shifted, until) if moment >= lower]
    assert expected[:1] == ([found] if found is not None else [])


def shift_start(rule: Repeat, lower: datetime) -> Repeat:
    """``rule`` with ``start`` moved forward by a whole number of its periods (keeping its grid)
    to shortly before ``lower``: the same occurrences from there on."""
    assert rule.start is not None
    zone = ZoneInfo(rule.timezone)
    local = rule.start.astimezone(zone).replace(tzinfo=None)
    tod = rule.time or local.time()
    days = rule.days
    if rule.level is Level.HOUR:
        period = timedelta(hours=rule.interval)
        moved = rule.start + ((lower - rule.start) // period - 1) * period
        return Repeat(rule.level, rule.interval, start=moved, timezone=rule.timezone)
    if rule.level is Level.DAY:
        steps = ((lower.date() - local.date()).days // rule.interval - 2) * rule.interval
        new_date = local.date() + timedelta(days=steps)
    elif rule.level is Level.WEEK:
        days = days or (local.isoweekday(),)
        monday = local.date() - timedelta(days=local.weekday())
        weeks = ((lower.date() - monday).days // 7 // rule.interval - 1) * rule.interval
        new_date = monday + timedelta(weeks=weeks)
    elif rule.level is Level.MONTH:
        days = days or (local.day,)
        base = local.year * 12 + local.month - 1
        months = ((lower.year * 12 + lower.month - 1 - base) // rule.interval - 1) * rule.interval
        year, month = divmod(base + months, 12)
        new_date = date(year, month + 1, 1)
    else:
        years = ((lower.year - local.year) // rule.interval - 1) * rule.interval
        year = local.year + years
        while local.month == 2 and local.day == 29 and not (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
            year -= rule.interval  # keep a leap-day start on a leap year of its grid
        new_date = date(year, local.month, local.day)
    # Midnight of the new unit's first day, before any occurrence: time and days given explicitly.
    moved_start = datetime.combine(new_date, clock_time()).replace(tzinfo=zone).astimezone(UTC)
    return Repeat(rule.level, rule.interval, days, tod, moved_start, rule.timezone)


# --- the API form ---------------------------------------------------------------------------------


def test_from_api_normalises_and_round_trips() -> None:
    parsed = repeat_from_api(
        {
            "level": "month",
            "interval": 2,
            "days": [23, 3, 5, 3],
            "time": "09:05",
            "start": "2026-01-10T08:00:00.123456+08:00",
            "timezone": "Asia/Shanghai",
            "end": "2027-01-01T00:00:00Z",
        }
    )
    assert parsed == Repeat(
        Level.MONTH,
        2,
        (3, 5, 23),
        clock_time(9, 5),
        datetime(2026, 1, 10, 0, 0, 0, 123000, tzinfo=UTC),
        "Asia/Shanghai",
        None,
        datetime(2027, 1, 1, tzinfo=UTC),
    )
    assert repeat_to_api(parsed) == {
        "level": "month",
        "interval": 2,
        "days": [3, 5, 23],
        "time": "09:05:00",
        "start": "2026-01-10T00:00:00.123Z",
        "timezone": "Asia/Shanghai",
        "end": "2027-01-01T00:00:00.000Z",
    }
    assert repeat_from_api(repeat_to_api(parsed)) == parsed


def test_from_api_defaults_and_nulls() -> None:
    assert repeat_from_api({"level": "workday", "calendar": "CN"}) == Repeat(Level.WORKDAY, calendar="CN")
    assert repeat_from_api({"level": "day", "interval": None, "time": None, "start": None}) == Repeat(Level.DAY)
    assert repeat_to_api(Repeat(Level.HOUR)) == {"level": "hour", "interval": 1, "timezone": "UTC"}
    assert repeat_from_api({"level": "day", "time": "23:59:59"}).time == clock_time(23, 59, 59)


@given(rules())
def test_api_form_round_trips(rule: Repeat) -> None:
    assert repeat_from_api(repeat_to_api(rule)) == rule


START = "2026-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({}, "schedule.repeat.level"),
        ({"level": "minute"}, "schedule.repeat.level"),
        ({"level": "DAY"}, "schedule.repeat.level"),
        ({"level": 1}, "schedule.repeat.level"),
        ({"level": "day", "interval": 0}, "schedule.repeat.interval"),
        ({"level": "day", "interval": MAX_INTERVAL + 1}, "schedule.repeat.interval"),
        ({"level": "day", "interval": True}, "schedule.repeat.interval"),
        ({"level": "day", "interval": 1.5}, "schedule.repeat.interval"),
        ({"level": "day", "interval": 2.0}, "schedule.repeat.interval"),
        ({"level": "day", "interval": "2"}, "schedule.repeat.interval"),
        ({"level": "day", "days": [1]}, "schedule.repeat.days"),
        ({"level": "workday", "days": [1]}, "schedule.repeat.days"),
        ({"level": "year", "days": [1]}, "schedule.repeat.days"),
        ({"level": "week", "days": [0]}, "schedule.repeat.days"),
        ({"level": "week", "days": [8]}, "schedule.repeat.days"),
        ({"level": "week", "days": []}, "schedule.repeat.days"),
        ({"level": "week", "days": 1}, "schedule.repeat.days"),
        ({"level": "week", "days": "1"}, "schedule.repeat.days"),
        ({"level": "week", "days": [True]}, "schedule.repeat.days"),
        ({"level": "week", "days": [1.0]}, "schedule.repeat.days"),
        ({"level": "month", "days": [32]}, "schedule.repeat.days"),
        ({"level": "month", "days": [0, 5]}, "schedule.repeat.days"),
        ({"level": "day", "time": "24:00"}, "schedule.repeat.time"),
        ({"level": "day", "time": "9:30"}, "schedule.repeat.time"),
        ({"level": "day", "time": "09:60"}, "schedule.repeat.time"),
        ({"level": "day", "time": "09:30:60"}, "schedule.repeat.time"),
        ({"level": "day", "time": "09:30:00.5"}, "schedule.repeat.time"),
        ({"level": "day", "time": "09:30 "}, "schedule.repeat.time"),
        ({"level": "day", "time": 930}, "schedule.repeat.time"),
        ({"level": "hour", "time": "09:00"}, "schedule.repeat.time"),
        ({"level": "day", "timezone": "Mars/Olympus"}, "schedule.repeat.timezone"),
        ({"level": "day", "timezone": ""}, "schedule.repeat.timezone"),
        ({"level": "day", "timezone": 8}, "schedule.repeat.timezone"),
        ({"level": "day", "calendar": "CN"}, "schedule.repeat.calendar"),
        ({"level": "workday", "calendar": "XX"}, "schedule.repeat.calendar"),
        ({"level": "workday", "calendar": "cn"}, "schedule.repeat.calendar"),
        ({"level": "workday", "calendar": "NYSE"}, "schedule.repeat.calendar"),
        ({"level": "workday", "calendar": 86}, "schedule.repeat.calendar"),
        ({"level": "day", "start": "2026-01-01T00:00:00"}, "schedule.repeat.start"),
        ({"level": "day", "start": "2026-01-01"}, "schedule.repeat.start"),
        ({"level": "day", "start": "tomorrow"}, "schedule.repeat.start"),
        ({"level": "day", "start": 1767225600}, "schedule.repeat.start"),
        ({"level": "day", "start": "0001-01-01T00:00:00+01:00"}, "schedule.repeat.start"),
        ({"level": "day", "end": "2026-01-01T00:00:00"}, "schedule.repeat.end"),
        ({"level": "day", "start": START, "end": START}, "schedule.repeat.end"),
        ({"level": "day", "start": START, "end": "2025-12-31T23:59:59Z"}, "schedule.repeat.end"),
        ({"level": "day", "every": 2}, "schedule.repeat.every"),
    ],
)
def test_validation_names_the_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        repeat_from_api(data)
    assert [detail.field for detail in caught.value.details] == [field]
    assert caught.value.message.startswith(f"{field}: ")


def test_validation_of_something_else_than_an_object() -> None:
    with pytest.raises(ValidationFailed) as caught:
        repeat_from_api(["day"])  # type: ignore[arg-type]
    assert caught.value.details[0].field == "schedule.repeat"


def test_validation_uses_the_given_field_prefix() -> None:
    with pytest.raises(ValidationFailed) as caught:
        repeat_from_api({"level": "week", "days": [9]}, field="tasks[2].schedule.repeat")
    assert caught.value.details[0].field == "tasks[2].schedule.repeat.days"


def test_hourly_time_message_explains_why() -> None:
    with pytest.raises(ValidationFailed, match="minute and second"):
        repeat_from_api({"level": "hour", "time": "09:00"})


def test_a_calendar_whose_moves_are_published_yearly_says_how_far_its_data_goes() -> None:
    from shared.domain.calendars import calendar_notes, published_through

    assert published_through("CN") == 2026  # holidays 0.109: the State Council's 2026 notice
    assert published_through("US") is None  # rule-based: every year is known
    rule = repeat_from_api({"level": "workday", "calendar": "CN", "start": "2026-12-30T09:00:00+08:00"})
    in_2026 = [datetime(2026, 12, 30, 1, tzinfo=UTC)]
    in_2027 = [*in_2026, datetime(2027, 1, 4, 1, tzinfo=UTC)]
    assert calendar_notes(rule, in_2026) == []
    (note,) = calendar_notes(rule, in_2027)
    assert "up to 2026" in note
    assert calendar_notes(repeat_from_api({"level": "day", "start": "2027-01-01T00:00:00Z"}), in_2027) == []
