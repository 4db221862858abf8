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

The two day fields combine as in Linux (Vixie) cron, the cron of Debian, Ubuntu and RHEL: a day
field whose text starts with ``*`` (``*``, ``*/5``) or is ``?`` leaves the day unrestricted, and
then a day must match both fields; only when both are restricted does a day match if either field
matches. So ``30 4 1,15 * 5`` fires on the 1st, the 15th and every Friday, while ``0 0 */5 * 1``
fires on the Mondays that fall on the 1st, 6th, 11th, ... of a month. A range whose two ends are
the same value (``1-1``, ``mon-mon``) is that one value, as in cron.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final, Literal

from croniter import CroniterBadCronError, CroniterBadDateError, CroniterError, croniter
from croniter.croniter import DAY_FIELD, DOW_FIELD

from shared.domain import scheduler_api
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


Dialect = Literal["linux", "eventbridge"]
LINUX: Final[Dialect] = "linux"
"""The native API's cron: Linux (Vixie) cron, as this module reads it."""
EVENTBRIDGE: Final[Dialect] = "eventbridge"
"""EventBridge Scheduler's cron dialect, without its ``cron(...)`` (shared/domain/scheduler_api.py)."""
DIALECTS = (LINUX, EVENTBRIDGE)


@dataclass(frozen=True)
class Cron:
    expression: str
    timezone: str = "UTC"
    start: datetime | None = None
    end: datetime | None = None
    dialect: Dialect = LINUX
    """How the expression is read: :data:`LINUX` or :data:`EVENTBRIDGE` (the service's fields,
    ``? L W #``, a year field, 1 = Sunday, and its rule for daylight-saving changes)."""


Counted = Literal["start", "end"]
FROM_START: Final[Counted] = "start"
"""A fixed rate: each occurrence is the period after the one before was due (its grid)."""
FROM_END: Final[Counted] = "end"
"""A fixed delay: each occurrence is the period after the run of the one before ended."""


@dataclass(frozen=True)
class Every:
    seconds: float
    start: datetime | None = None
    end: datetime | None = None
    anchor: datetime | None = None
    """The registration time: without ``start`` the first occurrence is one period after it."""
    after: Counted = FROM_START
    """What the period counts from: the occurrence before's due time (:data:`FROM_START`, a
    fixed rate, on a grid) or the end of its run (:data:`FROM_END`, a fixed delay: only the
    first occurrence is a time of the schedule's own; each later one is known when the run
    before it ends, whatever its final state, so two never run at once)."""

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


@dataclass(frozen=True)
class Flexible:
    """A schedule whose every occurrence fires at a moment drawn in a window after it (the
    EventBridge Scheduler API's ``FlexibleTimeWindow``): occurrence ``n`` of ``inner`` fires at
    ``n`` plus whole seconds drawn from a hash of ``seed`` and ``n``, fewer than ``window_s`` and
    fewer than the seconds to the next occurrence of ``inner``. Drawn from a hash, the moment is
    the same whoever computes it (a scanner, a re-arm, a preview); kept before the next
    occurrence, the drawn moments keep the occurrences' order, so a task's occurrences still come
    one after another and none is passed over."""

    inner: At | After | Cron | Every | Repeat
    window_s: int
    seed: str


Schedule = At | After | Cron | Every | Repeat | Flexible


def base(schedule: Schedule) -> At | After | Cron | Every | Repeat:
    """The schedule without its flexible window (the occurrences the window is drawn after)."""
    return schedule.inner if isinstance(schedule, Flexible) else schedule


def is_recurring(schedule: Schedule) -> bool:
    return isinstance(base(schedule), Cron | Every | Repeat)


def after_runs(schedule: Schedule) -> bool:
    """Whether the schedule's later times depend on its runs (a fixed delay, ``after: end``):
    nothing but its first time can be listed ahead."""
    inner = base(schedule)
    return isinstance(inner, Every) and inner.after == FROM_END


def after_run_ended(schedule: Schedule, ended: datetime) -> datetime | None:
    """A fixed delay's next occurrence once the run before it ended at ``ended``: the period
    later, or None past the schedule's ``end``."""
    inner = base(schedule)
    assert isinstance(inner, Every), "only a fixed delay counts from a run's end"
    assert inner.after == FROM_END, "only a fixed delay counts from a run's end"
    following = ended + timedelta(milliseconds=inner.period_ms)
    return None if inner.end is not None and following > inner.end else following


