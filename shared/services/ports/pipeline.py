"""The ports of the firing pipeline: staging, the tick's scans and stranded queue, the scanners' and
the trigger's store, the calls to targets, chains, the canary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from shared.delivery import Envelope, Outcome
from shared.domain.chains import Branch, ChainLink, ChainStart
from shared.domain.claims import Claimed, Refusal, Success
from shared.domain.firing import Staged
from shared.domain.states import TaskStatus
from shared.domain.tasks import Run, Target, Task


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
        started: tuple[str, ...] = (),
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


class Chains(Protocol):
    def start_chained(self, parent: Task, link: ChainLink, child_id: str, branch: Branch) -> ChainStart:
        """Start one hop of a chain (docs/chains.md): the child runs once per parent occurrence
        and branch, however often this is called for them."""


class Delivery(Protocol):
    """Calls one target; never raises for a failed call (shared/delivery's Deliverer)."""

    def deliver(self, target: Target, envelope: Envelope) -> Outcome: ...


class CanaryResources(Protocol):
    """Which task is the canary of a custom resource (shared/store/canary.py)."""

    def task_of(self, key: str) -> str | None: ...

    def point(self, key: str, task_id: str, now_ms: int) -> None: ...

    def forget(self, key: str) -> None: ...
