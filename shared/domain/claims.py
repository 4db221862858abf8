"""Claiming and firing a staged occurrence (docs/design.md, section 2.4): what a claim answers,
what a successful one-shot run leaves for its batch's run log, and what became of the delivery.
Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from shared.domain.alerts import Notice
from shared.domain.firing import Staged
from shared.domain.tasks import Task


class Refusal(StrEnum):
    """Why a staged occurrence was not claimed; in every case the message is dropped."""

    STALE = "stale"
    """The task is gone, cancelled, paused, or due at another time now (updated since staging)."""
    DONE = "done"
    """This run already finished (a duplicate delivery, or a redelivery after success)."""
    IN_FLIGHT = "in_flight"
    """Another trigger holds the run's lease right now."""
    EARLY = "early"
    """A retry arrived before the attempt before it was recorded: it must come back shortly."""
    BEHIND = "behind"
    """The task is not (yet) armed for this occurrence: its writer stages before it writes, so
    the message can overtake the write by a few milliseconds."""


@dataclass(frozen=True)
class Claimed:
    task: Task
    targets_done: int
    """Bit i set: target i already succeeded in an earlier attempt of this run."""
    log_id: str
    counted: bool = False
    """The task is counted in its tenant's quota (shared/domain/quota.py): the run's final
    outcome, if it ends the task, gives its place back."""


@dataclass(frozen=True)
class Success:
    run_id: str
    fired_ms: int
    lateness_ms: int
    attempts: int
    counted_in: str | None = None
    """The tenant whose quota counted the task this success completes (None: not counted)."""
    throttled_ms: int = 0


class Result(StrEnum):
    """What became of one delivery of a staged occurrence (one ``Runs_<result>`` metric each)."""

    SUCCEEDED = "succeeded"
    RETRYING = "retrying"
    FAILED = "failed"
    DEAD_LETTERED = "dead_lettered"
    SKIPPED = "skipped"
    DROPPED = "dropped"
    EARLY = "early"
    THROTTLED = "throttled"
    """Held back by a limit per destination: put back on the delay queue for when it may start."""
    IN_FLIGHT = "in_flight"
    """Another trigger holds the run's lease: the message must come back after it (if that
    trigger crashed, the redelivered message fires the occurrence once the lease runs out)."""


@dataclass(frozen=True)
class Fired:
    staged: Staged
    result: Result
    lateness_ms: int | None = None
    attempts: int = 0
    reason: str | None = None
    success: Success | None = None
    alerts: tuple[Notice, ...] = ()
    """Alerts to send once the batch's outcomes are recorded (shared/domain/alerts.py)."""
