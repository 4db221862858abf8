"""A sharded batch job's facts (docs/jobs.md): its status, what its steps need, what a client
starts and reads, and how a call to its processor fails. Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from shared.domain.sharding import Sharding

JsonValue = Any


class JobStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class ProcessorRetryable(Exception):
    """The processor failed in a way worth retrying (timeout, refused connection, 408/429/5xx).
    The state machine's Retry blocks match this exception's name."""


class ProcessorFailed(Exception):
    """The processor refused the step (other 4xx, or an answer that is not the contract's)."""


@dataclass(frozen=True)
class JobSpec:
    """What a job's steps need from the job item."""

    job_id: str
    sharding: Sharding
    notify_every_percent: int | None
    status: JobStatus = JobStatus.RUNNING
    """As read when the step began: a step of a job that is no longer running calls no processor."""


@dataclass(frozen=True)
class JobRequest:
    """A validated ``POST /v1/jobs`` body."""

    processor: Any
    """An ``HttpTarget`` or ``LambdaTarget``."""
    processor_dict: dict[str, Any]
    data: list[list[JsonValue]]
    sharding: Sharding
    notify_every_percent: int | None
    name: str | None = None


@dataclass(frozen=True)
class NewJobRecord:
    """A job as it is first recorded."""

    job_id: str
    tenant: str
    name: str | None
    processor: dict[str, Any]
    sharding: Sharding
    notify_every_percent: int | None
    created_ms: int


@dataclass(frozen=True)
class JobView:
    """A job as a client reads it."""

    id: str
    name: str | None
    status: JobStatus
    done_shards: int
    total_shards: int | None
    level: int | None
    result: JsonValue
    error: str | None
    created_ms: int
    finished_ms: int | None
    finishing: bool = False
    """The ``post`` step has begun: the job can no longer be cancelled."""


def cancel_refusal(view: JobView) -> str | None:
    """Why the job cannot be cancelled (``409 job_finished``), or None when it can: a running
    job whose ``post`` step has not begun is cancelled, and a cancelled one is cancelled again
    harmlessly, as a task is (docs/jobs.md, "Cancelling")."""
    if view.status is JobStatus.CANCELLED:
        return None
    if view.status is not JobStatus.RUNNING:
        return f"job {view.id} has already ended ({view.status.value})"
    if view.finishing:
        return f"job {view.id} is finishing: its post step has begun"
    return None


@dataclass(frozen=True)
class JobPage:
    items: list[JobView]
    next_cursor: str | None
    cursors: tuple[str, ...] = ()
    """The cursor that goes on after each item (as :class:`shared.domain.tasks.Page`)."""
