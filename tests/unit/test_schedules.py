"""Schedules and instants: next fire times, DST rules, validation (shared/domain/schedules.py, times.py).

The cron properties are checked against an independent oracle: the expressions are drawn from a
small table of field texts whose value sets are known, and every UTC minute of a window is
classified by hand (its local wall time matches; it is the first occurrence of that wall time; it
ends a spring-forward gap in which a matching wall time was skipped).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.errors import ValidationFailed
from shared.domain.schedules import (
    MAX_EVERY_SECONDS,
    After,
    At,
    Cron,
    Every,
    anchored,
    at_or_after,
    check_cron,
    day_fields_ored,
    first_fire,
    is_recurring,
    next_after,
    upcoming,
    zone_of,
)
from shared.domain.times import from_ms, iso, to_ms, truncate_ms

pytestmark = pytest.mark.unit

ONE_MS = timedelta(milliseconds=1)
MINUTE = timedelta(minutes=1)
CRON_SETTINGS = settings(max_examples=60, deadline=None)
FAST_SETTINGS = settings(max_examples=100, deadline=None)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def z(text: str) -> datetime:
    """An instant from its wire form (``...Z``)."""
    return datetime.fromisoformat(text)


# --------------------------------------------------------------------------------------------
# A small cron language with known value sets (the oracle)
# --------------------------------------------------------------------------------------------

SECONDS = {"0": {0}, "30": {30}, "*/15": {0, 15, 30, 45}, "*/20": {0, 20, 40}, "5,35": {5, 35}}
MINUTES = {
    "*": set(range(60)),
    "0": {0},
    "30": {30},
    "45": {45},
    "59": {59},
    "*/15": {0, 15, 30, 45},
    "0,30": {0, 30},
    "5-10": set(range(5, 11)),
}
HOURS = {
    "*": set(range(24)),
    "0": {0},
    "1": {1},
    "2": {2},
    "3": {3},
    "23": {23},
    "1-3": {1, 2, 3},
    "*/6": {0, 6, 12, 18},
    "2,14": {2, 14},
}
DAYS_OF_MONTH = {
    "*": set(range(1, 32)),
    "1": {1},
    "15": {15},
    "*/10": {1, 11, 21, 31},
    "28-31": {28, 29, 30, 31},
}
MONTHS = {"*": set(range(1, 13)), "3-11": set(range(3, 12)), "1,4,9,10": {1, 4, 9, 10}}
DAYS_OF_WEEK = {  # cron numbering: 0 = Sunday
    "*": set(range(7)),
    "1-5": {1, 2, 3, 4, 5},
    "0": {0},
    "6": {6},
    "0,6": {0, 6},
}

DST_ZONES = [
    "America/New_York",
    "Europe/London",
    "Europe/Berlin",
    "Australia/Sydney",
    "Australia/Lord_Howe",  # 30-minute DST
    "Asia/Shanghai",  # no DST
    "America/Santiago",  # changes at midnight
]


@dataclass(frozen=True)
class CronCase:
    second: str | None
    minute: str
    hour: str
    dom: str
    month: str
    dow: str

    @property
    def expression(self) -> str:
        fields = [self.minute, self.hour, self.dom, self.month, self.dow]
        return " ".join(([self.second] if self.second is not None else []) + fields)

    @property
    def seconds(self) -> list[int]:
        return sorted(SECONDS[self.second]) if self.second is not None else [0]

    def minute_matches(self, wall: datetime) -> bool:
        """Whether some second of this wall-clock minute matches (Vixie cron's day rule: day of
        month and day of week are ANDed when either field's text starts with ``*``, as ``*/10``
        does, and ORed only when neither does)."""
        if wall.minute not in MINUTES[self.minute] or wall.hour not in HOURS[self.hour]:
            return False
        if wall.month not in MONTHS[self.month]:
            return False
        in_dom = wall.day in DAYS_OF_MONTH[self.dom]
        in_dow = (wall.weekday() + 1) % 7 in DAYS_OF_WEEK[self.dow]
        if not self.dom.startswith("*") and not self.dow.startswith("*"):
            return in_dom or in_dow
        return in_dom and in_dow

    def matches(self, wall: datetime) -> bool:
        return self.minute_matches(wall) and wall.second in self.seconds and wall.microsecond == 0


cron_cases = st.builds(
    CronCase,
    second=st.sampled_from([None, None, *SECONDS]),
    minute=st.sampled_from(sorted(MINUTES)),
    hour=st.sampled_from(sorted(HOURS)),
    dom=st.sampled_from(["*", "*", "*", *DAYS_OF_MONTH]),
    month=st.sampled_from(["*", "*", "*", *MONTHS]),
    dow=st.sampled_from(["*", "*", *DAYS_OF_WEEK]),
)
zones = st.sampled_from(DST_ZONES)
RANGE_START_MS = to_ms(utc(2024, 1, 1))
RANGE_END_MS = to_ms(utc(2031, 1, 1))


@functools.cache
def transitions(zone_name: str) -> tuple[datetime, ...]:
    """The UTC instants (to the minute) at which the zone's offset changes in 2024-2030."""
    zone = ZoneInfo(zone_name)
    found = []
    step = timedelta(hours=6)
    cursor = from_ms(RANGE_START_MS)
    while cursor < from_ms(RANGE_END_MS):
        nxt = cursor + step
        if cursor.astimezone(zone).utcoffset() != nxt.astimezone(zone).utcoffset():
            low, high = cursor, nxt  # offset(low) != offset(high): bisect to the minute
            while high - low > MINUTE:
                mid = low + (high - low) // 2
                mid = mid.replace(second=0, microsecond=0)
                if mid.astimezone(zone).utcoffset() == low.astimezone(zone).utcoffset():
                    low = mid
                else:
                    high = mid
            found.append(high)
        cursor = nxt
    return tuple(found)


