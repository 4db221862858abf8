"""Turning a client's spec into a task: when it first fires, where it lives, what is refused."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from shared.domain import schedules as sched
from shared.domain.errors import ValidationFailed
from shared.domain.ids import new_task_id
from shared.domain.states import TaskStatus
from shared.domain.tasks import Misfire, Task, TaskSpec, spec_values
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


def first_due(schedule: sched.Schedule, misfire: Misfire, now: datetime) -> datetime:
    """The first fire of a schedule registered at ``now``, or a :class:`ValidationFailed` that says
    why it would never fire or fires too far ahead."""
    field = _field_of(schedule)
    timed = sched.base(schedule)
    if isinstance(timed, sched.At) and timed.at < now:
        if now - timed.at > sched.MAX_PAST:
            raise ValidationFailed.on(field, f"{iso(timed.at)} is more than 24 hours in the past")
        if misfire is Misfire.SKIP:
            raise ValidationFailed.on(field, "is in the past and misfire is skip: it would never fire")
    due = sched.first_fire(schedule, now)
    if due is None:
        raise ValidationFailed.on(field, "has no occurrence from now on (check start and end)")
    if due - now > sched.MAX_AHEAD:
        raise ValidationFailed.on(field, f"first fires at {iso(due)}, more than {sched.MAX_AHEAD.days} days ahead")
    return due


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
    due = first_due(schedule, misfire, now)
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
    task's ``next_fire_at``; the same checks refuse what registration refuses)."""
    schedule = sched.anchored(schedule, now)
    if after is None:
        first: datetime | None = first_due(
            schedule, Misfire.FIRE_NOW if not sched.is_recurring(schedule) else Misfire.SKIP, now
        )
    else:
        first = sched.at_or_after(schedule, after)
    if first is None:
        return []
    return [first, *sched.upcoming(schedule, first, count - 1)]
