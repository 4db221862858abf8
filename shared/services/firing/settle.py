"""Step 3 of an occurrence's life: decide what its attempt came to. Pure: it reads the claim,
what the call did and the time, and answers one :data:`Settlement`, which step 4
(shared/services/firing/record.py) writes down. Every run it ends is built here, by
:func:`ended_run`."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from shared.delivery import Outcome
from shared.domain.claims import Success
from shared.domain.firing import Staged, Timing, delay_seconds
from shared.domain.retry import Exhausted, next_attempt_due
from shared.domain.states import RunStatus
from shared.domain.tasks import Run
from shared.domain.times import from_ms
from shared.services.firing.call import Ran
from shared.services.firing.claim import Claim


def ended_run(
    staged: Staged,
    task_id: str,
    status: RunStatus,
    *,
    attempts: int,
    fired_ms: int | None = None,
    lateness_ms: int | None = None,
    error: str | None = None,
    throttled_ms: int = 0,
    started: tuple[str, ...] = (),
) -> Run:
    """The record of the run of ``staged`` (an occurrence of ``task_id``), ended as ``status``."""
    return Run(
        staged.run_id,
        task_id,
        from_ms(staged.due_ms),
        status,
        attempts,
        fired_at=from_ms(fired_ms) if fired_ms is not None else None,
        lateness_ms=lateness_ms,
        last_error=error,
        throttled_ms=throttled_ms,
        started=started,
    )


def started_so_far(claim: Claim, outcomes: tuple[Outcome, ...] = ()) -> tuple[str, ...]:
    """What the run's targets have started: its earlier attempts' (on its task's item) and this
    attempt's calls'."""
    task, staged = claim.claimed.task, claim.staged
    earlier = task.run.started if task.run is not None and task.run.run_id == staged.run_id else ()
    return earlier + tuple(o.started for o in outcomes if o.started is not None)


@dataclass(frozen=True)
class Held:
    """Put back by a limit per destination: the held copy goes back on the delay queue, and the
    run waits for it (its attempt not used), leased until it is back."""

    message: Staged
    delay_s: int
    lease_until_ms: int
    throttled_ms: int


@dataclass(frozen=True)
class Skipped:
    run: Run
    targets_done: int


@dataclass(frozen=True)
class Succeeded:
    run: Run
    targets_done: int
    lateness_ms: int
    """This attempt's lateness (the run's is its first attempt's: ``run.lateness_ms``)."""
    outcomes: tuple[Outcome, ...]
    success: Success | None
    """A one-shot's success, recorded with its batch's others in one run log (the run itself
    is not written); None: a recurring task's, recorded on its own."""


@dataclass(frozen=True)
class Retrying:
    """Every failure may be retried and an attempt is left: the next one is sent, due ``start``."""

    message: Staged
    delay_s: int
    error: str
    targets_done: int
    fired_ms: int
    lateness_ms: int
    throttled_ms: int
    started: tuple[str, ...] = ()
    """What the run's targets have started so far (kept on its task's item for the next attempt)."""


@dataclass(frozen=True)
class Ended:
    """Failed for good (dead-lettered when its retries ran out, or given up by the trigger)."""

    run: Run
    targets_done: int
    reason: str
    """Why, as the dead letter and the alerts say."""
    lateness_ms: int | None
    outcomes: tuple[Outcome, ...] = ()
    """What chains to the run's failure branch receive (the failed calls' answers)."""
    exhausted: Exhausted | None = None
    """Which bound ended its retries (None: a final failure, or given up by the trigger)."""


Settlement = Held | Skipped | Succeeded | Retrying | Ended


def settle(claim: Claim, ran: Ran, now_ms: int, timing: Timing) -> Settlement:
    """What the attempt came to: held back, skipped, succeeded, to be retried, or ended."""
    staged = claim.staged
    if ran.held is not None:
        held, delay = ran.held
        back = held.start_ms if held.start_ms is not None else now_ms + delay * 1000
        return Held(held, delay, back + timing.lease_ms, ran.throttled_ms)
    if ran.skipped is not None:
        run = ended_run(
            staged, claim.claimed.task.id, RunStatus.SKIPPED, attempts=staged.attempt - 1, error=ran.skipped
        )
        return Skipped(run, ran.targets_done)
    if all(o.ok for o in ran.outcomes):
        return _succeeded(claim, ran)
    return _failed(claim, ran, now_ms, timing)


def _run_lateness(claim: Claim, lateness: int) -> int:
    """A run's lateness is its first attempt's (the API's word): a retry keeps what the first
    recorded on the task's item (record_retry), not its own (which includes the backoff)."""
    task, staged = claim.claimed.task, claim.staged
    earlier = task.run.lateness_ms if task.run is not None and task.run.run_id == staged.run_id else None
    return earlier if staged.attempt > 1 and earlier is not None else lateness


def _succeeded(claim: Claim, ran: Ran) -> Succeeded:
    task, staged = claim.claimed.task, claim.staged
    lateness = ran.fired_ms - staged.due_ms
    run_lateness = _run_lateness(claim, lateness)
    run = ended_run(
        staged,
        task.id,
        RunStatus.SUCCEEDED,
        attempts=staged.attempt,
        fired_ms=ran.fired_ms,
        lateness_ms=run_lateness,
        throttled_ms=ran.throttled_ms,
        started=started_so_far(claim, ran.outcomes),
    )
    success = None
    if staged.one_shot and not run.started:  # the ARNs are written with the run, not a batch's run log
        counted_in = task.tenant if claim.claimed.counted else None
        success = Success(staged.run_id, ran.fired_ms, run_lateness, staged.attempt, counted_in, ran.throttled_ms)
    return Succeeded(run, ran.targets_done, lateness, ran.outcomes, success)


def _failed(claim: Claim, ran: Ran, now_ms: int, timing: Timing) -> Retrying | Ended:
    """Retried when every failure may be and an attempt is left: due the task's backoff, or
    longer when a receiver asked (Retry-After on a 429 or 503, up to an hour; a wait past SQS's
    longest delay comes back early and is sent on again). Due its backoff after this attempt
    was due (next_attempt_due: the backoff after this one's end when its call outlasted it;
    never before a receiver's Retry-After), and delivered as a first fire is: staged a lead
    early and held to the millisecond. Else ended: dead-lettered when its retries ran out,
    failed when a failure was final."""
    task, staged = claim.claimed.task, claim.staged
    failures = [o for o in ran.outcomes if not o.ok]
    error = "; ".join(o.error for o in failures if o.error is not None)  # a failure always says why
    lateness = ran.fired_ms - staged.due_ms
    retryable = all(o.retryable for o in failures)
    exhausted = Exhausted.ATTEMPTS if retryable else None
    if retryable and task.retry.has_attempt_after(staged.attempt):
        asked = [math.ceil(o.retry_after_s * 1000) for o in failures if o.retry_after_s is not None]
        start = next_attempt_due(task.retry, staged.attempt, staged.earliest_ms, now_ms, max(asked, default=None))
        if not task.retry.too_old(staged.due_ms, start):
            following = replace(staged.next_attempt(ran.throttled_ms), start_ms=start)
            delay = delay_seconds(start, now_ms, timing.lead_ms)
            started = started_so_far(claim, ran.outcomes)
            return Retrying(
                following, delay, error, ran.targets_done, ran.fired_ms, lateness, ran.throttled_ms, started
            )
        exhausted = Exhausted.AGE
    status = RunStatus.DEAD_LETTERED if retryable else RunStatus.FAILED
    why = {None: "failed", Exhausted.ATTEMPTS: "retries exhausted", Exhausted.AGE: "too old to retry"}[exhausted]
    reason = f"{why} after {staged.attempt} attempt(s): {error}"
    run = ended_run(
        staged,
        task.id,
        status,
        attempts=staged.attempt,
        fired_ms=ran.fired_ms,
        lateness_ms=_run_lateness(claim, lateness),
        error=error,
        throttled_ms=ran.throttled_ms,
        started=started_so_far(claim, ran.outcomes),
    )
    return Ended(run, ran.targets_done, reason, lateness, tuple(failures), exhausted)


def given_up(claim: Claim, reason: str) -> Ended:
    """An occurrence the trigger kept failing on, on its message's last delivery: dead-lettered
    (where the API can redrive it) rather than left to SQS's DLQ with its task waiting on it."""
    staged = claim.staged
    run = ended_run(
        staged,
        claim.claimed.task.id,
        RunStatus.DEAD_LETTERED,
        attempts=staged.attempt,
        error=reason,
        started=started_so_far(claim),
    )
    return Ended(run, claim.claimed.targets_done, reason, None)