@st.composite
def instants_for(draw: st.DrawFn, zone_name: str) -> datetime:
    """An instant, usually close to one of the zone's DST changes (ms precision)."""
    changes = transitions(zone_name)
    if not changes or draw(st.integers(0, 4)) == 0:
        return from_ms(draw(st.integers(RANGE_START_MS, RANGE_END_MS)))
    change = draw(st.sampled_from(changes))
    offset_ms = draw(
        st.one_of(
            st.sampled_from([0, -1, 1, -1000]),  # at the change (the first instant after a gap)
            st.integers(-180, 60).map(lambda minutes: minutes * 60_000),
            st.integers(-3 * 3_600_000, 3_600_000),  # the hours just before and around the change
            st.integers(-2 * 86_400_000, 6 * 3_600_000),
        )
    )
    if draw(st.booleans()):  # often on a whole minute or second, where cron fires
        offset_ms -= offset_ms % (60_000 if draw(st.booleans()) else 1_000)
    return change + timedelta(milliseconds=offset_ms)


@st.composite
def zoned_instants(draw: st.DrawFn) -> tuple[str, datetime]:
    zone_name = draw(zones)
    return zone_name, draw(instants_for(zone_name))


def expected_occurrences(case: CronCase, zone_name: str, low: datetime, high: datetime) -> list[datetime]:
    """Brute force: every occurrence in ``[low, high]`` by walking the window minute by minute."""
    zone = ZoneInfo(zone_name)
    found: set[datetime] = set()
    minute = low.replace(second=0, microsecond=0)
    while minute <= high:
        local = minute.astimezone(zone)
        wall = local.replace(tzinfo=None)
        # fold == 1: the second occurrence of a repeated wall time, which never fires.
        if local.fold == 0 and case.minute_matches(wall):
            for second in case.seconds:
                instant = minute + timedelta(seconds=second)
                if low <= instant <= high:
                    found.add(instant)
        previous_wall = (minute - MINUTE).astimezone(zone).replace(tzinfo=None)
        skipped = previous_wall + MINUTE
        while skipped < wall:  # a spring-forward gap ends at `minute`
            if case.minute_matches(skipped) and low <= minute <= high:
                found.add(minute)
                break
            skipped += MINUTE
        minute += MINUTE
    return sorted(found)


def skipped_wall_times(instant: datetime, zone: ZoneInfo) -> list[datetime]:
    """The wall-clock minutes a spring-forward change skipped just before ``instant``."""
    before = (instant - ONE_MS).astimezone(zone).replace(tzinfo=None)
    at = instant.astimezone(zone).replace(tzinfo=None)
    gap = []
    cursor = before.replace(second=0, microsecond=0) + MINUTE
    while cursor < at:
        gap.append(cursor)
        cursor += MINUTE
    return gap


def assert_valid_fire(case: CronCase, zone_name: str, instant: datetime) -> None:
    """A fire is a matching wall time of the zone at its first occurrence, or the first instant
    after a spring-forward gap that swallowed a matching wall time."""
    zone = ZoneInfo(zone_name)
    assert instant.tzinfo is not None
    assert instant.utcoffset() == timedelta(0)
    assert instant == truncate_ms(instant)
    local = instant.astimezone(zone)
    wall = local.replace(tzinfo=None)
    day_or = day_fields_ored(case.expression)
    if croniter.match(case.expression, wall, day_or=day_or, second_at_beginning=case.second is not None):
        assert case.matches(wall)
        assert local.fold == 0, f"{iso(instant)} is the second occurrence of {wall} in {zone_name}"
        return
    gap = skipped_wall_times(instant, zone)
    assert gap, f"{iso(instant)} = {wall} in {zone_name} does not match {case.expression!r}"
    assert any(case.minute_matches(skipped) for skipped in gap)
    assert wall.second == 0


# --------------------------------------------------------------------------------------------
# Cron: properties
# --------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(case=cron_cases, wall_ms=st.integers(RANGE_START_MS, RANGE_END_MS))
def test_oracle_agrees_with_croniter_match(case: CronCase, wall_ms: int) -> None:
    has_seconds = case.second is not None
    precision = 1000 if has_seconds else 60_000  # croniter.match of 5 fields ignores the seconds
    wall = from_ms(wall_ms - wall_ms % precision).replace(tzinfo=None)
    day_or = day_fields_ored(case.expression)  # croniter ORs restricted day fields unless told not to
    assert case.matches(wall) == croniter.match(case.expression, wall, day_or=day_or, second_at_beginning=has_seconds)


