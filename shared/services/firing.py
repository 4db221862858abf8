"""The firing pipeline's use cases: tick, scan, trigger (docs/design.md, section 2)."""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

from shared.delivery import AlertEnvelope, Envelope, Outcome
from shared.domain.alerts import Notice, notices, streak_after
from shared.domain.chains import ChainLink, ParentRun, branch_of, response_of
from shared.domain.claims import Claimed, Fired, Refusal, Result, Success
from shared.domain.errors import StorageUnavailable
from shared.domain.firing import (
    MAX_DELAY_SECONDS,
    Decision,
    Staged,
    Timing,
    delay_seconds,
    misfire_decision,
    next_occurrence,
    scan_window,
    staged_for,
    writer_stages,
)
from shared.domain.retry import next_attempt_due
from shared.domain.signing import Signer
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import DeadLetter, HttpTarget, JobTarget, Priority, Run, Target, Task
from shared.domain.times import from_ms, now_ms
from shared.observability import logger
from shared.services.ports import Chains, DeadLetters, DelayQueues, Delivery, PipelineStore, Stager
from shared.services.throttling import Limited, Throttling
from shared.topology import DELAY_MAX_RECEIVES

SCAN_LEASE_MS = 50_000
"""A scan holds its shard this long at most (the scanner function's timeout is 60 s)."""
CLAIM_RETRY_PAUSES_S = (0.05, 0.1, 0.2, 0.0)
"""Pauses between claim attempts refused as BEHIND or EARLY (the last attempt has none after it)."""
HOLD_SLACK_MS = 1_000
"""A start a limit books further than the staging lead and this after now puts the occurrence
back on the delay queue; a nearer one is waited out, as a due time is."""
SLOT_WAIT_S = 1
"""An occurrence whose limit has all its in-flight slots taken comes back this much later."""
REBOOKINGS = 2
"""A run whose limits change (or are held) under it this often in the staging lead is put back."""
ALERT_RETRY_PAUSES_S = (0.5, 0.0)
"""An alert is tried twice at most, half a second apart, when its first try may be retried; then
it is logged and given up (it is never retried into another alert, nor left for a later batch)."""
ALERT_TIMEOUT_S = 10.0
"""An HTTP alert's try waits this long at most (less when its target's ``timeout_seconds`` says so):
alerts are sent at the end of a trigger invocation, which must end within the trigger's timeout."""


@dataclass
class Scanner:
    store: PipelineStore
    stager: Stager
    timing: Timing
    clock: Callable[[], int] = now_ms

    def scan(self, shard: int, tick_ms: int | None = None) -> int:
        """Stage what ``shard`` has due from its mark to now + look-ahead; returns how many.

        One scan of a shard at a time (a lease on its mark); a request whose tick is already
        covered by the mark (requests that queued up behind a slow scan) does nothing."""
        now = self.clock()
        taken = self.store.begin_scan(shard, now, SCAN_LEASE_MS)
        if taken is None:
            return 0
        mark, lease = taken
        if tick_ms is not None and mark is not None and mark >= tick_ms + self.timing.look_ahead_ms:
            self.store.end_scan(shard, lease, mark)
            return 0
        start, end = scan_window(mark, now, self.timing)
        due = self.store.due(shard, start, end)
        self.stager.stage(due, now)
        if not self.store.end_scan(shard, lease, end):
            logger.warning("a scan outlived its lease", extra={"shard": shard})
        return len(due)


def dead_letter(task: Task, staged: Staged, reason: str, failed_ms: int) -> DeadLetter:
    """The record of an occurrence that failed for good, with what it fired (for a redrive)."""
    return DeadLetter(
        id=staged.run_id,
        tenant=task.tenant,
        task_id=task.owner_id,
        run_id=staged.run_id,
        scheduled_for=from_ms(staged.due_ms),
        failed_at=from_ms(failed_ms),
        attempts=staged.attempt,
        reason=reason,
        targets=task.targets,
        multicast=task.multicast,
        payload=task.payload,
        retry=task.retry,
        name=task.name,
    )


