"""Claiming and firing a staged occurrence (docs/design.md, section 2.4): what a claim answers,
what a successful one-shot run leaves for its batch's run log, and what became of the delivery.
Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from shared.domain.alerts import Notice
from shared.domain.firing import Staged
from shared.domain.states import RunStatus
from shared.domain.tasks import Task


class Refusal(StrEnum):
    """Why a staged occurrence was not claimed. What becomes of its message depends on the
    refusal (``Claimer._refused``): STALE and DONE drop it, IN_FLIGHT fails it so that SQS
    delivers it again after the lease, EARLY sends it back for later, and BEHIND looks again
    after short pauses, then sends it back until the misfire tolerance is past (then drops it);
    RESUMING and RESCHEDULING as BEHIND, until its writer's time is past."""

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
    RESUMING = "resuming"
    """The task is paused, and a writer staged this occurrence since the pause: a resume, which
    stages before it writes (:func:`writer_may_still_arm`). Looked at again like BEHIND, until the
    writer is out of time (:data:`WRITER_WINDOW_MS`); then dropped."""
    RESCHEDULING = "rescheduling"
    """The task is armed for a later time, and a writer staged this occurrence since the task's
    last change by a client: a PATCH to an earlier time, which stages before it writes
    (:func:`writer_may_still_arm`). Looked at again as RESUMING is, then dropped."""


WRITER_WINDOW_MS = 30_000
"""How long after a writer staged an occurrence its own write may still land: longer than any
invocation that writes a task (the API function's timeout is 10 s, and API Gateway stops waiting
at 29 s: shared/topology.py; Lambda stops a function at its timeout,
https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html). A task still not armed
for the occurrence after it never will be by that writer."""


def writer_may_still_arm(staged: Staged, *, updated_ms: int, ran: bool, now_ms: int) -> bool:
    """Whether a first attempt its writer staged, refused because its task is not armed for it
    (paused, or armed for a later time), may yet be armed: a resume and a PATCH stage before they
    write, so the message can reach a trigger before the write that arms the task (RESUMING or
    RESCHEDULING, not STALE: dropped, it would leave the task armed for an occurrence no message
    fires; the explorer's pause-resume and patch-earlier cases found each).

    Only a message staged at or after the task's last change by a client (``updated_ms``) can be
    that writer's: one staged before it (the occurrence a pause or a later PATCH did away with) is
    stale at once. ``ran``: the task's run is this occurrence's (a late copy). Both times are
    API function clocks, on hosts that may differ: this assumes they agree to well within the round
    trip between one client's answer and the next writer's staging (AWS documents no bound for
    Lambda; were a writer's clock behind by more, its message would be dropped as before the rule)."""
    if staged.attempt != 1 or staged.held or staged.writer_ms is None or ran:
        return False
    return updated_ms <= staged.writer_ms and now_ms <= staged.writer_ms + WRITER_WINDOW_MS


def armed_elsewhere(armed_due_ms: int, staged: Staged, *, updated_ms: int, ran: bool, now_ms: int) -> Refusal:
    """What a claim answers for a scheduled task armed for another time than the message's:
    armed earlier, its writer moving it to this later time may not have written yet (BEHIND);
    armed later, a PATCH to this earlier time may not have (RESCHEDULING, while its writer may
    still arm it); else the message is another time's (STALE)."""
    if armed_due_ms < staged.due_ms:
        return Refusal.BEHIND
    if writer_may_still_arm(staged, updated_ms=updated_ms, ran=ran, now_ms=now_ms):
        return Refusal.RESCHEDULING
    return Refusal.STALE


@dataclass(frozen=True)
class Claimed:
    task: Task
    targets_done: int
    """Bit i set: target i already succeeded in an earlier attempt of this run."""
    log_id: str
    counted: bool = False
    """The task is counted in its tenant's quota (shared/domain/quota.py): the run's final
    outcome, if it ends the task, gives its place back."""
    superseded: str | None = None
    """Why the run was taken only to be ended, not fired: its task was cancelled or rescheduled
    while the run waited for a retry, or while it was firing and its trigger died
    (:func:`superseded`). None: a run to fire."""


def superseded(
    *,
    cancelled: bool,
    rescheduled: bool,
    run_status: str | None,
    attempts: int | None,
    lease_until_ms: int | None,
    staged_attempt: int,
    held: bool,
    now_ms: int,
) -> str | None:
    """Whether a run its message found no longer armed must be ended by that message: its task
    was cancelled, or rescheduled by its client, while the run waited for its next attempt (this
    message) or while it was firing and its trigger died (the lease ran out, and this is its
    message come back). Nobody else will end it: the message is the last copy. Why, or None."""
    if not (cancelled or rescheduled):
        return None
    throttled = run_status == RunStatus.THROTTLED.value
    waiting = run_status in WAITING and attempts == staged_attempt - 1 and throttled == held
    died = run_status == RunStatus.FIRING.value and attempts == staged_attempt and (lease_until_ms or 0) < now_ms
    if not (waiting or died):
        return None
    how = "cancelled" if cancelled else "rescheduled"
    when = (
        "it waited for its next attempt"
        if waiting
        else "it was firing and its trigger stopped (its call's outcome is unknown)"
    )
    return f"its task was {how} while {when}: not fired again"


WAITING = (RunStatus.RETRYING.value, RunStatus.THROTTLED.value)


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
class Handled:
    """What the trigger made of one delivery of a staged occurrence. Fired or not, as ``result``
    says: a call was made (succeeded, retrying, failed, dead-lettered: with its ``lateness_ms``)
    or none (skipped, dropped as a duplicate or stale, sent back early, held by a limit, in
    flight elsewhere)."""

    staged: Staged
    result: Result
    lateness_ms: int | None = None
    attempts: int = 0
    reason: str | None = None
    success: Success | None = None
    alerts: tuple[Notice, ...] = ()
    """Alerts to send once the batch's outcomes are recorded (shared/domain/alerts.py)."""