def anchored(schedule: Schedule, anchor: datetime) -> Schedule:
    """The schedule with relative times (``after_seconds``, ``every_seconds`` without start, a
    calendar rule without start) counted from ``anchor``, the instant the schedule was
    registered or replaced."""
    if isinstance(schedule, Flexible):
        return replace(schedule, inner=anchored(schedule.inner, anchor))  # type: ignore[arg-type]
    if isinstance(schedule, After | Every) and schedule.anchor is None:
        return replace(schedule, anchor=anchor)
    if isinstance(schedule, Repeat) and schedule.start is None:
        return replace(schedule, start=anchor)
    return schedule


CRON_PATTERN = r"^[ \t]*[!-~]+([ \t]+[!-~]+){4,5}[ \t]*$"
"""5 or 6 fields of printable ASCII separated by spaces or tabs (the API's schema says the same:
Python's ``str.split`` and JSON Schema's ``\\s`` disagree on which characters are spaces)."""


_CRON_ERRORS = (CroniterBadCronError, CroniterError, ValueError, KeyError)
_FIELD_NAMES = ("minute", "hour", "day of month", "month", "day of week")
_YEARS = re.compile(r"^(\*|[0-9]{4}(-[0-9]{4})?(/[0-9]+)?)(,[0-9]{4}(-[0-9]{4})?(/[0-9]+)?)*$")
"""A year field as EventBridge Scheduler and Quartz write it: ``*``, years, ranges and steps of them."""
_WEEKDAY_NUMBER = re.compile(r"(?<![#/0-9])([1-7])(?![0-9])")
"""A day-of-week number, not a ``#n`` or ``/n`` count."""


def check_cron(expression: str, field: str = "schedule.cron") -> None:
    """Refuse, with a message that says why in the caller's own terms, what is not a cron
    expression this API reads. An expression in the form of EventBridge Scheduler or Quartz (a
    year field last, ``?`` in a day field, weekdays counted from 1 = Sunday) is recognised as
    such, and the message gives its Linux cron form when it has one."""
    fields = expression.split()
    foreign = _foreign_cron(fields)
    if not re.fullmatch(CRON_PATTERN, expression):
        raise ValidationFailed.on(
            field,
            foreign
            or "a cron expression has 5 fields, or 6 with seconds first (sec min hour dom mon dow), "
            "of printable ASCII separated by spaces",
        )
    try:
        _cron_iterator(expression, datetime(2000, 1, 1))
    except _CRON_ERRORS as exc:
        raise ValidationFailed.on(field, foreign or _cron_problem(fields, exc)) from exc


def _readable(expression: str) -> bool:
    try:
        _cron_iterator(expression, datetime(2000, 1, 1))
    except _CRON_ERRORS:
        return False
    return True


def _cron_problem(fields: list[str], exc: Exception) -> str:
    """Which field of the caller's expression is wrong, in the caller's order (croniter's own
    message echoes its fields reordered, seconds last), and croniter's reason without its echo."""
    names = (("second",) if len(fields) == 6 else ()) + _FIELD_NAMES
    reason = re.sub(r"^\[[^\]]*\] (is|are) not acceptable[.,]?\s*", "", str(exc)).strip()
    for index, (name, text) in enumerate(zip(names, fields, strict=True)):
        probe = ["*"] * len(fields)
        probe[index] = text
        if not _readable(" ".join(probe)):
            return f"the {name} field {text!r} is not valid" + (f" ({reason})" if reason else "")
    return "the fields do not make a schedule" + (f" ({reason})" if reason else "")


def _foreign_cron(fields: list[str]) -> str | None:
    """A message for an expression written for EventBridge Scheduler (``min hour dom mon dow
    year``) or Quartz (``sec min hour dom mon dow year``), or None when it is not one."""
    if len(fields) == 6 and _YEARS.match(fields[5]) and not _readable(" ".join(fields)):
        kind, head, days = "an EventBridge Scheduler", [], fields[:5]
        order = "minutes hours day-of-month month day-of-week year"
    elif len(fields) == 7 and _YEARS.match(fields[6]):
        kind, head, days = "a Quartz", fields[:1], fields[1:6]
        order = "seconds minutes hours day-of-month month day-of-week year"
    else:
        return None
    dom = "*" if days[2] == "?" else days[2]
    dow = "*" if days[4] == "?" else _WEEKDAY_NUMBER.sub(lambda m: str(int(m[1]) - 1), days[4])
    linux = " ".join([*head, *days[:2], dom, days[3], dow])
    marked = "?" in (days[2], days[4]) or fields[-1] != "*"  # both forms want "?" in a day field
    if not marked and not _readable(linux):
        return None  # "0 61 * * * *" is a bad minute in cron's own form, not a foreign form
    message = (
        f"this reads as {kind} cron expression ({order}); Sundial reads Linux cron: "
        "5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first, "
        "weekdays numbered from 0 = Sunday, no year field"
    )
    dialect = ' or keep it and set "dialect": "eventbridge"' if kind.startswith("an EventBridge") else ""
    if not _readable(linux):
        return message + f"; it has no Linux cron form (L, W and # are not cron){dialect.replace(' or', ':', 1)}"
    years = "" if fields[-1] == "*" else f" and bound it with start and end for the years {fields[-1]}"
    return message + f": write {linux!r}{years}{dialect}"


