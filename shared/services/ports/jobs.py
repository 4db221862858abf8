"""The ports of jobs: their records, results, processor calls, notifies and executions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from shared.domain.job_commands import JobCommand, Refusal
from shared.domain.jobs import JobPage, JobSpec, JobStatus, JobView, JsonValue, NewJobRecord, StepFailure


class JobStore(Protocol):
    """The job item, as the job's steps read and count it."""

    def spec(self, job_id: str) -> JobSpec: ...

    def planned(self, job_id: str, shards_per_level: Sequence[int], total_items: int | None = None) -> None:
        """The job's shard counts are known: progress is counted against their sum; with
        ``total_items``, items are counted too (reports and shard ends)."""

    def shards_per_level(self, job_id: str) -> list[int]:
        """What :meth:`planned` recorded."""

    def pre_started(self, job_id: str) -> None:
        """``pre`` began (its first attempt's time is kept)."""

    def shard_done(
        self, job_id: str, level: int, shard: int, *, by_level: bool = True, items: int | None = None
    ) -> tuple[int, int]:
        """Count a shard as done once (a retried shard is not counted twice), in all and, when
        ``by_level``, in its level (with the time), and with ``items`` its items all done;
        returns (done shards, total shards)."""

    def claim_notification(self, job_id: str, percent: int) -> bool:
        """True for exactly one caller per threshold: the one that moves the job's notified
        percent up to ``percent``."""

    def claim_post(self, job_id: str) -> bool:
        """True while the job runs (it can no longer be cancelled from then on); False once it
        is cancelled or ended: ``post`` is not called."""

    def succeeded(
        self, job_id: str, result: JsonValue, *, result_ref: str | None = None, result_bytes: int | None = None
    ) -> bool:
        """False (nothing written) when the job had ended already, e.g. cancelled. A result kept
        in the bucket is ``result_ref`` (``result`` then None)."""

    def failed(self, job_id: str, error: str, failure: StepFailure | None = None) -> bool:
        """False (nothing written) when the job had ended already, e.g. cancelled. ``error`` is
        the failure in words."""

    def notify_failed(self, job_id: str, failure: StepFailure) -> None:
        """A ``notify`` failed (the job goes on): kept as the job's last failed notify."""

    def current(self, job_id: str) -> JobView | None:
        """The job as it is now (a consistent read), whoever's it is."""


class JobRecords(Protocol):
    """The job item, as the API starts and reads jobs."""

    def create(self, job: NewJobRecord) -> bool:
        """False when the job exists already."""

    def view(self, tenant: str, job_id: str) -> JobView | None: ...

    def views(self, tenant: str, limit: int, cursor: str | None, status: JobStatus | None = None) -> JobPage:
        """The tenant's jobs newest first (of ``status`` only, when given), never a scan: running
        or failed ones through the status index (full pages), the others through the listing
        index, where a filtered page may come back short, with a cursor to go on from."""

    def count(self, tenant: str, status: JobStatus) -> int:
        """How many of the tenant's jobs are ``status``, running or failed (``WATCHED_JOBS``),
        exactly; ValueError for another."""

    def cancel(self, tenant: str, job_id: str, now_ms: int) -> JobView | None:
        """Mark the tenant's running job cancelled unless its post step has begun (one
        conditional write); the job, or None when nothing was written."""

    def failed(self, job_id: str, error: str) -> bool: ...

    def find_spec(self, job_id: str) -> tuple[str, JobSpec] | None:
        """(its tenant, what its steps read) of any tenant's job, or None: a progress report's
        token names the job, not the tenant."""

    def report(self, job_id: str, shard: str, done_items: int) -> tuple[int, int, int] | None:
        """A running shard's count of items done moves up to ``done_items`` (never down): the
        job's items done before and after, and in all; None when nothing was written."""

    def claim_notification(self, job_id: str, percent: int) -> bool:
        """As :meth:`JobStore.claim_notification`: each threshold is sent once."""

    def add_command(self, tenant: str, job_id: str, command: JobCommand) -> Refusal | None:
        """Keep a command at the end of the tenant's running job's pending list, unless it holds
        ``MAX_PENDING_COMMANDS`` (one conditional write); None when kept, or why not."""

    def take_commands(self, job_id: str, acknowledged: Sequence[str], now_ms: int) -> list[JobCommand]:
        """The acknowledged commands dropped, and those due (pending, or offered a lease ago and
        not acknowledged) offered to this report, oldest first, in one conditional write: no two
        reports are offered one command within its lease."""


class JobNotifier(Protocol):
    """Sends a ``notify`` a progress report crossed: the job function, invoked asynchronously."""

    def notify(self, job_id: str, threshold: int, done_items: int, total_items: int) -> None: ...


class Blobs(Protocol):
    """The job's objects (S3): its levels, each shard's items, each shard's result."""

    def put(self, key: str, value: JsonValue) -> None: ...

    def get(self, key: str) -> JsonValue: ...

    def url(self, key: str, expires_s: int) -> str:
        """A link that reads the object for ``expires_s`` seconds (no call: a signed URL)."""


class Processor(Protocol):
    def call(self, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Send one phase's body to the job's processor and return its JSON answer, or raise
        :class:`~shared.domain.jobs.ProcessorRetryable` / :class:`~shared.domain.jobs.ProcessorFailed`."""


class ExecutionStarter(Protocol):
    def start(self, job_id: str) -> None:
        """Start the job's state machine execution, named after the job (started once)."""

    def stop(self, job_id: str) -> None:
        """Stop the job's execution (nothing when it has ended or never started)."""


class JobCounts(Protocol):
    def count(self, tenant: str, status: JobStatus) -> int: ...
