"""Schedule specs and their occurrences.

An occurrence is an instant (UTC, millisecond precision). Every schedule answers one question,
:func:`at_or_after`: the first occurrence at or after an instant, or ``None`` once it has no
more. Everything else (the first fire, the next fire after a run) is built on it.

Cron expressions are evaluated on the wall clock of the task's time zone and turned into
instants with these rules, so that a daily "30 2 * * *" neither vanishes nor doubles when the
clocks change:

* a wall time that does not exist (the hour skipped when clocks go forward) fires at the first
  instant after the gap (e.g. 03:00 new time);
* a wall time that happens twice (the hour repeated when clocks go back) fires once, at its
  first occurrence.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from croniter import CroniterBadCronError, CroniterBadDateError, CroniterError, croniter

from shared.domain.calendars import Repeat, repeat_at_or_after
from shared.domain.errors import ValidationFailed
from shared.domain.times import from_ms, to_ms
from shared.domain.wallclock import localize as _localize
from shared.domain.wallclock import zone_of

ONE_MS = timedelta(milliseconds=1)
MIN_EVERY_SECONDS = 1
MAX_EVERY_SECONDS = 366 * 24 * 3600
MAX_AHEAD = timedelta(days=366)
"""One-shot tasks and the first fire of any schedule lie at most this far ahead."""
MAX_PAST = timedelta(days=1)
"""A one-shot ``at`` up to this far in the past fires at once; further back is rejected."""


@dataclass(frozen=True)
class At:
    at: datetime


@dataclass(frozen=True)
class After:
    seconds: float
    anchor: datetime | None = None
    """The registration time the delay counts from (set by :func:`anchored`)."""

    @property
    def at(self) -> datetime:
        if self.anchor is None:
            raise ValueError("an after_seconds schedule counts from its registration: anchor it first")
        return self.anchor + timedelta(milliseconds=round(self.seconds * 1000))


@dataclass(frozen=True)
class Cron:
    expression: str
    timezone: str = "UTC"
    start: datetime | None = None
    end: datetime | None = None

    @property
    def has_seconds(self) -> bool:
        return len(self.expression.split()) == 6


@dataclass(frozen=True)
class Every:
    seconds: float
    start: datetime | None = None
    end: datetime | None = None
    anchor: datetime | None = None
    """The registration time: without ``start`` the first occurrence is one period after it."""

    @property
    def period_ms(self) -> int:
        return round(self.seconds * 1000)

    @property
    def first(self) -> datetime:
        if self.start is not None:
            return self.start
        if self.anchor is None:
            raise ValueError("an every_seconds schedule without start counts from its registration")
        return self.anchor + timedelta(milliseconds=self.period_ms)


Schedule = At | After | Cron | Every | Repeat


def is_recurring(schedule: Schedule) -> bool:
    return isinstance(schedule, Cron | Every | Repeat)


def anchored(schedule: Schedule, anchor: datetime) -> Schedule:
    """The schedule with relative times (``after_seconds``, ``every_seconds`` without start, a
    calendar rule without start) counted from ``anchor``, the instant the schedule was
    registered or replaced."""
    if isinstance(schedule, After | Every) and schedule.anchor is None:
        return replace(schedule, anchor=anchor)
    if isinstance(schedule, Repeat) and schedule.start is None:
        return replace(schedule, start=anchor)
    return schedule


def check_cron(expression: str, field: str = "schedule.cron") -> None:
    fields = expression.split()
    if len(fields) not in (5, 6):
        raise ValidationFailed.on(
            field, "a cron expression has 5 fields, or 6 with seconds first (sec min hour dom mon dow)"
        )
    try:
        croniter(expression, datetime(2000, 1, 1), second_at_beginning=len(fields) == 6)
    except (CroniterBadCronError, CroniterError, ValueError, KeyError) as exc:
        raise ValidationFailed.on(field, f"invalid cron expression: {exc}") from exc


def _cron_at_or_after(cron: Cron, lower: datetime) -> datetime | None:
    zone = zone_of(cron.timezone)
    if cron.start is not None and cron.start > lower:
        lower = cron.start
    # Start from the wall time one second before `lower` (stepping back on the UTC line, not the
    # wall clock): when `lower` is the first instant after a spring-forward gap, the skipped wall
    # times that fire there lie between the two.
    naive = (lower.replace(microsecond=0) - timedelta(seconds=1)).astimezone(zone).replace(tzinfo=None)
    iterator = croniter(cron.expression, naive, second_at_beginning=cron.has_seconds)
    previous_naive = naive
    for _ in range(10_000):
        try:
            candidate_naive = iterator.get_next(datetime)
        except CroniterBadDateError:
            return None
        if candidate_naive <= previous_naive:  # pragma: no cover - croniter always advances
            raise ValueError("cron iteration did not advance")
        previous_naive = candidate_naive
        instant = _localize(candidate_naive, zone)
        if cron.end is not None and instant > cron.end:
            return None
        if instant >= lower:
            return instant
    return None  # pragma: no cover - 10,000 wall times never reach `lower` only for broken zones


def _every_at_or_after(every: Every, lower: datetime) -> datetime | None:
    first_ms, lower_ms, period = to_ms(every.first), to_ms(lower), every.period_ms
    steps = max(0, -(-(lower_ms - first_ms) // period))
    candidate = from_ms(first_ms + steps * period)
    if every.end is not None and candidate > every.end:
        return None
    return candidate


def at_or_after(schedule: Schedule, instant: datetime) -> datetime | None:
    """The first occurrence of ``schedule`` at or after ``instant``; ``None`` if there is none."""
    if isinstance(schedule, At | After):
        return schedule.at if schedule.at >= instant else None
    if isinstance(schedule, Cron):
        return _cron_at_or_after(schedule, instant)
    if isinstance(schedule, Repeat):
        return repeat_at_or_after(schedule, instant)
    return _every_at_or_after(schedule, instant)


def next_after(schedule: Schedule, instant: datetime) -> datetime | None:
    """The first occurrence strictly after ``instant`` (instants have millisecond precision)."""
    return at_or_after(schedule, instant + ONE_MS)


def first_fire(schedule: Schedule, now: datetime) -> datetime | None:
    """When a schedule registered at ``now`` fires first.

    A one-shot time already past fires at once (``now``); callers decide whether that is allowed.
    """
    if isinstance(schedule, At | After):
        return max(schedule.at, now)
    return at_or_after(schedule, now)


def upcoming(schedule: Schedule, after: datetime, count: int) -> list[datetime]:
    """Up to ``count`` occurrences strictly after ``after``."""
    times: list[datetime] = []
    cursor = after
    while len(times) < count:
        following = next_after(schedule, cursor)
        if following is None:
            break
        times.append(following)
        cursor = following
    return times
