"""Step 2 of an occurrence's life: wait for its due time and call the targets that have not
succeeded yet in its run, within the limits per destination (docs/receivers.md)."""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from shared.delivery import Envelope, Outcome
from shared.domain.errors import StorageUnavailable
from shared.domain.firing import MAX_DELAY_SECONDS, Staged, Timing, delay_seconds
from shared.domain.schedules import nominal, scheduled_time
from shared.domain.signing import Signer
from shared.domain.tasks import HttpTarget, Target, Task
from shared.domain.times import from_ms, now_ms
from shared.domain.times import sleep as clock_sleep
from shared.services.firing.claim import HOLD_SLACK_MS, Claim
from shared.services.ports.pipeline import Delivery
from shared.services.throttling import Limited, Throttling

SLOT_WAIT_S = 1
"""An occurrence whose limit has all its in-flight slots taken comes back this much later."""
LOOK_BEFORE_MS = 50
"""A trigger that waits for a due time looks at its task again this long before it (a consistent
GetItem takes a few milliseconds in a Region): the window in which a cancel no longer stops the
call, against the staging lead's 2 s without the look."""
REBOOKINGS = 2
"""A run whose limits change (or are held) under it this often in the staging lead is put back."""

Look = Callable[[Claim], str | None]
"""Looks at a claimed occurrence's task again: why it must not fire now, or None."""
Signing = tuple[Signer | None, str | None]
"""The signer of a task's HTTP calls, or why there is none (then they are not made)."""


@dataclass(frozen=True)
class Ran:
    """What running a claimed occurrence did: skipped (and why), put back by a limit, or fired
    at ``fired_ms``."""

    targets_done: int
    """Bit i set: target i has succeeded in this run (in this attempt or an earlier one)."""
    skipped: str | None = None
    fired_ms: int = 0
    outcomes: tuple[Outcome, ...] = ()
    """The outcome of each target this attempt called."""
    held: tuple[Staged, int] | None = None
    """Put back by a limit: the held copy of the message and its delay (seconds)."""
    throttled_ms: int = 0
    """How long limits have held the run back, this attempt included."""