@dataclass(frozen=True)
class Claim:
    """An occurrence whose run this trigger took: it is ours until the lease runs out."""

    staged: Staged
    claimed: Claimed
    at_ms: int
    """When the claim was taken: whether the occurrence was missed is judged from it."""


@dataclass(frozen=True)
class Ran:
    """What running a claimed occurrence did: skipped (and why), or fired at ``fired_ms``."""

    targets_done: int
    """Bit i set: target i has succeeded in this run (in this attempt or an earlier one)."""
    skipped: str | None = None
    fired_ms: int = 0
    outcomes: tuple[Outcome, ...] = ()
    """The outcome of each target this attempt called."""
    called: tuple[int, ...] = ()
    """The index of the target of each outcome."""
    held: tuple[Staged, int] | None = None
    """Put back by a limit: the held copy of the message and its delay (seconds)."""
    throttled_ms: int = 0
    """How long limits have held the run back, this attempt included."""
    limited: tuple[Limited, ...] = ()
    """The targets a limit held (a Retry-After from one holds its whole limit)."""


@dataclass
class Trigger:
    """Claims, fires and records the occurrences of one batch of delay-queue messages."""

    store: PipelineStore
    stager: DelayQueues
    deliverer: Delivery
    timing: Timing
    dead_letters: DeadLetters
    clock: Callable[[], int] = now_ms
    sleep: Callable[[float], None] = time.sleep
    max_receives: int = DELAY_MAX_RECEIVES
    """Deliveries of a delay-queue message before SQS dead-letters it (the queues' setting): on
    the last one a batch gives the occurrence up (:meth:`Batch.fire`)."""
    signer: Callable[[str], Signer] | None = None
    """The tenant's signer (SigningService.signer): HTTP targets get signed calls; None: unsigned."""
    throttling: Throttling | None = None
    """Limits per destination (docs/receivers.md); None: no target is limited."""
    normal_claims: threading.BoundedSemaphore | None = None
    """How many normal-lane claims may be under way at once in this process (None: any). In AWS
    a trigger container serves one lane and claims in turn; the local runtime serves both lanes
    from one process against one moto, and sets it so that a high-priority claim waits for a
    few normal ones in moto, not for every one a flood has started (docs/receivers.md, 3)."""
    chains: Chains | None = None
    """Starts the tasks an occurrence's end chains to (docs/chains.md); None: no chains."""
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=16))
    """Calls the targets of a task with several, side by side."""

    def new_batch(self) -> Batch:
        return Batch(self, uuid.uuid4().hex, max_receives=self.max_receives)

    # One occurrence: claim, run, settle --------------------------------------------------

    def fire(self, staged: Staged, log_id: str, turn: ClaimTurn | None = None) -> Fired:
        claim = self.claim(staged, log_id, turn)
        if isinstance(claim, Fired):
            return claim
        return self.settle(claim, self.run(claim))

    def claim(self, staged: Staged, log_id: str, turn: ClaimTurn | None = None) -> Claim | Fired:
        """Take the occurrence's run, in the batch's due order (``turn``). A claim refused
        because the message overtook the write that arms the task is tried again after a short
        pause; any other refusal is the occurrence's answer (:class:`Fired`) at once."""
        if turn is not None:
            turn.wait()
        if staged.start_ms is not None and staged.start_ms - self.clock() > self.timing.lead_ms + HOLD_SLACK_MS:
            # back before its start (a wait longer than SQS's longest delay): on its way again
            if turn is not None:
                turn.done()
            self.stager.send([(staged, delay_seconds(staged.start_ms, self.clock(), self.timing.lead_ms))])
            return Fired(staged, Result.THROTTLED if staged.held else Result.EARLY, reason="not yet")
        gated = staged.priority is Priority.NORMAL and not staged.held  # a held copy has a booked start to keep
        for attempt, pause in enumerate(CLAIM_RETRY_PAUSES_S):
            now = self.clock()
            lease = max(now, staged.start_ms or staged.due_ms) + self.timing.lease_ms
            try:
                with self.normal_claims if gated and self.normal_claims is not None else nullcontext():
                    claimed = self.store.claim(staged, now_ms=now, lease_until_ms=lease, log_id=log_id)
            finally:
                if turn is not None and attempt == 0:
                    turn.done()
            if not isinstance(claimed, Refusal) or claimed not in (Refusal.BEHIND, Refusal.EARLY):
                break
            # The write this message overtook is usually milliseconds behind: look again.
            self.sleep(pause)
        if isinstance(claimed, Refusal):
            return self._refused(staged, claimed)
        return Claim(staged, claimed, now)

    def run(self, claim: Claim) -> Ran:
        """Skip the claimed occurrence (see :meth:`_skip_reason`), or wait for its due time and
        call the targets that have not succeeded yet in this run. The tenant's signer is got
        before the wait: reading its secrets (a query and a KMS decrypt when the container has
        none cached) is spent in the staging lead, not after the due time."""
        task, staged = claim.claimed.task, claim.staged
        skipped = self._skip_reason(task, staged, claim.at_ms)
        if skipped is not None:
            return Ran(claim.claimed.targets_done, skipped=skipped)
        pending = [(i, t) for i, t in enumerate(task.targets) if not claim.claimed.targets_done & (1 << i)]
        if self.throttling is not None and (limited := self.throttling.limited(task.tenant, staged.run_id, pending)):
            return self._run_limited(claim, pending, limited, self.throttling)
        signing = self._signing(task, pending)
        wait = self._earliest(staged) - self.clock()
        if wait > 0:
            self.sleep(wait / 1000)
        fired = self.clock()
        done, outcomes = self._call(task, staged, claim.claimed, fired, pending, signing)
        return Ran(done, fired_ms=fired, outcomes=tuple(outcomes), called=tuple(i for i, _ in pending))

    def _run_limited(
        self,
        claim: Claim,
        pending: list[tuple[int, Target]],
        limited: tuple[Limited, ...],
        throttling: Throttling,
    ) -> Ran:
        """A run with targets under limits per destination (docs/receivers.md): book their start
        (a held copy come back has its start booked already); a start further than the staging
        lead puts the occurrence back on the delay queue; a nearer one is waited out. Before the
        call the limits are read once more: one changed meanwhile, or held by a receiver's
        Retry-After, books again, as does a run woken more than an interval after its start
        (GCRA's bound holds for calls that start within an interval of their booking). Then an
        in-flight slot each, the call, the slots back."""
        task, staged, done = claim.claimed.task, claim.staged, claim.claimed.targets_done
        ready = self._ready(claim)
        if staged.held and staged.start_ms is not None:
            start, booked = staged.start_ms, staged.booked
        else:
            reference = max(self._earliest(staged), self.clock())
            booking = throttling.book(task.tenant, staged.run_id, pending, reference)
            start, limited, booked = booking.start_ms, booking.limited, booking.booked
            if staged.ready_ms is None:
                ready = reference  # a slow claim is late, not throttled
        signing: tuple[Signer | None, str | None] | None = None
        late_again = False
        for _ in range(REBOOKINGS + 1):
            throttled = staged.throttled_ms + max(0, start - ready)
            now = self.clock()
            if start - now > self.timing.lead_ms + HOLD_SLACK_MS:
                delay = min(MAX_DELAY_SECONDS, delay_seconds(start, now, self.timing.lead_ms))
                return Ran(done, held=(staged.hold(start, booked, ready), delay), throttled_ms=throttled)
            signing = signing or self._signing(task, pending)
            wait = max(staged.due_ms, start) - now
            if wait > 0:
                self.sleep(wait / 1000)
            woke = self.clock()
            again = throttling.recheck(limited, booked, woke)
            if again is None and not late_again and woke - start > throttling.tolerance_ms(limited):
                # woken later than an interval after its start: calling now could crowd the next
                # second with the calls booked for it (a busy trigger, a late message); once
                late_again = True
                again = woke
            if again is None:
                break
            booking = throttling.book(task.tenant, staged.run_id, pending, again)
            start, limited, booked = booking.start_ms, booking.limited, booking.booked
        else:
            return Ran(done, held=(staged.hold(None, (), ready), SLOT_WAIT_S), throttled_ms=throttled)
        if not throttling.acquire(staged.run_id, limited, self.clock()):
            # every in-flight slot is taken: back in a second, to book again
            return Ran(done, held=(staged.hold(None, (), ready), SLOT_WAIT_S), throttled_ms=throttled)
        fired = self.clock()
        try:
            done, outcomes = self._call(task, staged, claim.claimed, fired, pending, signing)
        finally:
            throttling.release(staged.run_id, limited)
        return Ran(
            done,
            fired_ms=fired,
            outcomes=tuple(outcomes),
            called=tuple(i for i, _ in pending),
            throttled_ms=throttled,
            limited=limited,
        )

    def _ready(self, claim: Claim) -> int:
        """When this attempt would start were no target limited."""
        staged = claim.staged
        return staged.ready_ms if staged.ready_ms is not None else max(self._earliest(staged), claim.at_ms)

    @staticmethod
    def _earliest(staged: Staged) -> int:
        """No call of this attempt starts before: its due time, or a receiver's Retry-After
        that outlasted SQS's longest delay (a retry's ``start_ms``)."""
        return max(staged.due_ms, staged.start_ms or 0) if not staged.held else staged.due_ms

    def settle(self, claim: Claim, ran: Ran) -> Fired:
        """Record what the run did: skipped; succeeded (a one-shot's success waits for the
        batch's run log, :meth:`Batch.close`); retried later (every failure worth retrying and
        an attempt left); or failed for good (dead-lettered when its retries ran out)."""
        task, staged = claim.claimed.task, claim.staged
        if ran.held is not None:
            held, delay = ran.held
            self.stager.send([(held, delay)])
            back = held.start_ms if held.start_ms is not None else self.clock() + delay * 1000
            lease = back + self.timing.lease_ms
            self.store.record_hold(staged, lease_until_ms=lease, throttled_ms=ran.throttled_ms)
            return Fired(staged, Result.THROTTLED, reason=f"held back by a limit for {delay} s")
        if ran.skipped is not None:
            run = Run(
                staged.run_id,
                task.id,
                from_ms(staged.due_ms),
                RunStatus.SKIPPED,
                staged.attempt - 1,
                last_error=ran.skipped,
            )
            self._finish(claim.claimed, staged, run, ran.targets_done)
            return Fired(staged, Result.SKIPPED, reason=run.last_error)
        fired, done = ran.fired_ms, ran.targets_done
        lateness = fired - staged.due_ms
        # A run's lateness is its first attempt's (the API's word): a retry keeps what the first
        # recorded on the task's item (record_retry), not its own (which includes the backoff).
        earlier = task.run.lateness_ms if task.run is not None and task.run.run_id == staged.run_id else None
        run_lateness = earlier if staged.attempt > 1 and earlier is not None else lateness
        failures = [o for o in ran.outcomes if not o.ok]
        if not failures:
            self._chain(task, staged, RunStatus.SUCCEEDED, ran.outcomes)
            if staged.one_shot:
                counted_in = task.tenant if claim.claimed.counted else None
                success = Success(staged.run_id, fired, run_lateness, staged.attempt, counted_in, ran.throttled_ms)
                ended = Run(
                    staged.run_id, task.id, from_ms(staged.due_ms), RunStatus.SUCCEEDED, fired_at=from_ms(fired)
                )
                self._note_parent(task, ended)
                return Fired(staged, Result.SUCCEEDED, lateness, staged.attempt, success=success)
            run = Run(
                staged.run_id,
                task.id,
                from_ms(staged.due_ms),
                RunStatus.SUCCEEDED,
                staged.attempt,
                from_ms(fired),
                run_lateness,
                throttled_ms=ran.throttled_ms,
            )
            self._finish(claim.claimed, staged, run, done)
            return Fired(staged, Result.SUCCEEDED, lateness, staged.attempt)
        error = "; ".join(o.error or "failed" for o in failures)
        self._hold_limits(ran)
        if all(o.retryable for o in failures) and task.retry.has_attempt_after(staged.attempt):
            # The task's backoff, or longer when a receiver asked (Retry-After on a 429 or 503, up
            # to an hour): a wait past SQS's longest delay comes back early and is sent on again.
            # Due its backoff after this attempt was due (next_attempt_due: the backoff after this
            # one's end when its call outlasted it; never before a receiver's Retry-After), and
            # delivered as a first fire is: staged a lead early and held to the millisecond.
            now = self.clock()
            asked = [math.ceil(o.retry_after_s * 1000) for o in failures if o.retry_after_s is not None]
            start = next_attempt_due(task.retry, staged.attempt, self._earliest(staged), now, max(asked, default=None))
            following = replace(staged.next_attempt(ran.throttled_ms), start_ms=start)
            self.stager.send([(following, delay_seconds(start, now, self.timing.lead_ms))])
            self.store.record_retry(
                staged,
                error=error,
                targets_done=done,
                fired_ms=fired,
                lateness_ms=lateness,
                throttled_ms=ran.throttled_ms,
            )
            return Fired(staged, Result.RETRYING, lateness, staged.attempt, reason=error)
        exhausted = all(o.retryable for o in failures)
        status = RunStatus.DEAD_LETTERED if exhausted else RunStatus.FAILED
        reason = f"{'retries exhausted' if exhausted else 'failed'} after {staged.attempt} attempt(s): {error}"
        self._chain(task, staged, status, failures, error)
        self.stager.dead_letter(staged, reason, task.owner_id)
        self.dead_letters.record(dead_letter(task, staged, reason, self.clock()))
        run = Run(
            staged.run_id,
            task.id,
            from_ms(staged.due_ms),
            status,
            staged.attempt,
            from_ms(fired),
            run_lateness,
            error,
            throttled_ms=ran.throttled_ms,
        )
        in_a_row = self._finish(claim.claimed, staged, run, done)
        alerts = tuple(notices(task, staged.run_id, status, reason, in_a_row, self.clock()))
        return Fired(staged, Result(status.value), lateness, staged.attempt, reason=reason, alerts=alerts)

    def _hold_limits(self, ran: Ran) -> None:
        """A limited receiver that answered 429 or 503 with Retry-After spoke for its whole
        limit: no call to it starts before then (up to an hour)."""
        if self.throttling is None or not ran.limited:
            return
        by_index = {item.index: item for item in ran.limited}
        for index, outcome in zip(ran.called, ran.outcomes, strict=True):
            item = by_index.get(index)
            if item is not None and outcome.retry_after_s is not None:
                self.throttling.hold([item], self.clock() + math.ceil(outcome.retry_after_s * 1000))

    def _skip_reason(self, task: Task, staged: Staged, now: int) -> str | None:
        """Why a claimed occurrence is not fired (``None``: it fires): missed under the skip
        misfire policy, or a run now whose task was paused or cancelled before this claim (read
        after the claim, so a pause that answered before it is always seen)."""
        due = self._earliest(staged)  # a retry is judged from its own due start, not its occurrence's
        if misfire_decision(task.misfire, due, now, self.timing) is Decision.SKIP:
            return f"missed by {now - due} ms (misfire: skip)"
        if task.stops_with_parent and task.parent_id is not None:
            parent = self.store.status_of(task.parent_id)
            if parent in (TaskStatus.PAUSED, TaskStatus.CANCELLED, None):
                return f"its task was {parent.value if parent else 'deleted'} before this run fired"
        return None

    def abandon(self, staged: Staged, reason: str, log_id: str) -> Fired:
        """Give up an occurrence the trigger kept failing on (its message's last delivery):
        take its run, record it dead-lettered (in the table, where it can be redriven, and in
        the DLQ) and move the task on, as after a last failed attempt. Nothing is done when
        the run is over or stale (dropped), or cannot be taken now (``IN_FLIGHT``: the message
        fails once more and SQS moves it to the DLQ itself). ``log_id``: the batch whose
        attempt just failed; the lease that attempt took is taken over."""
        now = self.clock()
        lease = now + self.timing.lease_ms
        claimed = self.store.claim(staged, now_ms=now, lease_until_ms=lease, log_id=log_id, take_own=True)
        if isinstance(claimed, Refusal):
            over = claimed in (Refusal.STALE, Refusal.DONE)
            return Fired(staged, Result.DROPPED if over else Result.IN_FLIGHT, reason=claimed.value)
        task = claimed.task
        try:
            self._chain(task, staged, RunStatus.DEAD_LETTERED, (), reason)
        except Exception:  # the trigger may be failing on exactly this: the occurrence is given up still
            logger.exception("the chain of an abandoned occurrence was not started", extra={"run_id": staged.run_id})
        self.stager.dead_letter(staged, reason, task.owner_id)
        self.dead_letters.record(dead_letter(task, staged, reason, now))
        run = Run(
            staged.run_id, task.id, from_ms(staged.due_ms), RunStatus.DEAD_LETTERED, staged.attempt, last_error=reason
        )
        in_a_row = self._finish(claimed, staged, run, claimed.targets_done)
        alerts = tuple(notices(task, staged.run_id, RunStatus.DEAD_LETTERED, reason, in_a_row, self.clock()))
        return Fired(staged, Result.DEAD_LETTERED, attempts=staged.attempt, reason=reason, alerts=alerts)

    def _refused(self, staged: Staged, refusal: Refusal) -> Fired:
        if refusal is Refusal.EARLY or (
            refusal is Refusal.BEHIND and self.clock() < staged.due_ms + self.timing.misfire_tolerance_ms
        ):
            # Still not armed after the pauses: come back in a second (until the occurrence is
            # past its misfire tolerance: then whoever should have armed it never did).
            self.stager.send([(staged, 1)])
            return Fired(staged, Result.EARLY, reason=refusal.value)
        if refusal is Refusal.IN_FLIGHT:
            return Fired(staged, Result.IN_FLIGHT, reason=refusal.value)
        return Fired(staged, Result.DROPPED, reason=refusal.value)

    def _signing(self, task: Task, pending: list[tuple[int, Target]]) -> tuple[Signer | None, str | None]:
        """The signer of the task's HTTP calls, or why there is none (the calls are then not made)."""
        if self.signer is None or not any(isinstance(t, HttpTarget) for _, t in pending):
            return None, None
        try:
            return self.signer(task.tenant), None
        except StorageUnavailable as exc:
            return None, f"the signing secret could not be read: {exc.message}"

    def _call(
        self,
        task: Task,
        staged: Staged,
        claimed: Claimed,
        fired_ms: int,
        pending: list[tuple[int, Target]],
        signing: tuple[Signer | None, str | None],
    ) -> tuple[int, list[Outcome]]:
        signer, unsigned = signing
        envelope = Envelope(
            task.owner_id,
            staged.run_id,
            from_ms(staged.due_ms),
            from_ms(fired_ms),
            staged.attempt,
            task.payload,
            signer=signer,
            tenant=task.tenant,
            parent=task.chain.body() if task.chain is not None else None,
        )

        def deliver(target: Target) -> Outcome:
            if unsigned is not None and isinstance(target, HttpTarget):
                return Outcome.retry(unsigned)  # never an unsigned callback
            return self.deliverer.deliver(target, envelope)

        if len(pending) == 1:
            outcomes = [deliver(pending[0][1])]
        else:
            outcomes = list(self._pool.map(lambda it: deliver(it[1]), pending))
        done = claimed.targets_done
        for (index, _), outcome in zip(pending, outcomes, strict=True):
            if outcome.ok:
                done |= 1 << index
        return done, outcomes

    def _chain(
        self, task: Task, staged: Staged, status: RunStatus, outcomes: Sequence[Outcome], error: str | None = None
    ) -> None:
        """Start the tasks the occurrence's end chains to (docs/chains.md), before its end is
        recorded: a crash in between fires the occurrence again, and its second start of each
        hop finds the first (a hop's run id is derived from the parent run), so a child is
        neither lost nor run twice. The child receives the first answer body of this attempt
        (a success's, or the failure's)."""
        branch = branch_of(status)
        if self.chains is None or branch is None or not task.chained(branch):
            return
        answered = next((o.body for o in outcomes if o.body), b"")
        link = ChainLink(
            ParentRun(task.owner_id, staged.run_id, status),
            hop=(task.chain.hop if task.chain is not None else 0) + 1,
            response=response_of(answered),
            error=error,
        )
        for child_id in task.chained(branch):
            started = self.chains.start_chained(task, link, child_id, branch)
            logger.info(
                "chain",
                extra={
                    "run_id": staged.run_id,
                    "child": child_id,
                    "child_run_id": started.run_id,
                    "duplicate": started.duplicate,
                    "skipped": started.skipped,
                },
            )

    def _finish(self, claimed: Claimed, staged: Staged, run: Run, targets_done: int) -> int | None:
        """Record the run's final outcome; one that ends a counted task frees its place in its
        tenant's quota in the same write, as the task's failures in a row (and a pause they call
        for) go in it too. Returns those failures (None: left as they were)."""
        now, task = self.clock(), claimed.task
        streak = streak_after(task, run.status)
        self._note_parent(task, run)
        if staged.one_shot:
            counted_in = task.tenant if claimed.counted else None
            self.store.finish_one_shot(
                staged, run, now_ms=now, targets_done=targets_done, counted_in=counted_in, failures=streak.failures
            )
            return streak.failures
        following = next_occurrence(task.schedule, staged.due_ms, now, self.timing)
        stage_it = following is not None and streak.paused_reason is None and writer_stages(following, now, self.timing)
        if following is not None and stage_it:
            self.stager.stage([staged_for(task.id, following, one_shot=False, priority=task.priority)], now)
        self.store.rearm(
            task,
            staged,
            run,
            next_due_ms=following,
            staged_next=stage_it,
            now_ms=now,
            counted=claimed.counted,
            failures=streak.failures,
            paused_reason=streak.paused_reason,
        )
        return streak.failures

    def _note_parent(self, task: Task, run: Run) -> None:
        """An extra run (run now, a chained run, a redrive) is an occurrence of its parent too:
        its end is the parent's latest occurrence (``last_run``), and a success ends a failed
        parent completed. Nothing for a task's own occurrences (their item says it)."""
        if task.parent_id is not None:
            self.store.note_ended_run(task.parent_id, run)

    # Alerts: sent after the batch's outcomes are recorded ---------------------------------

    def send_alerts(self, alerts: Sequence[Notice]) -> None:
        """Send each alert (side by side); never raises: an alert that cannot be sent is logged."""
        if len(alerts) == 1:
            self._send_alert(alerts[0])
        elif alerts:
            list(self._pool.map(self._send_alert, alerts))

    def _send_alert(self, notice: Notice) -> None:
        ids = {"task_id": notice.task_id, "run_id": notice.run_id, "type": notice.type.value}
        try:
            if isinstance(notice.target, JobTarget):
                logger.warning("an alert cannot start a job", extra=ids)
                return
            target, signer = notice.target, None
            if isinstance(target, HttpTarget):
                target = replace(target, timeout_seconds=min(target.timeout_seconds, ALERT_TIMEOUT_S))
                if self.signer is not None:
                    signer = self.signer(notice.tenant)  # never an unsigned alert: a failure to read it is logged
            at = from_ms(notice.at_ms)
            for attempt, pause in enumerate(ALERT_RETRY_PAUSES_S, start=1):
                envelope = AlertEnvelope(
                    notice.task_id,
                    notice.key,
                    at,
                    at,
                    attempt,
                    signer=signer,
                    tenant=notice.tenant,
                    content=notice.body(),
                )
                outcome = self.deliverer.deliver(target, envelope)
                if outcome.ok:
                    return
                if not outcome.retryable or not pause:
                    break
                self.sleep(pause)
            logger.warning("an alert was not delivered", extra={**ids, "error": outcome.error, "attempts": attempt})
        except Exception:
            logger.exception("an alert was not sent", extra=ids)


