"""Use cases of the task API: the only place the API handler calls into."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol

from shared.domain.buckets import choose_shard
from shared.domain.firing import Staged, Timing, staged_for, writer_stages
from shared.domain.registration import new_task
from shared.domain.states import TaskStatus, check_task_transition
from shared.domain.tasks import Page, Run, Task, TaskSpec
from shared.domain.times import to_ms, truncate_ms
from shared.store.repository import TaskRepository


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
        due_ms = to_ms(task.due_at)
        staged = self.stager is not None and writer_stages(due_ms, to_ms(now), self.timing)
        if staged and self.stager is not None:
            # The message goes first: if the write then fails, it finds no task and is dropped.
            self.stager.stage([staged_for(task.id, due_ms, one_shot=not task.recurring)], to_ms(now))
        return self.repository.create(task, staged=staged)

    def get(self, tenant: str, task_id: str) -> Task:
        return self.repository.get(tenant, task_id)

    def list(self, tenant: str, *, status: TaskStatus | None, limit: int, cursor: str | None) -> Page[Task]:
        return self.repository.list(tenant, status=status, limit=limit, cursor=cursor)

    def runs(self, tenant: str, task_id: str, *, limit: int, cursor: str | None) -> Page[Run]:
        task = self.repository.get(tenant, task_id)
        return self.repository.runs(task, limit=limit, cursor=cursor)

    def cancel(self, tenant: str, task_id: str) -> Task:
        """Cancel a task so that none of its occurrences fires; cancelling twice is harmless."""
        task = self.repository.get(tenant, task_id)
        if task.status is TaskStatus.CANCELLED:
            return task
        check_task_transition(task.status, TaskStatus.CANCELLED)
        now = self._now()
        cancelled = replace(
            task,
            status=TaskStatus.CANCELLED,
            next_fire_at=None,
            updated_at=now,
            expires_at=now + self.retention,
        )
        return self.repository.update(cancelled)
