"""Bulk operations by selector (``POST /v1/tasks:pause``, ``:resume``, ``:cancel``): which tasks a
selector picks and what an action does to each (docs/bulk.md). Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from shared.domain.states import TASK_TRANSITIONS, TaskFilter, TaskStatus

MAX_STEP = 100
"""Tasks one step (one request) acts on at most: each is a read and a conditional write (a resume
may stage its occurrence), about 2 calls of 10-30 ms, so 100 take 1 to 6 s, within the API
function's 10 s with the listing's own bounded read (200 items at most); ``next_cursor`` goes on."""


class BulkAction(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"


BECOMES = {
    BulkAction.PAUSE: TaskStatus.PAUSED,
    BulkAction.RESUME: TaskStatus.SCHEDULED,
    BulkAction.CANCEL: TaskStatus.CANCELLED,
}
"""The status each action moves a task to (a resumed one-shot whose time went by with misfire
``skip`` is completed instead: the resume's own rule)."""


@dataclass(frozen=True)
class Selector:
    """Exactly one of: the tasks whose name starts with ``name_prefix``, those that have ``tag`` (a
    key and its value), those in ``status`` (a list filter: ``paused_after_failures`` too)."""

    name_prefix: str | None = None
    tag: tuple[str, str] | None = None
    status: TaskFilter | None = None

    def __post_init__(self) -> None:
        given = [v for v in (self.name_prefix, self.tag, self.status) if v is not None]
        if len(given) != 1:
            raise ValueError("a selector is exactly one of name_prefix, tag, status")


def applies(action: BulkAction, status: TaskStatus) -> bool:
    """Whether ``action`` changes a task in ``status``: the move is one the task's state machine
    allows. Pausing a paused task, resuming a scheduled one, cancelling a cancelled one, or any
    move of a completed task, is not one: the task is left as it is (counted ``unchanged``)."""
    return BECOMES[action] in TASK_TRANSITIONS[status]