def day_fields_ored(expression: str) -> bool:
    """Whether a day matches when either day field matches (Vixie cron's rule): only when neither
    the day-of-month nor the day-of-week text starts with ``*`` or is ``?``. Otherwise a day
    must match both (a field starting with ``*`` is unrestricted for this choice, even ``*/5``)."""
    fields = expression.split()
    return not (_unrestricted(fields[-3]) or _unrestricted(fields[-1]))


def _unrestricted(day_field: str) -> bool:
    return day_field.startswith(("*", "?"))


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_NAMES = {3: {name: number for number, name in enumerate(_MONTHS, 1)}, 4: dict(zip(_WEEKDAYS, range(7), strict=True))}
"""Month and day-of-week names by field index (seconds, if any, not counted)."""
_RANGE = re.compile(r"^([0-9]+|[a-z]+)-([0-9]+|[a-z]+)(?:/[0-9]+)?$", re.IGNORECASE)


def _one_value_ranges(text: str, names: dict[str, int]) -> str:
    """The field with each range whose ends are one value (``5-5``, ``mon-mon/2``) written as
    that value: cron reads it so, croniter as the whole field."""

    def value(end: str) -> int | str:
        return int(end) if end.isdigit() else names.get(end.lower(), end.lower())

    def one(item: str) -> str:
        match = _RANGE.match(item)
        return match[1] if match and value(match[1]) == value(match[2]) else item

    return ",".join(one(item) for item in text.split(","))


def _cron_iterator(expression: str, start: datetime) -> croniter:
    """A croniter over ``expression`` from the naive wall time ``start``, reading the
    expression as Vixie cron does (see the module's description)."""
    fields = expression.split()
    seconds = [_one_value_ranges(text, {}) for text in fields[:-5]]
    rest = [_one_value_ranges(text, _NAMES.get(index, {})) for index, text in enumerate(fields[-5:])]
    ored = day_fields_ored(expression)
    iterator = croniter(" ".join(seconds + rest), start, day_or=ored, second_at_beginning=bool(seconds))
    if ored and ["*"] in (iterator.expanded[DAY_FIELD], iterator.expanded[DOW_FIELD]):
        # One restricted day field covers every day (``1-31``, ``0-6``) and croniter, seeing a
        # ``*`` further on in the other field, read it as ``*`` and would AND the two. Ored with
        # a field that covers every day, any day matches.
        rest[2] = rest[4] = "*"
        iterator = croniter(" ".join(seconds + rest), start, day_or=False, second_at_beginning=bool(seconds))
    return iterator


def check_dialect_cron(expression: str, dialect: Dialect, field: str = "schedule.cron") -> None:
    """:func:`check_cron` for the dialect the expression is written in."""
    if dialect == EVENTBRIDGE:
        _eventbridge_cron(expression, field)
    else:
        check_cron(expression, field)


@functools.lru_cache(maxsize=1024)
def _parsed_eventbridge(expression: str) -> scheduler_api.CronExpression:
    parsed = scheduler_api.parse(f"cron({expression})")
    assert isinstance(parsed, scheduler_api.CronExpression)  # "cron(" gives a cron
    return parsed


def _eventbridge_cron(expression: str, field: str) -> scheduler_api.CronExpression:
    try:
        return _parsed_eventbridge(expression)
    except ValidationFailed as exc:
        message = exc.details[0].message if exc.details else exc.message
        raise ValidationFailed.on(field, message) from exc


