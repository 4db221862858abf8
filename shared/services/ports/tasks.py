"""The ports of tasks: their table, their dead letters and their counts (the task service, the
overview)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from shared.domain.errors import SundialError
from shared.domain.states import LetterStatus, TaskFilter, TaskStatus
from shared.domain.tasks import DeadLetter, DeadLetterRef, Page, Run, Task


class TaskRepository(Protocol):
    def create(self, task: Task, *, staged: bool = False) -> Task:
        """Store a new task (``staged``: its writer already staged its first occurrence) and
        count it in its tenant's quota of tasks that can still fire, atomically
        (:class:`QuotaExceeded`, nothing stored, when it is full); returns it with its stored
        version."""
        ...

    def get(self, tenant: str, task_id: str) -> Task:
        """The tenant's task, or :class:`TaskNotFound` (also for another tenant's task)."""
        ...

    def get_extra(self, tenant: str, item_id: str) -> Task:
        """The tenant's extra run (run now, a chained run, a workflow node's run) by its item's
        id, or :class:`TaskNotFound` (also for a task's own item)."""
        ...

    def list(
        self,
        tenant: str,
        *,
        status: TaskStatus | TaskFilter | None,
        limit: int,
        cursor: str | None,
        name_prefix: str | None = None,
        tag: tuple[str, str] | None = None,
    ) -> Page[Task]:
        """The tenant's tasks, newest first, ``limit`` at most per page (``tag``: those that have
        this key and value)."""
        ...

    def count(self, tenant: str, status: TaskFilter) -> int:
        """How many of the tenant's tasks are ``status``, one somebody must look at (failed,
        paused, paused after failures: ``WATCHED_TASKS``), exactly; ValueError for another."""
        ...

    def create_many(self, tasks: Sequence[tuple[Task, bool]]) -> Sequence[Task | SundialError]:
        """Store new tasks, (task, staged) each, in as few calls as the store allows; each
        answered in order by the stored task or the error that kept it out (nothing written).
        :class:`QuotaExceeded` for the whole batch when it does not fit in a tenant's
        ``max_tasks`` (nothing written)."""
        ...

    def create_run(self, extra: Task, *, staged: bool, redrive: DeadLetterRef | None = None) -> Task:
        """Store an extra run of a task: ``extra``, a one-shot task item that runs once for
        ``extra.parent_id`` (a run now, a redrive, a chained run); and mark ``redrive`` redriven. Not
        counted in the quota: it is an occurrence of its task, not a registration."""
        ...

    def update(self, task: Task, *, staged: bool = False, dropped_tags: Mapping[str, str] | None = None) -> Task:
        """Write a task's definition, status and armed occurrence if nobody changed it since
        ``task.version`` (:class:`ConcurrentUpdate` if somebody did); ``staged``: its writer
        staged the armed occurrence itself. A final status (cancelled, completed) gives the
        task's place in its tenant's quota back, once. ``dropped_tags``: tags the change took
        away (the task is no longer found by them)."""
        ...

    def runs(self, task: Task, *, limit: int, cursor: str | None) -> Page[Run]:
        """The task's runs, newest first."""
        ...


class DeadLetters(Protocol):
    """Occurrences that failed for good, as the API lists, shows and redrives them."""

    def record(self, letter: DeadLetter) -> None: ...

    def get(self, tenant: str, letter_id: str) -> DeadLetter: ...

    def list(
        self, tenant: str, *, limit: int, cursor: str | None, status: LetterStatus | None = None
    ) -> Page[DeadLetter]:
        """Newest first; the letters waiting for a redrive through the status index (full pages),
        another filter applied to a bounded read (a page may come back short, with a cursor)."""
        ...

    def count(self, tenant: str, status: LetterStatus) -> int:
        """How many of the tenant's letters wait for a redrive (``dead_lettered``), exactly;
        ValueError for another status."""
        ...


class TaskCounts(Protocol):
    def count(self, tenant: str, status: TaskFilter) -> int: ...

    def count_dead_letters(self, tenant: str, status: LetterStatus = LetterStatus.DEAD_LETTERED) -> int: ...


class WorkflowLookup(Protocol):
    def exists(self, tenant: str, workflow_id: str) -> bool: ...