@dataclass
class Caller:
    deliverer: Delivery
    timing: Timing
    clock: Callable[[], int] = now_ms
    sleep: Callable[[float], None] = clock_sleep
    """Waits for a due time: the clock's (the local runtime's virtual clock moves it)."""
    signer: Callable[[str], Signer] | None = None
    """The tenant's signer (SigningService.signer): HTTP targets get signed calls; None: unsigned."""
    throttling: Throttling | None = None
    """Limits per destination (docs/receivers.md); None: no target is limited."""
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=16))
    """Calls the targets of a task with several, side by side."""

    def run(self, claim: Claim, stopped: Look | None = None) -> Ran:
        """Skip the claimed occurrence, or wait for its due time and call the targets that have
        not succeeded yet in this run. The tenant's signer is got before the wait: reading its
        secrets (a query, and a KMS decrypt or the root's first read, when the container has none
        cached) is spent in the staging lead, not after the due time. ``stopped``: looks at the
        task again after a wait (the claim's own look is older by then: :meth:`_waited_out`)."""
        task, staged = claim.claimed.task, claim.staged
        if claim.skipped is not None:
            return Ran(claim.claimed.targets_done, skipped=claim.skipped)
        pending = [(i, t) for i, t in enumerate(task.targets) if not claim.claimed.targets_done & (1 << i)]
        if self.throttling is not None and (limited := self.throttling.limited(task.tenant, staged.run_id, pending)):
            return self._run_limited(claim, pending, limited, self.throttling, stopped)
        signing = self._signing(task, pending)
        if (why := self._waited_out(claim, staged.earliest_ms, stopped)) is not None:
            return Ran(claim.claimed.targets_done, skipped=why)
        fired = self.clock()
        done, outcomes = self._call(claim, fired, pending, signing)
        return Ran(done, fired_ms=fired, outcomes=tuple(outcomes))

    def _waited_out(self, claim: Claim, at_ms: int, stopped: Look | None) -> str | None:
        """Wait until ``at_ms``, looking at the task once more :data:`LOOK_BEFORE_MS` before it:
        a cancel or a pause answered while the trigger waited (it claims up to the staging lead
        before the due time) stops the call. Why it is skipped, or None: it fires. The look is
        made early so that its read is not paid after the due time; a cancel answered after it,
        in those milliseconds before the call, no longer stops it. A wait shorter than that has
        the claim itself as its look."""
        wait = at_ms - self.clock()
        if wait <= 0:
            return None
        if stopped is not None and wait > LOOK_BEFORE_MS:
            self.sleep((wait - LOOK_BEFORE_MS) / 1000)
            if (why := stopped(claim)) is not None:
                return why
            wait = at_ms - self.clock()
        if wait > 0:
            self.sleep(wait / 1000)
        return None

    def _wait_until(self, at_ms: int) -> None:
        wait = at_ms - self.clock()
        if wait > 0:
            self.sleep(wait / 1000)

    def _run_limited(
        self,
        claim: Claim,
        pending: list[tuple[int, Target]],
        limited: tuple[Limited, ...],
        throttling: Throttling,
        stopped: Look | None = None,
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
            reference = max(staged.earliest_ms, self.clock())
            booking = throttling.book(task.tenant, staged.run_id, pending, reference)
            start, limited, booked = booking.start_ms, booking.limited, booking.booked
            if staged.ready_ms is None:
                ready = reference  # a slow claim is late, not throttled
        signing: Signing | None = None
        late_again, late_ms = False, 0
        for _ in range(REBOOKINGS + 1):
            # time a limit held the call: not the time the trigger itself woke late
            throttled = staged.throttled_ms + max(0, start - ready - late_ms)
            now = self.clock()
            if start - now > self.timing.lead_ms + HOLD_SLACK_MS:
                delay = min(MAX_DELAY_SECONDS, delay_seconds(start, now, self.timing.lead_ms))
                return Ran(done, held=(staged.hold(start, booked, ready), delay), throttled_ms=throttled)
            signing = signing or self._signing(task, pending)
            if (why := self._waited_out(claim, max(staged.due_ms, start), stopped)) is not None:
                return Ran(done, skipped=why, throttled_ms=throttled)
            woke = self.clock()
            again = throttling.recheck(limited, booked, woke)
            if again is None and not late_again and woke - start > throttling.tolerance_ms(limited):
                # woken later than an interval after its start: calling now could crowd the next
                # second with the calls booked for it (a busy trigger, a late message); once
                late_again, late_ms = True, woke - start
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
            done, outcomes = self._call(claim, fired, pending, signing)
        finally:
            throttling.release(staged.run_id, limited)
        self._hold_limits(throttling, limited, pending, outcomes)
        return Ran(done, fired_ms=fired, outcomes=tuple(outcomes), throttled_ms=throttled)

    def _ready(self, claim: Claim) -> int:
        """When this attempt would start were no target limited."""
        staged = claim.staged
        return staged.ready_ms if staged.ready_ms is not None else max(staged.earliest_ms, claim.at_ms)

    def _hold_limits(
        self,
        throttling: Throttling,
        limited: tuple[Limited, ...],
        called: list[tuple[int, Target]],
        outcomes: list[Outcome],
    ) -> None:
        """A limited receiver that answered 429 or 503 with Retry-After spoke for its whole
        limit: no call to it starts before then (up to an hour)."""
        by_index = {item.index: item for item in limited}
        for (index, _), outcome in zip(called, outcomes, strict=True):
            item = by_index.get(index)
            if item is not None and not outcome.ok and outcome.retry_after_s is not None:
                throttling.hold([item], self.clock() + math.ceil(outcome.retry_after_s * 1000))

    def _signing(self, task: Task, pending: list[tuple[int, Target]]) -> Signing:
        if self.signer is None or not any(isinstance(t, HttpTarget) for _, t in pending):
            return None, None
        try:
            return self.signer(task.tenant), None
        except StorageUnavailable as exc:
            return None, f"the signing secret could not be read: {exc.message}"

    def _call(
        self, claim: Claim, fired_ms: int, pending: list[tuple[int, Target]], signing: Signing | None
    ) -> tuple[int, list[Outcome]]:
        """Call ``pending`` (side by side when several); the run's targets done after it."""
        task, staged = claim.claimed.task, claim.staged
        signer, unsigned = signing or (None, None)
        envelope = Envelope(
            task.owner_id,
            staged.run_id,
            # a flexible window's drawn moment is not it; an EventBridge-made one-shot's is the time written, as
            # is an extra run's (At(now), but a backfill's run is At(<the past occurrence it fires>))
            (scheduled_time if task.eventbridge is not None or task.parent_id is not None else nominal)(
                task.schedule, from_ms(staged.due_ms)
            ),
            from_ms(fired_ms),
            staged.attempt,
            task.payload,
            signer=signer,
            tenant=task.tenant,
            parent=task.chain.body() if task.chain is not None else None,
            workflow=task.workflow.body() if task.workflow is not None else None,
            schedule_arn=task.eventbridge.arn if task.eventbridge is not None else None,
        )

        def deliver(target: Target) -> Outcome:
            if unsigned is not None and isinstance(target, HttpTarget):
                return Outcome.retry(unsigned)  # never an unsigned callback
            return self.deliverer.deliver(target, envelope)

        if len(pending) == 1:
            outcomes = [deliver(pending[0][1])]
        else:
            outcomes = list(self._pool.map(lambda it: deliver(it[1]), pending))
        done = claim.claimed.targets_done
        for (index, _), outcome in zip(pending, outcomes, strict=True):
            if outcome.ok:
                done |= 1 << index
        return done, outcomes