@CRON_SETTINGS
@given(case=cron_cases, zoned=zoned_instants(), bounds=st.data())
def test_cron_fires_increase_stay_within_start_end_and_match_the_zone_wall_clock(
    case: CronCase, zoned: tuple[str, datetime], bounds: st.DataObject
) -> None:
    zone_name, after = zoned
    start = bounds.draw(st.none() | st.integers(-3 * 86_400_000, 3 * 86_400_000).map(lambda ms: after + ONE_MS * ms))
    end = bounds.draw(st.none() | st.integers(0, 20 * 86_400_000).map(lambda ms: after + ONE_MS * ms))
    schedule = Cron(case.expression, zone_name, start, end)

    fires = upcoming(schedule, after, 12)

    assert fires == sorted(set(fires)), "strictly increasing"
    assert all(fire > after for fire in fires)
    for fire in fires:
        assert start is None or fire >= start
        assert end is None or fire <= end
        assert_valid_fire(case, zone_name, fire)
    if end is None:  # every case of the table fires at least once a year
        assert len(fires) == 12


@CRON_SETTINGS
@given(case=cron_cases, zoned=zoned_instants())
def test_cron_misses_no_occurrence_and_doubles_none(case: CronCase, zoned: tuple[str, datetime]) -> None:
    """at_or_after, then next_after repeatedly, yields exactly the brute-forced occurrences of a
    window around a DST change: nothing skipped, nothing fired twice."""
    zone_name, low = zoned
    assert_matches_brute_force(case, zone_name, low, timedelta(days=2))


ZONES_WITH_DST = [name for name in DST_ZONES if name != "Asia/Shanghai"]


@CRON_SETTINGS
@given(case=cron_cases, zone_name=st.sampled_from(ZONES_WITH_DST), data=st.data())
def test_cron_asked_exactly_at_a_dst_change_misses_nothing(case: CronCase, zone_name: str, data: st.DataObject) -> None:
    """The instants at and just before a change are where wall-clock arithmetic goes wrong: at
    the first instant after a gap, the skipped wall times are due."""
    change = data.draw(st.sampled_from(transitions(zone_name)))
    low = change + ONE_MS * data.draw(st.sampled_from([0, -1, 1, -1000, -60_000]))
    assert_matches_brute_force(case, zone_name, low, timedelta(hours=6))


def assert_matches_brute_force(case: CronCase, zone_name: str, low: datetime, window: timedelta) -> None:
    schedule = Cron(case.expression, zone_name)
    window_end = low + window
    fires: list[datetime] = []
    fire = at_or_after(schedule, low)
    while fire is not None and fire <= window_end and len(fires) < 50:
        fires.append(fire)
        fire = next_after(schedule, fire)
    high = fires[-1] if len(fires) == 50 else window_end

    assert fires == expected_occurrences(case, zone_name, low, high)


@CRON_SETTINGS
@given(case=cron_cases, zoned=zoned_instants())
def test_cron_at_or_after_is_the_instant_itself_or_the_next_fire(case: CronCase, zoned: tuple[str, datetime]) -> None:
    zone_name, instant = zoned
    schedule = Cron(case.expression, zone_name)
    first = at_or_after(schedule, instant)
    following = next_after(schedule, instant)
    assert first is not None
    assert following is not None
    assert first >= instant
    assert following > instant
    assert first in (instant, following)
    assert next_after(schedule, instant) == at_or_after(schedule, instant + ONE_MS)


@settings(max_examples=40, deadline=None)
@given(case=cron_cases, zoned=zoned_instants(), count=st.integers(0, 8))
def test_upcoming_agrees_with_repeated_next_after_for_cron(
    case: CronCase, zoned: tuple[str, datetime], count: int
) -> None:
    zone_name, after = zoned
    schedule = Cron(case.expression, zone_name)
    chained, cursor = [], after
    for _ in range(count):
        cursor = next_after(schedule, cursor)
        assert cursor is not None
        chained.append(cursor)
    assert upcoming(schedule, after, count) == chained


@CRON_SETTINGS
@given(case=cron_cases, zoned=zoned_instants())
def test_cron_first_fire_is_at_or_after_now(case: CronCase, zoned: tuple[str, datetime]) -> None:
    zone_name, now = zoned
    schedule = Cron(case.expression, zone_name)
    assert first_fire(schedule, now) == at_or_after(schedule, now)


# --------------------------------------------------------------------------------------------
# Cron: hand-checked examples
# --------------------------------------------------------------------------------------------


def test_weekday_morning_in_shanghai_after_friday_morning_is_monday() -> None:
    schedule = Cron("0 8 * * 1-5", "Asia/Shanghai")
    friday_0900_local = z("2026-01-09T01:00:00Z")  # 2026-01-09 is a Friday; Shanghai is UTC+8
    assert next_after(schedule, friday_0900_local) == z("2026-01-12T00:00:00Z")
    assert upcoming(schedule, friday_0900_local, 3) == [
        z("2026-01-12T00:00:00Z"),
        z("2026-01-13T00:00:00Z"),
        z("2026-01-14T00:00:00Z"),
    ]


