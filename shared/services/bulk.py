"""Bulk operations by selector: pause, resume or cancel the tasks a selector picks, a step at a time
(docs/bulk.md).

A step lists one page of the selected tasks, as ``GET /v1/tasks`` would with the same filter (a
tag or a status somebody must look at reads its index, full pages; a name prefix or another status
reads the listing index, at most 200 items a request), and makes the move on each task of the page
the move applies to, as its own route would (``POST /v1/tasks/{id}/pause``...): one conditional
write each, read again and redone when the pipeline wrote the task meanwhile. It answers what it
did and the cursor the next step starts from. Every move is idempotent (a paused task is left
paused), so a retried step, or one that overlaps another, never acts twice on a task; a task
moved out of the selection by the step itself (a paused task leaves ``status=scheduled``) is
behind the cursor and not met again.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from shared.domain.bulk import BECOMES, MAX_STEP, BulkAction, Selector, applies
from shared.domain.errors import InvalidTransition, SundialError
from shared.domain.states import TaskStatus
from shared.domain.tasks import Task
from shared.services.tasks import TaskService

MOVES_AT_ONCE = 8
"""Tasks a step moves side by side (each move is I/O: a read and a write)."""


@dataclass(frozen=True)
class Step:
    """What one step did: the tasks it ``selected`` (listed), the ids of those it ``changed``
    (with ``dry_run``: would change), how many it left ``unchanged`` (already so, or in a state
    the move does not apply to), each task it could not change with why (``errors``), and the
    cursor of the next step (None: the selection is done)."""

    selected: int
    changed: list[str]
    unchanged: int
    errors: list[tuple[str, SundialError]]
    next_cursor: str | None


@dataclass
class BulkService:
    tasks: TaskService
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=MOVES_AT_ONCE))

    def step(
        self,
        tenant: str,
        action: BulkAction,
        selector: Selector,
        *,
        dry_run: bool,
        cursor: str | None = None,
        limit: int = MAX_STEP,
    ) -> Step:
        """One step of ``action`` over the tenant's tasks ``selector`` picks, from ``cursor``: at
        most ``limit`` tasks listed (and moved). With ``dry_run`` nothing is written: ``changed``
        are the tasks the move would change now."""
        page = self.tasks.list(
            tenant,
            status=selector.status,
            limit=min(limit, MAX_STEP),
            cursor=cursor,
            name_prefix=selector.name_prefix,
            tag=selector.tag,
        )
        movable = [task for task in page.items if applies(action, task.status)]
        if dry_run:
            changed, errors = [task.id for task in movable], []
        else:
            outcomes = list(self._pool.map(lambda task: self._move(tenant, action, task), movable))
            changed = [task.id for task, outcome in zip(movable, outcomes, strict=True) if outcome is True]
            errors = [
                (task.id, outcome)
                for task, outcome in zip(movable, outcomes, strict=True)
                if isinstance(outcome, SundialError)
            ]
        unchanged = len(page.items) - len(changed) - len(errors)
        return Step(len(page.items), changed, unchanged, errors, page.next_cursor)

    def _move(self, tenant: str, action: BulkAction, task: Task) -> bool | SundialError:
        """Make the move on one task as its route would: True when it moved it, False when the
        task was found already moved or no longer movable (another writer got there first), or
        the error that kept it."""
        move: dict[BulkAction, Callable[[str, str], Task]] = {
            BulkAction.PAUSE: self.tasks.pause,
            BulkAction.RESUME: self.tasks.resume,
            BulkAction.CANCEL: self.tasks.cancel,
        }
        try:
            moved = move[action](tenant, task.id)
        except InvalidTransition:
            return False
        except SundialError as exc:
            return exc
        if moved.version == task.version:
            return False  # it was so already when read again: nothing written
        return moved.status is BECOMES[action] or (action is BulkAction.RESUME and moved.status is TaskStatus.COMPLETED)
