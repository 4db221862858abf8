"""The port every storage implementation provides, and the in-memory fake used by domain tests."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Protocol

from shared.domain.errors import ConcurrentUpdate, TaskNotFound
from shared.domain.states import TaskStatus
from shared.domain.tasks import Page, Run, Task
from shared.domain.times import to_ms
from shared.store.keys import decode_cursor, encode_cursor, list_sk, task_key


class TaskRepository(Protocol):
    def create(self, task: Task, *, staged: bool = False) -> Task:
        """Store a new task (``staged``: its writer already staged its first occurrence);
        returns it with its stored version."""
        ...

    def get(self, tenant: str, task_id: str) -> Task:
        """The tenant's task, or :class:`TaskNotFound` (also for another tenant's task)."""
        ...

    def list(self, tenant: str, *, status: TaskStatus | None, limit: int, cursor: str | None) -> Page[Task]:
        """The tenant's tasks, newest first, ``limit`` at most per page."""
        ...

    def update(self, task: Task, *, staged: bool = False) -> Task:
        """Write a task's definition, status and armed occurrence if nobody changed it since
        ``task.version`` (:class:`ConcurrentUpdate` if somebody did); ``staged``: its writer
        staged the armed occurrence itself."""
        ...

    def runs(self, task: Task, *, limit: int, cursor: str | None) -> Page[Run]:
        """The task's runs, newest first."""
        ...


def _position(task: Task) -> str:
    return list_sk(to_ms(task.created_at), task.id)


class InMemoryTaskRepository:
    """Same behaviour as the DynamoDB repository, in a dict (for fast domain tests)."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}

    def create(self, task: Task, *, staged: bool = False) -> Task:
        task_key(task.id)
        if task.id in self._tasks:
            raise ConcurrentUpdate(f"task {task.id} already exists")
        stored = replace(task, version=1)
        self._tasks[task.id] = stored
        return copy.deepcopy(stored)

    def get(self, tenant: str, task_id: str) -> Task:
        task_key(task_id)
        task = self._tasks.get(task_id.upper())
        if task is None or task.tenant != tenant:
            raise TaskNotFound(f"task {task_id!r} not found")
        return copy.deepcopy(task)

    def list(self, tenant: str, *, status: TaskStatus | None, limit: int, cursor: str | None) -> Page[Task]:
        after = decode_cursor(cursor) if cursor else None
        mine = sorted((t for t in self._tasks.values() if t.tenant == tenant), key=_position, reverse=True)
        if after is not None:
            mine = [t for t in mine if _position(t) < after]
        matching = [t for t in mine if status is None or t.status is status]
        page = matching[:limit]
        more = len(matching) > limit
        return Page([copy.deepcopy(t) for t in page], encode_cursor(_position(page[-1])) if more else None)

    def update(self, task: Task, *, staged: bool = False) -> Task:
        current = self._tasks.get(task.id)
        if current is None:
            raise TaskNotFound(f"task {task.id!r} not found")
        if current.version != task.version:
            raise ConcurrentUpdate(f"task {task.id} changed meanwhile; read it again")
        stored = replace(task, version=task.version + 1)
        self._tasks[task.id] = stored
        return copy.deepcopy(stored)

    def runs(self, task: Task, *, limit: int, cursor: str | None) -> Page[Run]:
        """The fake has no pipeline: a task's only run is the one it carries."""
        items = [task.run] if task.run is not None and cursor is None else []
        return Page(items[:limit])