def test_cron_fires_at_the_wall_time_of_its_own_zone_not_utc() -> None:
    after = z("2026-07-01T00:00:00Z")
    assert next_after(Cron("0 9 * * *"), after) == z("2026-07-01T09:00:00Z")
    assert next_after(Cron("0 9 * * *", "America/New_York"), after) == z("2026-07-01T13:00:00Z")  # EDT
    assert next_after(Cron("0 9 * * *", "Europe/Berlin"), after) == z("2026-07-01T07:00:00Z")  # CEST
    assert next_after(Cron("0 9 * * *", "Australia/Sydney"), after) == z("2026-07-01T23:00:00Z")  # AEST
    winter = z("2026-01-01T00:00:00Z")
    assert next_after(Cron("0 9 * * *", "America/New_York"), winter) == z("2026-01-01T14:00:00Z")  # EST


def test_six_fields_have_seconds_first() -> None:
    schedule = Cron("*/15 * * * * *")
    assert upcoming(schedule, z("2026-01-09T01:00:07.250Z"), 5) == [
        z("2026-01-09T01:00:15Z"),
        z("2026-01-09T01:00:30Z"),
        z("2026-01-09T01:00:45Z"),
        z("2026-01-09T01:01:00Z"),
        z("2026-01-09T01:01:15Z"),
    ]
    # second 30 of minute 5 of every hour -- not "minute 30 of hour 5, every second"
    hourly = Cron("30 5 * * * *")
    assert upcoming(hourly, z("2026-01-09T01:00:00Z"), 2) == [
        z("2026-01-09T01:05:30Z"),
        z("2026-01-09T02:05:30Z"),
    ]
    assert next_after(Cron("30 5 * * *"), z("2026-01-09T01:00:00Z")) == z("2026-01-09T05:30:00Z")


def test_five_field_cron_fires_on_the_minute_even_from_inside_one() -> None:
    schedule = Cron("* * * * *")
    assert at_or_after(schedule, z("2026-01-01T10:00:00Z")) == z("2026-01-01T10:00:00Z")
    assert at_or_after(schedule, z("2026-01-01T10:00:00.001Z")) == z("2026-01-01T10:01:00Z")
    assert next_after(schedule, z("2026-01-01T10:00:59.999Z")) == z("2026-01-01T10:01:00Z")
    assert next_after(schedule, z("2026-01-01T10:00:00Z")) == z("2026-01-01T10:01:00Z")


@pytest.mark.parametrize(
    ("zone", "expression", "after", "expected"),
    [
        # New York, spring forward 2026-03-08 02:00 EST -> 03:00 EDT: 02:30 is skipped.
        (
            "America/New_York",
            "30 2 * * *",
            "2026-03-06T12:00:00Z",
            ["2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"],
        ),
        # New York, fall back 2026-11-01 02:00 EDT -> 01:00 EST: 01:30 happens twice, fires once.
        (
            "America/New_York",
            "30 1 * * *",
            "2026-10-31T00:00:00Z",
            ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"],
        ),
        # ... and a 02:30 fire keeps its wall time across the change.
        (
            "America/New_York",
            "30 2 * * *",
            "2026-10-31T00:00:00Z",
            ["2026-10-31T06:30:00Z", "2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z"],
        ),
        # London, 2026-03-29 01:00 GMT -> 02:00 BST; 2026-10-25 02:00 BST -> 01:00 GMT.
        (
            "Europe/London",
            "30 1 * * *",
            "2026-03-28T00:00:00Z",
            ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"],
        ),
        (
            "Europe/London",
            "30 1 * * *",
            "2026-10-24T00:00:00Z",
            ["2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"],
        ),
        # Berlin, 2026-03-29 02:00 CET -> 03:00 CEST.
        (
            "Europe/Berlin",
            "30 2 * * *",
            "2026-03-28T00:00:00Z",
            ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"],
        ),
        # Sydney, 2026-10-04 02:00 AEST -> 03:00 AEDT; 2026-04-05 03:00 AEDT -> 02:00 AEST.
        (
            "Australia/Sydney",
            "30 2 * * *",
            "2026-10-02T12:00:00Z",
            ["2026-10-02T16:30:00Z", "2026-10-03T16:00:00Z", "2026-10-04T15:30:00Z"],
        ),
        (
            "Australia/Sydney",
            "30 2 * * *",
            "2026-04-03T12:00:00Z",
            ["2026-04-03T15:30:00Z", "2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"],
        ),
        # Lord Howe moves by 30 minutes: 2026-10-04 02:00 (+10:30) -> 02:30 (+11).
        (
            "Australia/Lord_Howe",
            "15 2 * * *",
            "2026-10-02T12:00:00Z",
            ["2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"],
        ),
        # ... and 2026-04-05 02:00 (+11) -> 01:30 (+10:30): 01:45 happens twice, fires once.
        (
            "Australia/Lord_Howe",
            "45 1 * * *",
            "2026-04-03T12:00:00Z",
            ["2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"],
        ),
        (
            "Australia/Lord_Howe",
            "*/20 * * * *",
            "2026-10-03T15:00:00Z",  # 01:30 local, half an hour before the change
            [
                "2026-10-03T15:10:00Z",  # 01:40
                "2026-10-03T15:30:00Z",  # 02:00 and 02:20 were skipped: once, at 02:30
                "2026-10-03T15:40:00Z",  # 02:40
                "2026-10-03T16:00:00Z",  # 03:00
            ],
        ),
        # Santiago changes at midnight: 2026-09-06 00:00 -04 -> 01:00 -03 (midnight skipped) ...
        (
            "America/Santiago",
            "0 0 * * *",
            "2026-09-04T12:00:00Z",
            ["2026-09-05T04:00:00Z", "2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"],
        ),
        # ... and 2026-04-05 00:00 -03 -> 2026-04-04 23:00 -04 (23:30 on the 4th twice).
        (
            "America/Santiago",
            "30 23 * * *",
            "2026-04-03T12:00:00Z",
            ["2026-04-04T02:30:00Z", "2026-04-05T02:30:00Z", "2026-04-06T03:30:00Z"],
        ),
        # Shanghai has no DST: always UTC+8.
        (
            "Asia/Shanghai",
            "30 2 * * *",
            "2026-03-07T00:00:00Z",
            ["2026-03-07T18:30:00Z", "2026-03-08T18:30:00Z", "2026-03-09T18:30:00Z"],
        ),
    ],
)
def test_cron_across_dst_changes(zone: str, expression: str, after: str, expected: list[str]) -> None:
    assert upcoming(Cron(expression, zone), z(after), len(expected)) == [z(t) for t in expected]


