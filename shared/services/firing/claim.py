"""Step 1 of an occurrence's life: take its run (docs/design.md, 2.4), or say why not.

A claim is one conditional write on the task's home item (the store's ``claim``). What is
decided here around it: the batch's claim turns (due order, one at a time), a message come back
before its start (sent on), a message that overtook the write arming its task (looked at again
after short pauses, then sent back a second later), and, once the run is ours, whether it fires
at all (missed under the skip misfire policy, or a run now whose task was paused).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field

from shared.domain.claims import WRITER_WINDOW_MS, Claimed, Handled, Refusal, Result
from shared.domain.firing import MAX_DELAY_SECONDS, Decision, Staged, Timing, delay_seconds, misfire_decision
from shared.domain.states import TaskStatus
from shared.domain.tasks import Priority, Task
from shared.domain.times import now_ms
from shared.services.ports.pipeline import DelayQueues, PipelineStore

CLAIM_RETRY_PAUSES_S = (0.05, 0.1, 0.2, 0.0)
"""Pauses between claim attempts refused as one of :data:`LOOKED_AGAIN` (the last attempt has none
after it)."""
WRITERS_PENDING = frozenset({Refusal.RESUMING, Refusal.RESCHEDULING})
"""Refusals of an occurrence whose writer (a resume, a PATCH to an earlier time) staged it and may
still write the task armed for it: looked at again until its writer's time is past."""
LOOKED_AGAIN = frozenset({Refusal.BEHIND, Refusal.EARLY}) | WRITERS_PENDING
"""Refusals of a write the message overtook, usually by milliseconds."""
HOLD_SLACK_MS = 1_000
"""A start further than the staging lead and this after now puts the occurrence back on the
delay queue (a limit's booking, or a retry's start past SQS's longest delay); a nearer one is
waited out, as a due time is."""
EARLY_BACKOFF = 4
"""A retry come back before the attempt before it was recorded looks again after a quarter of how
late it is (:meth:`Claimer._look_again_s`)."""
CLAIM_TURN_WAIT_S = 1.0
"""A claim waits at most this long for the claims due before it (a slow write must not hold
up the rest of the batch)."""


@dataclass(frozen=True)
class Claim:
    """An occurrence whose run this trigger took: it is ours until the lease runs out."""

    staged: Staged
    claimed: Claimed
    at_ms: int
    """When the claim was taken: whether the occurrence was missed is judged from it."""
    skipped: str | None = None
    """Why the run is not fired (None: it fires)."""


@dataclass
class ClaimTurn:
    """A batch's claims go in due order, one at a time: a claim is mostly CPU (serializing,
    signing, parsing), and a small Lambda has a fraction of a vCPU, so claims running side by
    side would all finish late together; in turn, the earliest due is claimed first."""

    previous: threading.Event | None
    claimed: threading.Event = field(default_factory=threading.Event)
    wait_s: float = CLAIM_TURN_WAIT_S

    def wait(self) -> None:
        if self.previous is not None:
            self.previous.wait(self.wait_s)

    def done(self) -> None:
        self.claimed.set()


def claim_turns(due_order: list[tuple[str, int]], wait_s: float = CLAIM_TURN_WAIT_S) -> dict[str, ClaimTurn]:
    """The claim turn of each record (record id, due ms), in due order."""
    turns: dict[str, ClaimTurn] = {}
    previous: threading.Event | None = None
    for record_id, _ in sorted(due_order, key=lambda r: r[1]):
        turns[record_id] = ClaimTurn(previous, wait_s=wait_s)
        previous = turns[record_id].claimed
    return turns


