"""Use cases of the task API: the only place the API handler calls into."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol

from shared.domain.buckets import choose_shard
from shared.domain.errors import ConcurrentUpdate
from shared.domain.firing import Staged, Timing, resume_due, staged_for, writer_stages
from shared.domain.registration import new_task
from shared.domain.states import TaskStatus, check_task_transition
from shared.domain.tasks import Page, Run, Task, TaskSpec
from shared.domain.times import from_ms, to_ms, truncate_ms
from shared.store.repository import TaskRepository

CHANGE_ATTEMPTS = 5


def utc_now() -> datetime:
    return datetime.now(UTC)


class Stager(Protocol):
    def stage(self, occurrences: Sequence[Staged], now_ms: int) -> None: ...


@dataclass
class TaskService:
    repository: TaskRepository
    bucket_shards: int
    retention: timedelta
    stager: Stager | None = None
    """Where a task due before the scanners' next window is staged by its writer."""
    timing: Timing = field(default_factory=Timing)
    clock: Callable[[], datetime] = utc_now
    randbytes: Callable[[int], bytes] = os.urandom

    def _now(self) -> datetime:
        return truncate_ms(self.clock())

    def register(self, tenant: str, spec: TaskSpec) -> Task:
        shard = choose_shard(secrets.randbits(32), self.bucket_shards)
        now = self._now()
        task = new_task(spec, tenant=tenant, now=now, shard=shard, randbytes=self.randbytes)
        return self.repository.create(task, staged=self._stage(task, now))

    def get(self, tenant: str, task_id: str) -> Task:
        return self.repository.get(tenant, task_id)

    def list(self, tenant: str, *, status: TaskStatus | None, limit: int, cursor: str | None) -> Page[Task]:
        return self.repository.list(tenant, status=status, limit=limit, cursor=cursor)

    def runs(self, tenant: str, task_id: str, *, limit: int, cursor: str | None) -> Page[Run]:
        task = self.repository.get(tenant, task_id)
        return self.repository.runs(task, limit=limit, cursor=cursor)

    def _change(self, tenant: str, task_id: str, change: Callable[[Task, datetime], Task | None]) -> Task:
        """Read, change, write conditionally on the version read; the pipeline writes the same
        item (claims, re-arms), so a lost race is read again and re-applied, a few times."""
        attempt = 1
        while True:
            task = self.repository.get(tenant, task_id)
            try:
                return change(task, self._now()) or task
            except ConcurrentUpdate:
                if attempt == CHANGE_ATTEMPTS:
                    raise
                attempt += 1

    def pause(self, tenant: str, task_id: str) -> Task:
        """Nothing fires while paused: a staged occurrence finds the task paused and is dropped."""

        def pause(task: Task, now: datetime) -> Task | None:
            if task.status is TaskStatus.PAUSED:
                return None
            check_task_transition(task.status, TaskStatus.PAUSED)
            return self.repository.update(replace(task, status=TaskStatus.PAUSED, updated_at=now))

        return self._change(tenant, task_id, pause)

    def resume(self, tenant: str, task_id: str) -> Task:
        """Arm the task again, following its misfire policy for what it missed while paused."""

        def resume(task: Task, now: datetime) -> Task | None:
            if task.status is TaskStatus.SCHEDULED:
                return None
            check_task_transition(task.status, TaskStatus.SCHEDULED)
            due = resume_due(task.schedule, to_ms(task.due_at), task.misfire, to_ms(now))
            if due is None:
                done = replace(
                    task,
                    status=TaskStatus.COMPLETED,
                    next_fire_at=None,
                    updated_at=now,
                    expires_at=now + self.retention,
                )
                return self.repository.update(done)
            resumed = replace(
                task, status=TaskStatus.SCHEDULED, due_at=from_ms(due), next_fire_at=from_ms(due), updated_at=now
            )
            return self.repository.update(resumed, staged=self._stage(resumed, now))

        return self._change(tenant, task_id, resume)

    def _stage(self, task: Task, now: datetime) -> bool:
        """Stage the task's armed occurrence now if the scanners may already have passed it."""
        due_ms = to_ms(task.due_at)
        if self.stager is None or not writer_stages(due_ms, to_ms(now), self.timing):
            return False
        # The message goes first: if the write then fails, it finds no matching task and is dropped.
        self.stager.stage([staged_for(task.id, due_ms, one_shot=not task.recurring)], to_ms(now))
        return True

    def cancel(self, tenant: str, task_id: str) -> Task:
        """Cancel a task so that none of its occurrences fires; cancelling twice is harmless."""

        def cancel(task: Task, now: datetime) -> Task | None:
            if task.status is TaskStatus.CANCELLED:
                return None
            check_task_transition(task.status, TaskStatus.CANCELLED)
            cancelled = replace(
                task, status=TaskStatus.CANCELLED, next_fire_at=None, updated_at=now, expires_at=now + self.retention
            )
            return self.repository.update(cancelled)

        return self._change(tenant, task_id, cancel)
