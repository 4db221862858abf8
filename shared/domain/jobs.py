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


def crossed_thresholds(done: int, total: int, step: int) -> list[int]:
    """The multiples of ``step`` (percent) that the ``done``-th of ``total`` shards crosses on
    ending: those in ``((done - 1) * 100 // total, done * 100 // total]``. Each multiple is crossed
    by exactly one shard's end, whatever order parallel shards end in, and a shard that crosses
    several (3 shards, every 10 %: 10, 20 and 30 at the first) crosses each."""
    if step <= 0 or total <= 0 or not 0 < done <= total:
        return []
    before, now = (done - 1) * 100 // total, done * 100 // total
    return [threshold for threshold in range(step, 101, step) if before < threshold <= now]


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


INLINE_RESULT_BYTES = 64 * 1024
"""Post's result is kept on the job's item up to this size as JSON, and beyond it in the jobs
bucket: a DynamoDB item holds 400 KB in all ("Service, account, and table quotas in Amazon
DynamoDB"), a processor's answer may be 6 MB, and a result on the item is read, and paid for, with
every read of the job (64 KiB: 16 read units a strongly consistent read)."""
RESULT_LINK_SECONDS = 3_600
"""How long a link to a result kept in the bucket works."""


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
    result_ref: str | None = None
    """Where a result too large for the job's item is kept (the jobs bucket's key); ``result`` is
    then None."""
    result_bytes: int | None = None
    """The size of such a result, as JSON."""
    result_url: str | None = None
    """A link to such a result that its reader can follow (for a while): the API's answer."""


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
