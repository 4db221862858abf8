"""A client's change to a task (``PATCH /v1/tasks/{id}``) and the task's spec once it is applied.

The task service applies a change to the task as it reads it, and again to the task as it
reads it after a lost race: a change says what it sets, never what the task was, so two
clients changing different members both keep theirs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from shared.domain.retry import RetryPolicy
from shared.domain.schedules import Flexible, Schedule, base
from shared.domain.secrets import kept
from shared.domain.tasks import Alert, EventBridgeSchedule, Misfire, Priority, Target, Task, TaskSpec


class Keep(Enum):
    """A member a change leaves as it is (``None`` is a value of some members: it clears them)."""

    KEEP = "keep"


KEEP = Keep.KEEP

_SET_AS_GIVEN = (
    "schedule",
    "name",
    "payload",
    "retry",
    "misfire",
    "priority",
    "pause_after_failures",
    "on_success",
    "on_failure",
    "eventbridge",
    "tags",
)
"""The members a change sets as it gives them (targets and the alert keep stored secrets)."""


@dataclass(frozen=True)
class TaskPatch:
    """What a change sets; a member left :data:`KEEP` keeps the task's. ``targets`` replace the
    task's, as one ``target`` or, with ``multicast``, as ``targets``. Targets (the alert's too)
    are as sent: a secret header sent back as ``[redacted]`` takes the value the same target
    stores when the change is applied (:func:`~shared.domain.secrets.kept`)."""

    schedule: Schedule | Keep = KEEP
    targets: tuple[Target, ...] | Keep = KEEP
    multicast: bool = False
    name: str | Keep | None = KEEP
    payload: Any = KEEP
    retry: RetryPolicy | Keep = KEEP
    misfire: Misfire | Keep = KEEP
    priority: Priority | Keep = KEEP
    alert: Alert | Keep | None = KEEP
    pause_after_failures: int | Keep | None = KEEP
    on_success: tuple[str, ...] | Keep = KEEP
    on_failure: tuple[str, ...] | Keep = KEEP
    eventbridge: EventBridgeSchedule | Keep | None = KEEP
    tags: dict[str, str] | Keep = KEEP
    """The task's tags, replaced whole ({} or null: none)."""

    @property
    def reschedules(self) -> bool:
        """A schedule given, even the task's own, re-arms the task."""
        return self.schedule is not KEEP


def patched(task: Task, patch: TaskPatch) -> TaskSpec:
    """The task's spec once ``patch`` is applied to it as it is now."""
    changes: dict[str, Any] = {}
    for member in _SET_AS_GIVEN:
        value = getattr(patch, member)
        if value is not KEEP:
            changes[member] = value
    if (windowed := _window_kept(task, patch)) is not None:
        changes["schedule"] = windowed
    if not isinstance(patch.targets, Keep):
        changes["targets"] = _kept_targets(patch.targets, patch.multicast, task.targets)
        changes["multicast"] = patch.multicast
    if not isinstance(patch.alert, Keep):
        changes["alert"] = _kept_alert(patch.alert, task.alert)
    return replace(task.spec, **changes)


def _window_kept(task: Task, patch: TaskPatch) -> Schedule | None:
    """The schedule a change gives, with the task's flexible window, when the change leaves
    ``eventbridge`` as it is (the native API's, to a task made through the EventBridge Scheduler
    API): that API's own changes give both, and say whether the window stays. None: no such
    change."""
    schedule, stored = patch.schedule, task.schedule
    if isinstance(schedule, Keep | Flexible) or not isinstance(stored, Flexible):
        return None
    if not isinstance(patch.eventbridge, Keep):
        return None
    return replace(stored, inner=base(schedule))


def _kept_targets(targets: tuple[Target, ...], multicast: bool, before: tuple[Target, ...]) -> tuple[Target, ...]:
    """The targets given, each secret sent back taking its stored value (named as the client
    sent the target: ``target``, or ``targets[i]``)."""
    if not multicast:
        return tuple(kept(target, before, "target") for target in targets)
    return tuple(kept(target, before, f"targets[{i}]") for i, target in enumerate(targets))


def _kept_alert(alert: Alert | None, before: Alert | None) -> Alert | None:
    if alert is None:
        return None
    stored = (before.target,) if before is not None else ()
    return replace(alert, target=kept(alert.target, stored, "alert.target"))
