"""The trigger: one occurrence's life, top to bottom (docs/design.md, 2.4 and 2.5).

    claim  (claim.py)   take the run, or say why not; decide whether it fires at all
    call   (call.py)    wait for the due time, call the targets not yet done, within limits
    settle (settle.py)  what the attempt came to: held, skipped, succeeded, retrying, ended
    record (record.py)  write it down, conditional on the run; chains, dead letters, re-arm

A :class:`Batch` is one trigger invocation: its claims go in due order, its one-shot successes
share one run-log write, and its alerts are sent once all of it is on record (alerts.py).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shared.domain.claims import Handled
from shared.domain.firing import Staged
from shared.domain.times import now_ms
from shared.observability import logger
from shared.services.firing.alerts import AlertSender
from shared.services.firing.call import Caller
from shared.services.firing.claim import Claimer, ClaimTurn, claim_turns
from shared.services.firing.record import Recorder
from shared.services.firing.settle import given_up, settle
from shared.topology import DELAY_MAX_RECEIVES


@dataclass
class Trigger:
    claimer: Claimer
    caller: Caller
    recorder: Recorder
    alerts: AlertSender
    clock: Callable[[], int] = now_ms
    max_receives: int = DELAY_MAX_RECEIVES
    """Deliveries of a delay-queue message before SQS dead-letters it (the queues' setting): on
    the last one a batch gives the occurrence up (:meth:`Batch.fire`)."""

    def fire(self, staged: Staged, log_id: str, turn: ClaimTurn | None = None) -> Handled:
        claim = self.claimer.claim(staged, log_id, turn)
        if isinstance(claim, Handled):
            return claim
        ran = self.caller.run(claim, self.claimer.stopped)
        return self.recorder.record(claim, settle(claim, ran, self.clock(), self.caller.timing))

    def abandon(self, staged: Staged, reason: str, log_id: str) -> Handled:
        """Give up an occurrence the trigger kept failing on (its message's last delivery):
        take its run, record it dead-lettered (in the table, where it can be redriven, and in
        the DLQ) and move the task on, as after a last failed attempt. Nothing is done when
        the run is over or stale (dropped), or cannot be taken now (``IN_FLIGHT``: the message
        fails once more and SQS moves it to the DLQ itself). ``log_id``: the batch whose
        attempt just failed; the lease that attempt took is taken over."""
        claim = self.claimer.take_over(staged, log_id)
        if isinstance(claim, Handled):
            return claim
        return self.recorder.give_up(claim, given_up(claim, reason))

    def new_batch(self) -> Batch:
        return Batch(self, uuid.uuid4().hex)


@dataclass
class Batch:
    """One trigger invocation: its occurrences share one run log (docs/design.md, 2.4)."""

    trigger: Trigger
    log_id: str
    results: list[Handled] = field(default_factory=list)
    turns: dict[str, ClaimTurn] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def max_receives(self) -> int:
        return self.trigger.max_receives

    def take_turns(self, records: Sequence[tuple[str, Staged]]) -> None:
        """Order the claims of ``records`` (record id, occurrence) by due time."""
        self.turns = claim_turns([(record_id, staged.due_ms) for record_id, staged in records])

    def fire(self, staged: Staged, record_id: str | None = None, receives: int = 1) -> Handled:
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
            self.trigger.recorder.log_successes(self.log_id, self.results)
        finally:
            self.trigger.alerts.send([alert for fired in self.results for alert in fired.alerts])