@dataclass
class Claimer:
    store: PipelineStore
    queues: DelayQueues
    timing: Timing
    clock: Callable[[], int] = now_ms
    sleep: Callable[[float], None] = time.sleep  # wall: waits for a write milliseconds behind in DynamoDB
    normal_claims: threading.BoundedSemaphore | None = None
    """How many normal-lane claims may be under way at once in this process (None: any). In AWS
    a trigger container serves one lane and claims in turn; the local runtime serves both lanes
    from one process against one moto, and sets it so that a high-priority claim waits for a
    few normal ones in moto, not for every one a flood has started (docs/receivers.md, 3)."""

    def claim(self, staged: Staged, log_id: str, turn: ClaimTurn | None = None) -> Claim | Handled:
        """Take the occurrence's run, in the batch's due order (``turn``). A claim refused
        because the message overtook the write that arms the task is tried again after a short
        pause; any other refusal is the occurrence's answer (:class:`Handled`) at once."""
        if turn is not None:
            turn.wait()
        if staged.start_ms is not None and staged.start_ms - self.clock() > self.timing.lead_ms + HOLD_SLACK_MS:
            if turn is not None:
                turn.done()
            return self._send_on(staged)
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
            if not isinstance(claimed, Refusal) or claimed not in LOOKED_AGAIN:
                break
            # The write this message overtook is usually milliseconds behind: look again.
            self.sleep(pause)
        if isinstance(claimed, Refusal):
            return self._refused(staged, claimed)
        return Claim(staged, claimed, now, claimed.superseded or self._skip_reason(claimed, staged, now))

    def take_over(self, staged: Staged, log_id: str) -> Claim | Handled:
        """Take the run to give it up (a message's last delivery): a lease held under ``log_id``
        (this batch's own failed attempt) is taken over; a run over or stale is dropped, and a
        run held elsewhere is left to SQS (``IN_FLIGHT``)."""
        now = self.clock()
        claimed = self.store.claim(
            staged, now_ms=now, lease_until_ms=now + self.timing.lease_ms, log_id=log_id, take_own=True
        )
        if isinstance(claimed, Refusal):
            over = claimed in (Refusal.STALE, Refusal.DONE)
            return Handled(staged, Result.DROPPED if over else Result.IN_FLIGHT, reason=claimed.value)
        return Claim(staged, claimed, now)

    def _send_on(self, staged: Staged) -> Handled:
        """Back before its start (a wait longer than SQS's longest delay): on its way again."""
        self.queues.send([(staged, delay_seconds(staged.start_ms or staged.due_ms, self.clock(), self.timing.lead_ms))])
        return Handled(staged, Result.THROTTLED if staged.held else Result.EARLY, reason="not yet")

    def _refused(self, staged: Staged, refusal: Refusal) -> Handled:
        now = self.clock()
        if (
            refusal is Refusal.EARLY
            or (refusal is Refusal.BEHIND and now < staged.due_ms + self.timing.misfire_tolerance_ms)
            or (refusal in WRITERS_PENDING and now <= (staged.writer_ms or 0) + WRITER_WINDOW_MS)
        ):
            # Still not armed after the pauses: come back later (until the occurrence is past its
            # misfire tolerance, or its writer is out of time: then whoever should have armed it
            # never did).
            self.queues.send([(staged, self._look_again_s(staged, refusal))])
            return Handled(staged, Result.EARLY, reason=refusal.value)
        if refusal is Refusal.IN_FLIGHT:
            return Handled(staged, Result.IN_FLIGHT, reason=refusal.value)
        return Handled(staged, Result.DROPPED, reason=refusal.value)

    def _look_again_s(self, staged: Staged, refusal: Refusal) -> int:
        """When a message that overtook a write comes back: in a second, as the write is usually
        milliseconds behind. A retry that keeps finding the attempt before it unrecorded waits
        longer the longer that lasts (a quarter of how late it is): that attempt's trigger died
        after sending it, and only its own message's redelivery, a visibility timeout later,
        records it. Without that, the retry came back every second for 12 minutes."""
        if refusal is not Refusal.EARLY:
            return 1
        late_s = (self.clock() - staged.earliest_ms) // 1000
        return max(1, min(MAX_DELAY_SECONDS, late_s // EARLY_BACKOFF))

    def _skip_reason(self, claimed: Claimed, staged: Staged, now: int) -> str | None:
        """Why a claimed occurrence is not fired (``None``: it fires): missed under the skip
        misfire policy, or a run now whose task was paused or cancelled before this claim (read
        after the claim, so a pause that answered before it is always seen)."""
        task, due = claimed.task, staged.earliest_ms  # a retry is judged from its own due start
        if misfire_decision(task.misfire, due, now, self.timing) is Decision.SKIP:
            return f"missed by {now - due} ms (misfire: skip)"
        return self._parent_stopped(task)

    def _parent_stopped(self, task: Task) -> str | None:
        if task.stops_with_parent and task.parent_id is not None:
            parent = self.store.status_of(task.parent_id)
            if parent in (TaskStatus.PAUSED, TaskStatus.CANCELLED, None):
                return f"its task was {parent.value if parent else 'deleted'} before this run fired"
        return None

    def stopped(self, claim: Claim) -> str | None:
        """Why a claimed occurrence must not fire after all, looked at just before its call (the
        claim is taken up to the staging lead before the due time): its task was cancelled
        meanwhile, or a recurring one paused (its next occurrence stays armed for the resume; a
        paused one-shot's run still fires, as its skip would complete a task that never ran), or
        the task a run now runs for was. None: it fires. One consistent read of the item (two
        for a run now), made only when the trigger waited."""
        task = claim.claimed.task
        status = self.store.status_of(task.id)
        if status in (TaskStatus.CANCELLED, None) or (status is TaskStatus.PAUSED and task.recurring):
            return f"its task was {status.value if status else 'deleted'} before this run fired"
        return self._parent_stopped(task)