CLAIM_TURN_WAIT_S = 1.0
"""A claim waits at most this long for the claims due before it (a slow write must not hold
up the rest of the batch)."""


@dataclass
class ClaimTurn:
    """A batch's claims go in due order, one at a time: a claim is mostly CPU (serializing,
    signing, parsing), and a small Lambda has a fraction of a vCPU, so claims running side by
    side would all finish late together; in turn, the earliest due is claimed first."""

    previous: threading.Event | None
    claimed: threading.Event = field(default_factory=threading.Event)

    def wait(self) -> None:
        if self.previous is not None:
            self.previous.wait(CLAIM_TURN_WAIT_S)

    def done(self) -> None:
        self.claimed.set()


@dataclass
class Batch:
    """One trigger invocation: its occurrences share one run log (docs/design.md, 2.4)."""

    trigger: Trigger
    log_id: str
    max_receives: int = DELAY_MAX_RECEIVES
    results: list[Fired] = field(default_factory=list)
    turns: dict[str, ClaimTurn] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take_turns(self, records: Sequence[tuple[str, Staged]]) -> None:
        """Order the claims of ``records`` (record id, occurrence) by due time."""
        previous: threading.Event | None = None
        for record_id, _ in sorted(records, key=lambda r: r[1].due_ms):
            turn = ClaimTurn(previous)
            self.turns[record_id] = turn
            previous = turn.claimed

    def fire(self, staged: Staged, record_id: str | None = None, receives: int = 1) -> Fired:
        """Fire the occurrence of the record ``record_id``, delivered for the ``receives``-th
        time. Whatever goes wrong is raised (the message comes back later), except on its last
        delivery: SQS would then move it to the DLQ and the task would wait on a run nobody
        finishes, so the occurrence is given up as a dead letter the API can redrive."""
        try:
            result = self.trigger.fire(staged, self.log_id, self.turns.get(record_id) if record_id else None)
        except Exception as exc:
            if receives < self.max_receives:
                raise
            reason = f"the trigger failed on it {receives} times: {type(exc).__name__}: {exc}"
            logger.exception("giving an occurrence up", extra={"run_id": staged.run_id})
            result = self.trigger.abandon(staged, reason, self.log_id)
        with self._lock:
            self.results.append(result)
        return result

    def close(self) -> None:
        """Record the batch's one-shot successes, then send its occurrences' alerts: after every
        outcome of the batch is on record, so a slow alert receiver never holds a success back
        past its lease (where a redelivered message would fire it again)."""
        try:
            self._record_successes()
        finally:
            self.trigger.send_alerts([alert for fired in self.results for alert in fired.alerts])

    def _record_successes(self) -> None:
        """Record the batch's one-shot successes: one write for all of them (or, if that write
        keeps failing, one each: a success must be on record before its lease runs out)."""
        successes = [r.success for r in self.results if r.success is not None]
        store = self.trigger.store
        for attempt in range(3):
            try:
                store.log_successes(self.log_id, successes, self.trigger.clock())
                return
            except StorageUnavailable:
                logger.warning("run log write failed", extra={"log_id": self.log_id, "attempt": attempt + 1})
                self.trigger.sleep(0.1 * 2**attempt)
        for fired in self.results:
            if fired.success is not None:
                s = fired.success
                run = Run(
                    s.run_id,
                    fired.staged.task_id,
                    from_ms(fired.staged.due_ms),
                    RunStatus.SUCCEEDED,
                    s.attempts,
                    from_ms(s.fired_ms),
                    s.lateness_ms,
                )
                store.finish_one_shot(
                    fired.staged,
                    run,
                    now_ms=self.trigger.clock(),
                    targets_done=-1,
                    counted_in=s.counted_in,
                    logged_in=self.log_id,
                )
