"""The ports the services own: every adapter they call implements one of these structurally, so
no service imports an adapter and no adapter imports a service (shared/services/factory.py is
the one place that wires the real ones: shared/store, shared/delivery, shared/adapters/queues.py,
shared/adapters/executions.py; the tests wire fakes from tests/support/fakes.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from shared.delivery import Envelope, Outcome
from shared.domain.chains import Branch, ChainLink, ChainStart
from shared.domain.claims import Claimed, Refusal, Success
from shared.domain.errors import SundialError
from shared.domain.firing import Staged
from shared.domain.jobs import JobPage, JobSpec, JobStatus, JobView, JsonValue, NewJobRecord, StepFailure
from shared.domain.limits import Booking, Limit, LimitSpec, LimitState
from shared.domain.rate import Decision, Rate
from shared.domain.retry import Exhausted
from shared.domain.signing import NewSecret, SecretInfo
from shared.domain.states import LetterStatus, TaskFilter, TaskStatus
from shared.domain.tasks import DeadLetter, DeadLetterRef, Page, Run, Target, Task
from shared.domain.tenants import Caller, KeyInfo, Limits, NewKey, Tenant
from shared.domain.workflows import NodeOutcome, NodeStatus

# --- tasks -----------------------------------------------------------------------------------


class TaskRepository(Protocol):
    def create(self, task: Task, *, staged: bool = False) -> Task:
        """Store a new task (``staged``: its writer already staged its first occurrence) and
        count it in its tenant's quota of tasks that can still fire, atomically
        (:class:`QuotaExceeded`, nothing stored, when it is full); returns it with its stored
        version."""
        ...

    def get(self, tenant: str, task_id: str) -> Task:
        """The tenant's task, or :class:`TaskNotFound` (also for another tenant's task)."""
        ...

    def get_extra(self, tenant: str, item_id: str) -> Task:
        """The tenant's extra run (run now, a chained run, a workflow node's run) by its item's
        id, or :class:`TaskNotFound` (also for a task's own item)."""
        ...

    def list(
        self,
        tenant: str,
        *,
        status: TaskStatus | TaskFilter | None,
        limit: int,
        cursor: str | None,
        name_prefix: str | None = None,
    ) -> Page[Task]:
        """The tenant's tasks, newest first, ``limit`` at most per page."""
        ...

    def count(self, tenant: str, status: TaskFilter) -> int:
        """How many of the tenant's tasks are ``status``, one somebody must look at (failed,
        paused, paused after failures: ``WATCHED_TASKS``), exactly; ValueError for another."""
        ...

    def create_many(self, tasks: Sequence[tuple[Task, bool]]) -> Sequence[Task | SundialError]:
        """Store new tasks, (task, staged) each, in as few calls as the store allows; each
        answered in order by the stored task or the error that kept it out (nothing written).
        :class:`QuotaExceeded` for the whole batch when it does not fit in a tenant's
        ``max_tasks`` (nothing written)."""
        ...

    def create_run(self, extra: Task, *, staged: bool, redrive: DeadLetterRef | None = None) -> Task:
        """Store an extra run of a task: ``extra``, a one-shot task item that runs once for
        ``extra.parent_id`` (a run now, a redrive, a chained run); and mark ``redrive`` redriven. Not
        counted in the quota: it is an occurrence of its task, not a registration."""
        ...

    def update(self, task: Task, *, staged: bool = False) -> Task:
        """Write a task's definition, status and armed occurrence if nobody changed it since
        ``task.version`` (:class:`ConcurrentUpdate` if somebody did); ``staged``: its writer
        staged the armed occurrence itself. A final status (cancelled, completed) gives the
        task's place in its tenant's quota back, once."""
        ...

    def runs(self, task: Task, *, limit: int, cursor: str | None) -> Page[Run]:
        """The task's runs, newest first."""
        ...


class DeadLetters(Protocol):
    """Occurrences that failed for good, as the API lists, shows and redrives them."""

    def record(self, letter: DeadLetter) -> None: ...

    def get(self, tenant: str, letter_id: str) -> DeadLetter: ...

    def list(
        self, tenant: str, *, limit: int, cursor: str | None, status: LetterStatus | None = None
    ) -> Page[DeadLetter]:
        """Newest first; the letters waiting for a redrive through the status index (full pages),
        another filter applied to a bounded read (a page may come back short, with a cursor)."""
        ...

    def count(self, tenant: str, status: LetterStatus) -> int:
        """How many of the tenant's letters wait for a redrive (``dead_lettered``), exactly;
        ValueError for another status."""
        ...


# --- the firing pipeline ---------------------------------------------------------------------


class Stager(Protocol):
    """Puts occurrences on the delay queues, each visible shortly before it is due."""

    def stage(self, occurrences: Sequence[Staged], now_ms: int) -> None: ...


class DelayQueues(Stager, Protocol):
    """What the trigger also sends: retries and the messages it comes back to (their own
    delays), and dead letters."""

    def send(self, messages: Sequence[tuple[Staged, int]]) -> None: ...

    def dead_letter(self, staged: Staged, reason: str, task_id: str | None = None) -> None: ...


class ScanRequester(Protocol):
    """The tick's fan-out: a scan request per bucket shard."""

    def request(self, shards: Sequence[int], tick_ms: int, since: Mapping[int, int | None] | None = None) -> None:
        """A scan request for each of ``shards``; ``since``: per shard, the due time before which
        the tick knows everything staged or clean (the scan starts there if its mark is earlier)."""
        ...


class StrandedQueue(Protocol):
    """The stranded queue as the tick sees it: whether messages wait there, and a drain of it."""

    def waiting(self) -> bool:
        """Whether the queue holds messages a receive would return (an approximate count)."""
        ...

    def drain(self) -> None:
        """Ask for the queue to be drained (the recovering trigger, invoked asynchronously)."""
        ...


class PipelineStore(Protocol):
    """What the scanners and the trigger read and write; every write is conditional on the run
    it belongs to (shared/store/pipeline.py)."""

    def watermark(self, shard: int) -> int | None: ...

    def scan_marks(self, shards: Sequence[int]) -> tuple[dict[int, int | None], dict[int, int]]: ...

    def mark_clean(self, until: dict[int, int]) -> None: ...

    def has_items(self, shard: int, start_ms: int, end_ms: int) -> bool: ...

    def begin_scan(self, shard: int, now_ms: int, lease_ms: int) -> tuple[int | None, int] | None: ...

    def end_scan(self, shard: int, lease: int, mark: int) -> bool: ...

    def due(self, shard: int, start_ms: int, end_ms: int) -> list[Staged]: ...

    def claim(
        self, staged: Staged, *, now_ms: int, lease_until_ms: int, log_id: str, take_own: bool = False
    ) -> Claimed | Refusal: ...

    def status_of(self, task_id: str) -> TaskStatus | None: ...

    def log_successes(self, log_id: str, successes: list[Success], now_ms: int) -> None:
        """Record a batch's one-shot successes and free their counted tasks' places, once per
        ``log_id`` (a replay does nothing)."""
        ...

    def record_retry(
        self,
        staged: Staged,
        *,
        error: str,
        targets_done: int,
        fired_ms: int,
        lateness_ms: int,
        throttled_ms: int = 0,
    ) -> bool: ...

    def record_hold(self, staged: Staged, *, lease_until_ms: int, throttled_ms: int) -> bool:
        """A claimed attempt put back by a limit per destination (its attempt not used)."""
        ...

    def finish_one_shot(
        self,
        staged: Staged,
        run: Run,
        *,
        now_ms: int,
        targets_done: int,
        counted_in: str | None = None,
        logged_in: str | None = None,
        failures: int | None = None,
        task: Task | None = None,
    ) -> bool:
        """A one-shot's final outcome; ``counted_in``: the tenant whose quota counts the task
        (its place is given back in the same write); ``logged_in``: a success whose batch's run
        log could not be written (if it was after all, nothing is given back twice); ``failures``:
        the task's failures in a row after the run (None: left as it is); ``task``: the task as
        claimed (needed for an end other than a success: it is listed by its status)."""
        ...

    def rearm(
        self,
        task: Task,
        staged: Staged,
        run: Run,
        *,
        next_due_ms: int | None,
        staged_next: bool,
        now_ms: int,
        counted: bool = False,
        failures: int | None = None,
        paused_reason: str | None = None,
    ) -> bool:
        """Arm a recurring task's next occurrence, or complete it (``next_due_ms`` None: a
        ``counted`` task gives its place in its tenant's quota back in the same write);
        ``failures``: the task's failures in a row after it, ``paused_reason``: pause the task
        in the same write (shared/domain/alerts.py)."""
        ...

    def note_ended_run(self, task_id: str, run: Run) -> None:
        """An extra run of ``task_id`` ended: it becomes the task's ``last_run`` unless a later
        one is there already; a success makes a ``failed`` task ``completed``."""
        ...


class QueueSender(Protocol):
    """Sends one message to a standard SQS queue, by its ARN (shared/delivery/aws.py); never raises."""

    def send_to_queue(self, queue_arn: str, body: str, attributes: dict[str, dict[str, str]]) -> Outcome: ...


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


class Chains(Protocol):
    def start_chained(self, parent: Task, link: ChainLink, child_id: str, branch: Branch) -> ChainStart:
        """Start one hop of a chain (docs/chains.md): the child runs once per parent occurrence
        and branch, however often this is called for them."""


class Delivery(Protocol):
    """Calls one target; never raises for a failed call (shared/delivery's Deliverer)."""

    def deliver(self, target: Target, envelope: Envelope) -> Outcome: ...


# --- signing secrets ---------------------------------------------------------------------------


class SigningSecrets(Protocol):
    """A tenant's callback signing secrets (docs/tenancy.md, section 4): stored encrypted or derived
    from a root key, never in the clear; their values leave only through :meth:`active` (to sign)
    and :meth:`rotate` (once, to the tenant)."""

    def infos(self, tenant: str) -> Sequence[SecretInfo]:
        """The tenant's secrets, newest first, without their values."""
        ...

    def active(self, tenant: str, now_ms: int) -> Sequence[str]:
        """The values of the tenant's active secrets, newest first; when it has none, its first
        one is made now (atomically: two callers at once make one)."""
        ...

    def rotate(self, tenant: str, previous_expires_in_ms: int, now_ms: int) -> NewSecret:
        """Make a new current secret; every other active one expires at ``now + previous_expires_in_ms``
        at the latest. :class:`ConcurrentUpdate` when another rotation won the race."""
        ...


# --- tenants and keys ------------------------------------------------------------------------


class Tenants(Protocol):
    """Tenants, their limits and their API keys (docs/tenancy.md, section 1): a key is stored as
    its hash only."""

    def create(self, tenant: str, limits: Limits, key: NewKey, now_ms: int) -> Tenant:
        """The tenant with its first key (:class:`TenantExists` when there is one)."""
        ...

    def get(self, tenant: str) -> Tenant: ...

    def list(self, limit: int, cursor: str | None) -> tuple[list[Tenant], str | None]: ...

    def set_limits(self, tenant: str, limits: Limits) -> Tenant: ...

    def issue_key(self, key: NewKey, now_ms: int) -> KeyInfo: ...

    def keys(self, tenant: str) -> Sequence[KeyInfo]: ...

    def revoke(self, tenant: str, key_id: str, now_ms: int) -> None: ...

    def resolve(self, key_hash: str) -> Caller | None:
        """Who holds a live key with this hash: the admin, or a tenant with its limits; None
        otherwise."""
        ...

    def limits(self, tenant: str) -> Limits: ...


class RateLimiter(Protocol):
    def take(self, key: str, rate: Rate, now_ms: float | None = None, count: int = 1) -> Decision:
        """Admit ``count`` requests at once (at most the burst), all or none."""
        ...


# --- limits per destination ------------------------------------------------------------------


class LimitStore(Protocol):
    """A tenant's limits per destination (docs/receivers.md, section 1): items ``T#<tenant>`` /
    ``L#<name>`` and ``LO#<origin>``, and the version on each state item ``LIMIT#<tenant>#<name>#<k>``."""

    def put(self, tenant: str, name: str, spec: LimitSpec, now_ms: int) -> Limit:
        """Create or replace a limit (its version bumped, its state's TAT kept);
        :class:`OriginTaken` when another of the tenant's limits has the origin."""
        ...

    def get(self, tenant: str, name: str) -> Limit:
        """The limit, or :class:`LimitNotFound` (also for another tenant's)."""
        ...

    def delete(self, tenant: str, name: str) -> None:
        """Remove the limit, its origin entry and its state (:class:`LimitNotFound` if none)."""
        ...

    def for_tenant(self, tenant: str) -> Sequence[Limit]:
        """All of the tenant's limits (at most MAX_LIMITS), by name: one query."""
        ...


class Throttle(Protocol):
    """The state of limits per destination (shared/store/throttle.py): bookings, in-flight slots,
    a receiver's hold. Every method answers None (or raises nothing new) when the limit is not
    at the version the caller read: it reads the tenant's limits again."""

    def book(self, limit: Limit, k: int, reference_ms: int) -> Booking | None: ...

    def acquire(self, limit: Limit, k: int, run_id: str, now_ms: int, lease_until_ms: int) -> bool | None: ...

    def release(self, limit: Limit, k: int, run_id: str) -> None: ...

    def hold(self, limit: Limit, until_ms: int) -> None: ...

    def state(self, limit: Limit, k: int, consistent: bool = False) -> LimitState | None: ...


# --- jobs ------------------------------------------------------------------------------------


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


class WorkflowEnds(Protocol):
    """Moves a workflow run on when one of its nodes' runs has its final outcome
    (shared/services/workflows.py, ``WorkflowRuns.node_ended``)."""

    def node_ended(
        self,
        run_id: str,
        node: str,
        status: NodeStatus,
        *,
        attempt: int = 1,
        outcome: NodeOutcome | None = None,
        item_id: str | None = None,
    ) -> None: ...
