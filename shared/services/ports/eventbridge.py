"""The ports of the EventBridge Scheduler API: its schedule groups and names, and what a task made
through it asks of its occurrences' ends."""

from __future__ import annotations

from typing import Protocol

from shared.domain.firing import Staged
from shared.domain.retry import Exhausted
from shared.domain.tasks import Task


class ScheduleNames(Protocol):
    """Removes a completed schedule's name (shared/store/eventbridge.py)."""

    def drop_completed(self, tenant: str, group: str, name: str, task_id: str) -> bool: ...


class ScheduleEnds(Protocol):
    """What a task made through the EventBridge Scheduler API asks of its occurrences' ends
    (docs/eventbridge.md, section 7); both are for nothing on a native task."""

    def dead_letter(self, task: Task, staged: Staged, error: str | None, exhausted: Exhausted | None) -> None:
        """Send an occurrence that failed for good to the schedule's own dead-letter queue."""
        ...

    def completed(self, task: Task) -> None:
        """The task has nothing left to fire: its schedule's name goes, if it asked to."""
        ...
