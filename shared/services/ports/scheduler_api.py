"""The ports of the EventBridge Scheduler API: its schedule groups and names, and what a task made
through it asks of its occurrences' ends."""

from __future__ import annotations

from typing import Protocol

from shared.domain.firing import Staged
from shared.domain.retry import Exhausted
from shared.domain.schedule_names import GroupRecord, NameRecord
from shared.domain.tasks import Task


class ScheduleNames(Protocol):
    """Removes a completed schedule's name (shared/store/scheduler_api.py)."""

    def drop_completed(self, tenant: str, group: str, name: str, task_id: str) -> bool:
        """Remove the name if it still points at ``task_id`` (one created again since is left
        alone); False when it does not."""
        ...


class Schedules(ScheduleNames, Protocol):
    """The EventBridge Scheduler API's schedule groups and schedule names of every tenant
    (shared/store/scheduler_api.py). A page is read from a prefix of the name (``<group>/<name>``
    for names), ``count`` at most, from the token the previous page answered; a token that is not
    one of the store's is a ValueError."""

    def create_group(
        self, tenant: str, group: str, tags: list[dict[str, str]], now_ms: int, client_token: str | None = None
    ) -> GroupRecord:
        """A new group, or :class:`~shared.domain.schedule_names.NameTaken` when it exists."""
        ...

    def group(self, tenant: str, group: str) -> GroupRecord | None: ...

    def put_group(self, tenant: str, record: GroupRecord) -> None: ...

    def delete_group(self, tenant: str, group: str) -> None: ...

    def groups(self, tenant: str, prefix: str, count: int, token: str | None) -> tuple[list[GroupRecord], str | None]:
        """Groups whose name starts with ``prefix``, in order, and the next page's token."""
        ...

    def take_name(self, tenant: str, record: NameRecord) -> None:
        """Take a name, atomically: :class:`~shared.domain.schedule_names.NameTaken` when it is
        taken, so two creations of one name cannot both succeed."""
        ...

    def put_name(self, tenant: str, record: NameRecord) -> None: ...

    def name(self, tenant: str, group: str, name: str) -> NameRecord | None: ...

    def drop_name(self, tenant: str, group: str, name: str) -> None: ...

    def names(self, tenant: str, prefix: str, count: int, token: str | None) -> tuple[list[NameRecord], str | None]:
        """Names whose ``<group>/<name>`` starts with ``prefix``, in order, and the next page's token."""
        ...


class ScheduleEnds(Protocol):
    """What a task made through the EventBridge Scheduler API asks of its occurrences' ends
    (docs/eventbridge.md, section 7); both are for nothing on a native task."""

    def dead_letter(self, task: Task, staged: Staged, error: str | None, exhausted: Exhausted | None) -> None:
        """Send an occurrence that failed for good to the schedule's own dead-letter queue."""
        ...

    def completed(self, task: Task) -> None:
        """The task has nothing left to fire: its schedule's name goes, if it asked to."""
        ...