def _cron_at_or_after(cron: Cron, lower: datetime) -> datetime | None:
    if cron.start is not None and cron.start > lower:
        lower = cron.start
    if cron.dialect == EVENTBRIDGE:
        return scheduler_api.cron_at_or_after(
            _eventbridge_cron(cron.expression, "schedule.cron"), cron.timezone, lower, cron.end
        )
    zone = zone_of(cron.timezone)
    # Start from the wall time one second before `lower` (stepping back on the UTC line, not the
    # wall clock): when `lower` is the first instant after a spring-forward gap, the skipped wall
    # times that fire there lie between the two.
    naive = (lower.replace(microsecond=0) - timedelta(seconds=1)).astimezone(zone).replace(tzinfo=None)
    iterator = _cron_iterator(cron.expression, naive)
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
    if every.after == FROM_END:
        # A fixed delay has no grid: its first time, or, once that is past, any instant (the
        # next one is its run's end plus the period: :func:`after_run_ended`).
        candidate = max(every.first, lower)
        return None if every.end is not None and candidate > every.end else candidate
    first_ms, lower_ms, period = to_ms(every.first), to_ms(lower), every.period_ms
    steps = max(0, -(-(lower_ms - first_ms) // period))
    candidate = from_ms(first_ms + steps * period)
    if every.end is not None and candidate > every.end:
        return None
    return candidate


def _drawn(flexible: Flexible, nominal: datetime) -> datetime:
    """When the occurrence of ``flexible.inner`` at ``nominal`` fires: whole seconds after it,
    drawn from the seed and the occurrence, before the window ends and before the next one."""
    span_s = flexible.window_s
    following = next_after(flexible.inner, nominal)
    if following is not None:
        span_s = min(span_s, int((following - nominal).total_seconds()))
    if span_s <= 1:
        return nominal
    digest = hashlib.sha256(f"{flexible.seed}|{to_ms(nominal)}".encode()).digest()
    return nominal + timedelta(seconds=int.from_bytes(digest[:8], "big") % span_s)


def _latest_at_or_before(schedule: Schedule, instant: datetime, horizon: timedelta) -> datetime | None:
    """The last occurrence of ``schedule`` in ``(instant - horizon, instant]``, or None: looked
    for in ever wider spans back from ``instant`` (schedules answer only forward)."""
    span = timedelta(seconds=1)
    while True:
        lower = instant - min(span, horizon) + ONE_MS
        found = at_or_after(schedule, lower)
        if found is not None and found <= instant:
            while (following := next_after(schedule, found)) is not None and following <= instant:
                found = following
            return found
        if span >= horizon:
            return None
        span *= 2


def nominal(schedule: Schedule, fired: datetime) -> datetime:
    """The occurrence a fire at ``fired`` was drawn after (itself, without a flexible window)."""
    if not isinstance(schedule, Flexible):
        return fired
    return _latest_at_or_before(schedule.inner, fired, timedelta(seconds=schedule.window_s)) or fired


def scheduled_time(schedule: Schedule, fired: datetime) -> datetime:
    """The time the schedule was set for, of the occurrence a fire at ``fired`` is: the
    occurrence's :func:`nominal` time, but a one-shot's own time when it fired after it (an
    ``at`` already past when it was set fires at once, and was set for the time written). What
    an EventBridge-made schedule's ``<aws.scheduler.scheduled-time>`` says: "the time you
    specified for the schedule to invoke its target" ("Adding context attributes",
    https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html)."""
    inner = base(schedule)
    if isinstance(inner, At) and inner.at <= fired:
        return inner.at
    return nominal(schedule, fired)


def _flexible_at_or_after(flexible: Flexible, instant: datetime) -> datetime | None:
    # Drawn moments keep the order of their occurrences: the first at or after `instant` is the
    # drawn one of the last occurrence before it (when its moment has not passed), or else the
    # drawn one of the first occurrence from `instant` on.
    inner, window = flexible.inner, timedelta(seconds=flexible.window_s)
    latest = _latest_at_or_before(inner, instant, window)
    if latest is not None and (drawn := _drawn(flexible, latest)) >= instant:
        return drawn
    following = at_or_after(inner, instant) if latest is None else next_after(inner, latest)
    return _drawn(flexible, following) if following is not None else None


def at_or_after(schedule: Schedule, instant: datetime) -> datetime | None:
    """The first occurrence of ``schedule`` at or after ``instant``; ``None`` if there is none."""
    if isinstance(schedule, Flexible):
        return _flexible_at_or_after(schedule, instant)
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
    if isinstance(schedule, Flexible) and isinstance(schedule.inner, At | After):
        return max(_drawn(schedule, schedule.inner.at), now)
    return at_or_after(schedule, now)


def upcoming(schedule: Schedule, after: datetime, count: int) -> list[datetime]:
    """Up to ``count`` occurrences strictly after ``after`` (none of a fixed delay's: they
    depend on its runs, :func:`after_runs`)."""
    times: list[datetime] = []
    if after_runs(schedule):
        return times
    cursor = after
    while len(times) < count:
        following = next_after(schedule, cursor)
        if following is None:
            break
        times.append(following)
        cursor = following
    return times