def test_skipped_wall_time_fires_at_the_first_instant_after_the_gap() -> None:
    schedule = Cron("30 2 * * *", "America/New_York")
    fire = next_after(schedule, z("2026-03-07T12:00:00Z"))
    assert fire == z("2026-03-08T07:00:00Z")
    local = fire.astimezone(ZoneInfo("America/New_York"))
    assert (local.hour, local.minute, local.utcoffset()) == (3, 0, timedelta(hours=-4))
    # from just before the gap, and from inside its first instant
    assert at_or_after(schedule, z("2026-03-08T06:59:59.999Z")) == z("2026-03-08T07:00:00Z")
    assert at_or_after(schedule, z("2026-03-08T07:00:00Z")) == z("2026-03-08T07:00:00Z")
    assert next_after(schedule, z("2026-03-08T07:00:00Z")) == z("2026-03-09T06:30:00Z")


def test_several_skipped_wall_times_fire_once_after_the_gap() -> None:
    schedule = Cron("*/15 * * * *", "America/New_York")
    fires = upcoming(schedule, z("2026-03-08T06:40:00Z"), 4)  # 01:40 EST
    assert fires == [
        z("2026-03-08T06:45:00Z"),  # 01:45 EST
        z("2026-03-08T07:00:00Z"),  # 02:00, 02:15, 02:30, 02:45 skipped -> 03:00 EDT, once
        z("2026-03-08T07:15:00Z"),  # 03:15 EDT
        z("2026-03-08T07:30:00Z"),
    ]


def test_ambiguous_wall_time_fires_once_at_its_first_occurrence() -> None:
    schedule = Cron("30 1 * * *", "America/New_York")
    fires = upcoming(schedule, z("2026-10-31T12:00:00Z"), 2)
    assert fires == [z("2026-11-01T05:30:00Z"), z("2026-11-02T06:30:00Z")]
    assert z("2026-11-01T06:30:00Z") not in fires  # 01:30 EST, the second 01:30
    # Asked from inside the repeated hour, after the first 01:30: no second fire.
    assert at_or_after(schedule, z("2026-11-01T05:30:00.001Z")) == z("2026-11-02T06:30:00Z")
    assert at_or_after(schedule, z("2026-11-01T06:00:00Z")) == z("2026-11-02T06:30:00Z")
    assert at_or_after(schedule, z("2026-11-01T06:30:00Z")) == z("2026-11-02T06:30:00Z")


def test_the_repeated_hour_does_not_fire_an_hourly_cron_twice() -> None:
    schedule = Cron("0 * * * *", "America/New_York")
    fires = upcoming(schedule, z("2026-11-01T03:30:00Z"), 4)
    assert fires == [
        z("2026-11-01T04:00:00Z"),  # 00:00 EDT
        z("2026-11-01T05:00:00Z"),  # 01:00 EDT (first 01:00)
        z("2026-11-01T07:00:00Z"),  # 02:00 EST; the second 01:00 (06:00Z) does not fire
        z("2026-11-01T08:00:00Z"),
    ]


def test_seconds_cron_in_a_repeated_hour_fires_each_wall_second_once() -> None:
    schedule = Cron("0 */30 * * * *", "America/New_York")
    assert upcoming(schedule, z("2026-11-01T05:15:00Z"), 3) == [
        z("2026-11-01T05:30:00Z"),  # 01:30 EDT
        z("2026-11-01T07:00:00Z"),  # 02:00 EST
        z("2026-11-01T07:30:00Z"),
    ]


