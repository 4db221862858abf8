"""Use cases of the task API: the only place the API handler calls into."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from shared.domain.buckets import choose_shard
from shared.domain.registration import new_task
from shared.domain.states import TaskStatus, check_task_transition
from shared.domain.tasks import Page, Task, TaskSpec
from shared.domain.times import truncate_ms
from shared.store.repository import TaskRepository


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class TaskService:
    repository: TaskRepository
    bucket_shards: int
    retention: timedelta
    clock: Callable[[], datetime] = utc_now
    randbytes: Callable[[int], bytes] = os.urandom

    def _now(self) -> datetime:
        return truncate_ms(self.clock())

    def register(self, tenant: str, spec: TaskSpec) -> Task:
        shard = choose_shard(secrets.randbits(32), self.bucket_shards)
        task = new_task(spec, tenant=tenant, now=self._now(), shard=shard, randbytes=self.randbytes)
        return self.repository.create(task)

    def get(self, tenant: str, task_id: str) -> Task:
        return self.repository.get(tenant, task_id)

    def list(self, tenant: str, *, status: TaskStatus | None, limit: int, cursor: str | None) -> Page[Task]:
        return self.repository.list(tenant, status=status, limit=limit, cursor=cursor)

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
