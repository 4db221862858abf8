"""Alerts and self-pausing (docs/receivers.md, section 4): what an occurrence's end does to its
task's count of failures in a row, whether that pauses the task, and which alerts it sends.
Pure: the trigger records the count in the write that already ends the occurrence, then sends
the alerts (shared/services/firing/alerts.py).

- An occurrence *failed* when its run ended ``failed`` or ``dead_lettered``; a success sets the
  count back to 0; a skipped occurrence leaves it as it is. Retries are attempts of one
  occurrence, not occurrences: a run that fails twice and then succeeds counts as a success.
- ``pause_after_failures``: the write that makes the count reach it (or go past it: a threshold
  lowered by a PATCH) pauses a recurring task, with ``paused_reason``. A one-shot task's only
  occurrence ends it anyway.
- ``sundial.run.dead_lettered``: every run that becomes a dead letter (failed without a retry,
  retries exhausted, or given up by the trigger).
- ``sundial.task.failing``: once, by the occurrence that makes the count equal to
  ``after_consecutive_failures``; not again until a success (or a resume) sets the count back.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from shared.domain.states import RunStatus
from shared.domain.tasks import Target, Task
from shared.domain.times import from_ms, iso

FAILED = frozenset({RunStatus.FAILED, RunStatus.DEAD_LETTERED})


class AlertType(StrEnum):
    DEAD_LETTERED = "sundial.run.dead_lettered"
    FAILING = "sundial.task.failing"


@dataclass(frozen=True)
class Streak:
    """What an occurrence's end writes on its task besides the run."""

    failures: int | None
    """The task's failures in a row after it; None: left as it is (a skipped occurrence)."""
    paused_reason: str | None = None
    """Set: pause the task in the same write, for this reason."""


def streak_after(task: Task, status: RunStatus) -> Streak:
    """``task`` as its occurrence's claim read it; ``status``: how that occurrence's run ended."""
    if status is RunStatus.SUCCEEDED:
        return Streak(0 if task.consecutive_failures else None)  # nothing to write when it is 0
    if status not in FAILED:
        return Streak(None)
    failures = task.consecutive_failures + 1
    limit = task.pause_after_failures
    if limit is None or failures < limit or not task.recurring or task.parent_id is not None:
        return Streak(failures)
    return Streak(failures, f"paused after {failures} failed occurrences in a row (pause_after_failures: {limit})")


@dataclass(frozen=True)
class Notice:
    """One alert to send: ``body()`` is what its target receives, as it is."""

    target: Target
    type: AlertType
    tenant: str
    task_id: str
    """The task the receiver knows (an extra run's parent)."""
    run_id: str
    reason: str
    at_ms: int

    @property
    def key(self) -> str:
        """Its ``Idempotency-Key`` (and ``webhook-id``): one per run and type, whatever the tries."""
        return f"{self.type.value}:{self.run_id}"

    def body(self) -> dict[str, Any]:
        return {
            "type": self.type.value,
            "task_id": self.task_id,
            "run_id": self.run_id,
            "reason": self.reason,
            "at": iso(from_ms(self.at_ms)),
        }


def notices(task: Task, run_id: str, status: RunStatus, reason: str, failures: int | None, at_ms: int) -> list[Notice]:
    """The alerts an occurrence of ``task`` that ended ``status`` (why: ``reason``) sends, the
    task's count of failures in a row being ``failures`` after it."""
    alert = task.alert
    if alert is None or status not in FAILED:
        return []

    def notice(kind: AlertType, why: str) -> Notice:
        return Notice(alert.target, kind, task.tenant, task.owner_id, run_id, why, at_ms)

    sent = [notice(AlertType.DEAD_LETTERED, reason)]
    threshold = alert.after_consecutive_failures
    if threshold is not None and failures == threshold and task.parent_id is None:
        sent.append(notice(AlertType.FAILING, f"{failures} occurrences in a row failed; the last: {reason}"))
    return sent