def test_skipped_seconds_cron_fires_on_the_whole_minute_after_the_gap() -> None:
    schedule = Cron("15 30 2 * * *", "Europe/Berlin")  # 02:30:15 daily
    assert next_after(schedule, z("2026-03-28T12:00:00Z")) == z("2026-03-29T01:00:00Z")  # 03:00:00 CEST


def test_cron_start_and_end_bound_the_fires() -> None:
    schedule = Cron("0 12 * * *", "UTC", start=z("2026-05-03T12:00:00Z"), end=z("2026-05-05T12:00:00Z"))
    assert upcoming(schedule, z("2026-01-01T00:00:00Z"), 10) == [
        z("2026-05-03T12:00:00Z"),  # start itself, when it matches
        z("2026-05-04T12:00:00Z"),
        z("2026-05-05T12:00:00Z"),  # end itself is included
    ]
    assert first_fire(schedule, z("2026-01-01T00:00:00Z")) == z("2026-05-03T12:00:00Z")
    assert first_fire(schedule, z("2026-05-05T12:00:00.001Z")) is None
    late_start = Cron("0 12 * * *", "UTC", start=z("2026-05-03T12:00:00.001Z"))
    assert first_fire(late_start, z("2026-01-01T00:00:00Z")) == z("2026-05-04T12:00:00Z")


def test_cron_whose_date_never_exists_has_no_fire() -> None:
    assert at_or_after(Cron("0 0 30 2 *"), z("2026-01-01T00:00:00Z")) is None
    assert upcoming(Cron("0 0 31 4 *", "Europe/Berlin"), z("2026-01-01T00:00:00Z"), 3) == []
    assert next_after(Cron("0 0 29 2 *"), z("2026-01-01T00:00:00Z")) == z("2028-02-29T00:00:00Z")


