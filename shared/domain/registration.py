"""Turning a client's spec into a task: when it first fires, where it lives, what is refused."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.domain import schedules as sched
from shared.domain.errors import ValidationFailed
from shared.domain.ids import new_task_id
from shared.domain.states import TaskStatus
from shared.domain.tasks import EventBridgeSchedule, Misfire, Task, TaskSpec, spec_values
from shared.domain.times import iso, to_ms


def _field_of(schedule: sched.Schedule) -> str:
    schedule = sched.base(schedule)
    if isinstance(schedule, sched.At):
        return "schedule.at"
    if isinstance(schedule, sched.After):
        return "schedule.after_seconds"
    if isinstance(schedule, sched.Cron):
        return "schedule.cron"
    if isinstance(schedule, sched.Repeat):
        return "schedule.repeat"
    return "schedule.every_seconds"


def first_due(
    schedule: sched.Schedule, misfire: Misfire, now: datetime, max_past: timedelta | None = sched.MAX_PAST
) -> datetime:
    """The first fire of a schedule registered at ``now``, or a :class:`ValidationFailed` that says
    why it would never fire or fires too far ahead. ``max_past``: how far back a one-shot ``at``
    is taken (it then fires at once); None, any time back (the EventBridge Scheduler API's
    ``at()``, which the service takes however old: :func:`max_past_of`)."""
    field = _field_of(schedule)
    timed = sched.base(schedule)
    if isinstance(timed, sched.At) and timed.at < now:
        if max_past is not None and now - timed.at > max_past:
            raise ValidationFailed.on(field, f"{iso(timed.at)} is more than 24 hours in the past")
        if misfire is Misfire.SKIP:
            raise ValidationFailed.on(field, "is in the past and misfire is skip: it would never fire")
    due = sched.first_fire(schedule, now)
    if due is None:
        raise ValidationFailed.on(field, "has no occurrence from now on (check start and end)")
    if due - now > sched.MAX_AHEAD:
        raise ValidationFailed.on(field, f"first fires at {iso(due)}, more than {sched.MAX_AHEAD.days} days ahead")
    return due


def max_past_of(eventbridge: EventBridgeSchedule | None) -> timedelta | None:
    """How far back a one-shot ``at`` is taken from the API that sets it: the native API's
    :data:`~shared.domain.schedules.MAX_PAST` (24 hours); any time back from the EventBridge
    Scheduler API (``eventbridge`` given: a schedule it creates or replaces), which takes an
    ``at()`` years past as the service does (docs/eventbridge.md, section 2)."""
    return None if eventbridge is not None else sched.MAX_PAST


@dataclass(frozen=True)
class Notice:
    """Something true about what was just accepted that its writer may not expect (the answer to
    the write says it; nothing is stored)."""

    field: str
    message: str


def notices(schedule: sched.Schedule, set_at: datetime) -> tuple[Notice, ...]:
    """What to tell whoever set ``schedule`` at ``set_at``: an ``at`` already past (accepted up
    to 24 h back with misfire fire_now) fires at once, not at the time written."""
    schedule = sched.base(schedule)
    if isinstance(schedule, sched.At) and schedule.at < set_at:
        late = (set_at - schedule.at).total_seconds()
        return (
            Notice(
                "schedule.at",
                f"{iso(schedule.at)} was {late:.3f} s in the past when this schedule was set: "
                "the task fires at once (misfire fire_now)",
            ),
        )
    return ()


def new_task(
    spec: TaskSpec,
    *,
    tenant: str,
    now: datetime,
    shard: int,
    randbytes: Callable[[int], bytes] = os.urandom,
) -> Task:
    schedule = sched.anchored(spec.schedule, now)
    misfire = spec.effective_misfire()
    due = first_due(schedule, misfire, now, max_past_of(spec.eventbridge))
    return Task(
        **{**spec_values(spec), "schedule": schedule, "misfire": misfire},
        id=new_task_id(to_ms(due), shard, randbytes),
        tenant=tenant,
        status=TaskStatus.SCHEDULED,
        due_at=due,
        next_fire_at=due,
        created_at=now,
        updated_at=now,
    )


def preview(schedule: sched.Schedule, count: int, now: datetime, after: datetime | None = None) -> list[datetime]:
    """The next ``count`` occurrences of a schedule registered ``now``: from ``after`` on (at or
    after it), or else exactly as a task registered now would fire (its first time is the
    task's ``next_fire_at``; the same checks refuse what registration refuses). A fixed delay
    (``after: end``) has one: its first (:func:`~shared.domain.schedules.after_runs`)."""
    schedule = sched.anchored(schedule, now)
    if sched.after_runs(schedule):
        # A fixed delay's later times are each its run before's end plus the period: only the
        # first is known ahead (the caller says the rest depend on the runs).
        only = first_due(schedule, Misfire.SKIP, now)
        return [only] if after is None or only >= after else []
    if after is None:
        first: datetime | None = first_due(
            schedule, Misfire.FIRE_NOW if not sched.is_recurring(schedule) else Misfire.SKIP, now
        )
    else:
        first = sched.at_or_after(schedule, after)
    if first is None:
        return []
    return [first, *sched.upcoming(schedule, first, count - 1)]
