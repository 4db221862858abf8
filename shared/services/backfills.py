"""Backfill a recurring task's past window (docs/backfill.md): every occurrence of its schedule in
``[from, to)`` fired now, oldest first, at most ``per_second`` a second, each as a run of the task
with its own ``scheduled_for``, each at most once whoever else fires it (the task itself, another
backfill, this one's request sent again).

The request plans and writes every run at once (at most ``MAX_OCCURRENCES``): each occurrence's
run is an extra run of the task (the one-shot item a run now is) due at its place in the pace, which
the scanners stage and the trigger claims, calls, retries and dead-letters as any one-shot. Nothing
runs behind the request: the pace is in the runs' due times. The first is due past the writers'
staging window (``look_ahead + guard``), so the scanners stage every one of them and the request
sends nothing to the queues.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime

from shared.domain.backfills import (
    Backfill,
    BackfillNotFound,
    Planned,
    check_window,
    fire_times,
    item_id,
    left_out,
    occurrences,
)
from shared.domain.errors import InvalidTransition
from shared.domain.firing import Timing
from shared.domain.ids import new_run_id
from shared.domain.registration import new_task
from shared.domain.schedules import At, after_runs
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import Misfire, Page, Task, TaskSpec
from shared.domain.times import from_ms, to_ms, truncate_ms, utc_now
from shared.services.ports.backfills import BackfillStore
from shared.services.ports.tasks import TaskRepository

FIRST_AFTER_MS = 1_000
"""The first run is due this long past the writers' staging window (the scanners stage it)."""
ENDED_RUNS = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.DEAD_LETTERED, RunStatus.SKIPPED)


def _run_spec(task: Task) -> TaskSpec:
    """What a backfill's run of ``task`` fires: the task's targets, payload, retry and priority as
    they are now, and its chains (a run's end starts them, as a run now's); its dead letter
    alerts as the task's would, but it is no occurrence in a row of the task's (an item of its own)."""
    alert = replace(task.alert, after_consecutive_failures=None) if task.alert is not None else None
    return replace(task.spec, misfire=Misfire.FIRE_NOW, alert=alert, pause_after_failures=None, tags={})


@dataclass
class BackfillService:
    repository: TaskRepository
    store: BackfillStore
    bucket_shards: int
    timing: Timing = field(default_factory=Timing)
    clock: Callable[[], datetime] = utc_now
    randbytes: Callable[[int], bytes] = os.urandom

    def start(self, tenant: str, task_id: str, start: datetime, end: datetime, per_second: float) -> Backfill:
        """Plan and write the backfill of the task's occurrences in ``[start, end)``."""
        now = truncate_ms(self.clock())
        task = self.repository.get(tenant, task_id)
        if not task.recurring:
            raise InvalidTransition("a one-shot task has no schedule to backfill: it fires once (run it now instead)")
        if after_runs(task.schedule):
            raise InvalidTransition(
                "a fixed delay's occurrences are due after its runs end, at no time known ahead: "
                "it has none to backfill"
            )
        if task.status is TaskStatus.CANCELLED:
            raise InvalidTransition("a cancelled task is not backfilled: none of its runs would fire")
        if task.status is TaskStatus.PAUSED:
            raise InvalidTransition("a paused task's runs are skipped: resume it first")
        check_window(start, end, now)
        times = occurrences(task.schedule, start, end)
        fired, taken, free = self.store.fired_and_taken(task.id, to_ms(start), to_ms(end))
        current = task.run
        out = left_out(
            times,
            armed=task.due_at if task.status is TaskStatus.SCHEDULED else None,
            firing=current.scheduled_for if current is not None and current.status not in ENDED_RUNS else None,
            fired=fired,
            taken=taken,
        )
        wanted = [at for at in times if to_ms(at) not in out]
        backfill_id = new_run_id(to_ms(now), self.randbytes)
        first = to_ms(now) + self.timing.look_ahead_ms + self.timing.guard_ms + FIRST_AFTER_MS
        spec = _run_spec(task)
        runs: list[Task] = []
        plan: list[Planned] = []
        for at, fire in zip(wanted, fire_times(first, len(wanted), per_second), strict=True):
            run_id = item_id(backfill_id, to_ms(at), fire, self.bucket_shards)
            due = replace(spec, schedule=At(from_ms(fire)))
            run = new_task(due, tenant=tenant, now=now, shard=0, randbytes=self.randbytes)
            runs.append(replace(run, id=run_id, schedule=At(at), parent_id=task.id, stops_with_parent=True))
            plan.append(Planned(to_ms(at), fire, run_id))
        counts = dict(Counter(reason.value for reason in out.values()))
        backfill = Backfill(
            id=backfill_id,
            tenant=tenant,
            task_id=task.id,
            start=start,
            end=end,
            per_second=per_second,
            created_at=now,
            in_window=len(times),
            plan=tuple(plan),
            left_out=counts,
        )
        raced = self.store.start(backfill, runs, free)
        for reason in raced.values():
            counts[reason.value] = counts.get(reason.value, 0) + 1
        return replace(backfill, plan=tuple(p for p in plan if p.scheduled_ms not in raced), left_out=counts)

    def get(self, tenant: str, task_id: str, backfill_id: str) -> Backfill:
        """The backfill with its progress; another tenant's (or another task's) is not found."""
        found = self._of(tenant, task_id, backfill_id)
        return replace(found, progress=self.store.progress(found))

    def list(self, tenant: str, task_id: str, *, limit: int, cursor: str | None) -> Page[Backfill]:
        task = self.repository.get(tenant, task_id)
        return self.store.list(task.id, limit=limit, cursor=cursor)

    def cancel(self, tenant: str, task_id: str, backfill_id: str) -> Backfill:
        """Cancel it (harmless twice): its runs not fired yet never fire."""
        found = self._of(tenant, task_id, backfill_id)
        cancelled = self.store.cancel(found, to_ms(truncate_ms(self.clock())))
        return replace(cancelled, progress=self.store.progress(cancelled))

    def _of(self, tenant: str, task_id: str, backfill_id: str) -> Backfill:
        task = self.repository.get(tenant, task_id)
        found = self.store.get(task.id, backfill_id)
        if found.tenant != tenant:
            raise BackfillNotFound(f"backfill {backfill_id!r} of task {task.id} not found")
        return found