def test_cron_fires_are_utc_at_millisecond_precision() -> None:
    fire = next_after(Cron("0 8 * * *", "Asia/Shanghai"), z("2026-01-01T00:00:00.123Z"))
    assert fire is not None
    assert fire.tzinfo is not None
    assert fire.utcoffset() == timedelta(0)
    assert iso(fire) == "2026-01-02T00:00:00.000Z"


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "* * * *",
        "* * * * * * *",
        "@daily",
        "61 * * * *",
        "* 24 * * *",
        "* * 0 * *",
        "* * 32 * *",
        "* * * 13 *",
        "* * * * 8",
        "*/0 * * * *",
        "a b c d e",
        ", * * * *",
        "60 * * * * *",
        "* 60 * * * *",
        "H * * * *",
    ],
)
def test_invalid_cron_is_a_validation_error_naming_the_field(expression: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        check_cron(expression)
    error = caught.value
    assert error.code == "validation_error"
    assert error.status == 400
    assert error.details[0].field == "schedule.cron"
    assert error.details[0].message
    assert str(error).startswith("schedule.cron: ")


def test_check_cron_names_the_field_it_is_given() -> None:
    with pytest.raises(ValidationFailed) as caught:
        check_cron("not a cron", field="tasks[3].schedule.cron")
    assert caught.value.details[0].field == "tasks[3].schedule.cron"


@pytest.mark.parametrize(
    "expression",
    ["0 8 * * 1-5", "*/15 * * * * *", "0 0 * * 7", "0 0 1,15 * mon-fri", "0 30 2 * * *", "0 0 L * *"],
)
def test_valid_cron_passes(expression: str) -> None:
    check_cron(expression)


@pytest.mark.parametrize("name", ["Mars/Olympus", "", "utc", "UTC ", "../etc/passwd", "/etc/localtime"])
def test_unknown_zone_is_a_validation_error_naming_the_field(name: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        zone_of(name)
    assert caught.value.details[0].field == "schedule.timezone"
    with pytest.raises(ValidationFailed) as caught_custom:
        zone_of(name, field="schedule.repeat.timezone")
    assert caught_custom.value.details[0].field == "schedule.repeat.timezone"


@pytest.mark.parametrize("name", [*DST_ZONES, "UTC"])
def test_known_zones(name: str) -> None:
    assert zone_of(name) == ZoneInfo(name)


def test_cron_in_an_unknown_zone_fails_validation_when_evaluated() -> None:
    with pytest.raises(ValidationFailed) as caught:
        next_after(Cron("0 8 * * *", "Nowhere/Special"), z("2026-01-01T00:00:00Z"))
    assert caught.value.details[0].field == "schedule.timezone"


# --------------------------------------------------------------------------------------------
# every_seconds
# --------------------------------------------------------------------------------------------

periods_ms = st.one_of(st.integers(1000, 600_000), st.integers(1000, MAX_EVERY_SECONDS * 1000))
instants = st.integers(RANGE_START_MS, RANGE_END_MS).map(from_ms)


@st.composite
def everies(draw: st.DrawFn) -> Every:
    period_ms = draw(periods_ms)
    anchor = draw(instants)
    start = draw(st.none() | st.integers(-1000 * period_ms, 1000 * period_ms).map(lambda d: anchor + ONE_MS * d))
    first = start if start is not None else anchor + ONE_MS * period_ms
    end = draw(st.none() | st.integers(-10 * period_ms, 1000 * period_ms).map(lambda d: first + ONE_MS * d))
    return Every(period_ms / 1000, start=start, end=end, anchor=anchor)


def brute_force_every(every: Every, instant: datetime) -> datetime | None:
    occurrence = every.first
    period = timedelta(milliseconds=every.period_ms)
    if occurrence < instant:  # jump close, then walk: the walk is the check
        occurrence += period * max(0, (instant - occurrence) // period - 3)
    while occurrence < instant:
        occurrence += period
    if every.end is not None and occurrence > every.end:
        return None
    return occurrence


@FAST_SETTINGS
@given(every=everies(), offset_periods=st.floats(-5, 1200), jitter_ms=st.integers(-2, 2))
def test_every_at_or_after_matches_brute_force(every: Every, offset_periods: float, jitter_ms: int) -> None:
    instant = every.first + ONE_MS * (round(offset_periods * every.period_ms) + jitter_ms)
    found = at_or_after(every, instant)
    assert found == brute_force_every(every, instant)
    if found is not None:
        assert found >= instant
        assert found >= every.first
        assert every.end is None or found <= every.end
        assert (to_ms(found) - to_ms(every.first)) % every.period_ms == 0
        assert found - instant < timedelta(milliseconds=every.period_ms) or found == every.first


@FAST_SETTINGS
@given(every=everies(), offset_periods=st.floats(-5, 1200))
def test_every_fires_increase_by_one_period_within_start_and_end(every: Every, offset_periods: float) -> None:
    after = every.first + ONE_MS * round(offset_periods * every.period_ms)
    fires = upcoming(every, after, 10)
    assert all(fire > after for fire in fires)
    assert all(later - earlier == ONE_MS * every.period_ms for earlier, later in pairwise(fires))
    assert all(fire >= every.first for fire in fires)
    assert every.start is None or all(fire >= every.start for fire in fires)
    assert every.end is None or all(fire <= every.end for fire in fires)
    if every.end is None:
        assert len(fires) == 10


def test_every_without_start_first_fires_one_period_after_its_anchor() -> None:
    registered = z("2026-01-01T10:00:00.500Z")
    schedule = anchored(Every(90), registered)
    assert first_fire(schedule, registered) == z("2026-01-01T10:01:30.500Z")
    assert upcoming(schedule, registered, 3) == [
        z("2026-01-01T10:01:30.500Z"),
        z("2026-01-01T10:03:00.500Z"),
        z("2026-01-01T10:04:30.500Z"),
    ]


def test_every_with_start_counts_from_start() -> None:
    start = z("2026-01-01T00:00:00Z")
    schedule = anchored(Every(3600, start=start), z("2026-01-01T05:20:00Z"))
    assert first_fire(schedule, z("2026-01-01T05:20:00Z")) == z("2026-01-01T06:00:00Z")
    assert first_fire(schedule, z("2025-12-31T00:00:00Z")) == start
    assert at_or_after(schedule, z("2026-01-01T06:00:00Z")) == z("2026-01-01T06:00:00Z")


def test_every_with_end_stops() -> None:
    schedule = Every(1.5, start=z("2026-01-01T00:00:00Z"), end=z("2026-01-01T00:00:04.500Z"))
    assert upcoming(schedule, z("2025-01-01T00:00:00Z"), 10) == [
        z("2026-01-01T00:00:00Z"),
        z("2026-01-01T00:00:01.500Z"),
        z("2026-01-01T00:00:03Z"),
        z("2026-01-01T00:00:04.500Z"),
    ]


def test_every_without_start_needs_an_anchor() -> None:
    with pytest.raises(ValueError, match="registration"):
        first_fire(Every(60), z("2026-01-01T00:00:00Z"))


# --------------------------------------------------------------------------------------------
# One-shot schedules, anchoring, the generic contract
# --------------------------------------------------------------------------------------------


def test_first_fire_of_a_past_at_is_now() -> None:
    now = z("2026-01-01T12:00:00Z")
    assert first_fire(At(z("2026-01-01T11:00:00Z")), now) == now
    assert first_fire(At(now), now) == now
    assert first_fire(At(z("2026-01-01T12:00:00.001Z")), now) == z("2026-01-01T12:00:00.001Z")


def test_at_fires_once() -> None:
    at = z("2026-11-22T10:00:00.250Z")
    schedule = At(at)
    assert at_or_after(schedule, at) == at
    assert at_or_after(schedule, at - ONE_MS) == at
    assert at_or_after(schedule, at + ONE_MS) is None
    assert next_after(schedule, at) is None
    assert upcoming(schedule, at - timedelta(days=1), 5) == [at]
    assert not is_recurring(schedule)


def test_after_needs_an_anchor() -> None:
    with pytest.raises(ValueError, match="anchor"):
        first_fire(After(30), z("2026-01-01T00:00:00Z"))
    with pytest.raises(ValueError, match="anchor"):
        at_or_after(After(30), z("2026-01-01T00:00:00Z"))


def test_after_counts_from_its_anchor_in_milliseconds() -> None:
    registered = z("2026-01-01T00:00:00Z")
    schedule = anchored(After(1.2341), registered)
    assert schedule == After(1.2341, anchor=registered)
    assert first_fire(schedule, registered) == z("2026-01-01T00:00:01.234Z")  # to the millisecond
    assert first_fire(anchored(After(0), registered), registered) == registered
    # a late registration (the anchor is already past) fires at once
    assert first_fire(schedule, z("2026-01-02T00:00:00Z")) == z("2026-01-02T00:00:00Z")


def test_anchored_only_touches_relative_schedules_once() -> None:
    first, later = z("2026-01-01T00:00:00Z"), z("2026-06-01T00:00:00Z")
    at, cron = At(first), Cron("0 8 * * *", "Asia/Shanghai")
    assert anchored(at, later) is at
    assert anchored(cron, later) is cron
    after = anchored(After(10), first)
    assert anchored(after, later) == after
    every = anchored(Every(10), first)
    assert every == Every(10, anchor=first)
    assert anchored(every, later) == every
    assert is_recurring(every)
    assert is_recurring(cron)
    assert not is_recurring(after)


@st.composite
def schedules(draw: st.DrawFn) -> At | After | Cron | Every:
    kind = draw(st.sampled_from(["at", "after", "cron", "every"]))
    if kind == "at":
        return At(draw(instants))
    if kind == "after":
        return After(draw(st.integers(0, 10**9)) / 1000, anchor=draw(instants))
    if kind == "cron":
        case = draw(cron_cases)
        return Cron(case.expression, draw(zones))
    return draw(everies())


@settings(max_examples=80, deadline=None)
@given(schedule=schedules(), after=instants, count=st.integers(0, 6))
def test_upcoming_agrees_with_repeated_next_after(
    schedule: At | After | Cron | Every, after: datetime, count: int
) -> None:
    chained: list[datetime] = []
    cursor: datetime | None = after
    while len(chained) < count:
        cursor = next_after(schedule, cursor)
        if cursor is None:
            break
        chained.append(cursor)
    assert upcoming(schedule, after, count) == chained


@settings(max_examples=80, deadline=None)
@given(schedule=schedules(), instant=instants)
def test_at_or_after_is_the_instant_or_the_next_occurrence(
    schedule: At | After | Cron | Every, instant: datetime
) -> None:
    first = at_or_after(schedule, instant)
    following = next_after(schedule, instant)
    assert first is None or first >= instant
    assert following is None or following > instant
    if first != instant:
        assert first == following
    assert following == at_or_after(schedule, instant + ONE_MS)


@settings(max_examples=80, deadline=None)
@given(schedule=schedules(), now=instants)
def test_first_fire_is_never_before_now(schedule: At | After | Cron | Every, now: datetime) -> None:
    fire = first_fire(schedule, now)
    if isinstance(schedule, At | After):
        assert fire == max(schedule.at, now)
    else:
        assert fire == at_or_after(schedule, now)
    assert fire is None or fire >= now


# --------------------------------------------------------------------------------------------
# Instants (times.py)
# --------------------------------------------------------------------------------------------

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@FAST_SETTINGS
@given(ms=st.integers(0, to_ms(utc(9999, 1, 1))))
def test_ms_round_trip(ms: int) -> None:
    instant = from_ms(ms)
    assert instant.tzinfo is not None
    assert instant.utcoffset() == timedelta(0)
    assert to_ms(instant) == ms
    assert truncate_ms(instant) == instant
    text = iso(from_ms(ms))
    assert ISO.match(text)
    assert to_ms(datetime.fromisoformat(text)) == ms


@settings(max_examples=50, deadline=None)
@given(
    moment=st.datetimes(
        min_value=datetime(1971, 1, 1),
        max_value=datetime(2200, 1, 1),
        timezones=st.sampled_from([UTC, *(ZoneInfo(name) for name in DST_ZONES)]),
    )
)
def test_truncate_ms_floors_to_the_millisecond_and_keeps_the_instant(moment: datetime) -> None:
    truncated = truncate_ms(moment)
    assert truncated.utcoffset() == timedelta(0)
    assert truncated <= moment < truncated + ONE_MS
    assert truncated.microsecond % 1000 == 0
    assert iso(moment) == iso(truncated)
    assert to_ms(moment) == to_ms(truncated)


def test_times_examples() -> None:
    assert to_ms(z("1970-01-01T00:00:00Z")) == 0
    assert to_ms(z("2026-11-22T10:00:00.250Z")) == 1_795_341_600_250
    assert from_ms(1_795_341_600_250) == z("2026-11-22T10:00:00.250Z")
    assert iso(z("2026-11-22T10:00:00.250999Z")) == "2026-11-22T10:00:00.250Z"
    assert iso(datetime(2026, 3, 8, 3, 0, tzinfo=ZoneInfo("America/New_York"))) == "2026-03-08T07:00:00.000Z"
    assert iso(from_ms(0)) == "1970-01-01T00:00:00.000Z"
    assert to_ms(datetime(2026, 1, 1, 8, tzinfo=ZoneInfo("Asia/Shanghai"))) == to_ms(z("2026-01-01T00:00:00Z"))


def test_to_ms_refuses_naive_datetimes() -> None:
    with pytest.raises(ValueError, match="naive"):
        to_ms(datetime(2026, 1, 1))
