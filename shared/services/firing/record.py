"""Step 4 of an occurrence's life: write down what it came to (docs/design.md, 2.4; where each
write lands: 2.6, "Where a run lives"). Every write is conditional on the run it belongs to (the store's), so a late or
duplicate copy never moves an occurrence twice."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from shared.delivery import Outcome
from shared.domain.alerts import notices, streak_after
from shared.domain.chains import Branch, ChainLink, ParentRun, branch_of, response_of
from shared.domain.claims import Handled, Result
from shared.domain.errors import StorageUnavailable
from shared.domain.firing import Staged, Timing, next_occurrence, staged_for, writer_stages
from shared.domain.states import RunStatus
from shared.domain.tasks import DeadLetter, Run, Task
from shared.domain.times import from_ms, now_ms
from shared.domain.workflows import NodeOutcome, NodeStatus
from shared.observability import logger
from shared.services.firing.claim import Claim
from shared.services.firing.settle import Ended, Held, Retrying, Settlement, Skipped, Succeeded, ended_run
from shared.services.ports.pipeline import Chains, DelayQueues, PipelineStore
from shared.services.ports.scheduler_api import ScheduleEnds
from shared.services.ports.tasks import DeadLetters
from shared.services.ports.workflows import WorkflowEnds

RUN_LOG_WRITE_PAUSES_S = (0.1, 0.2, 0.4)
"""Pauses after each failed write of a batch's run log; then its successes are written one each."""


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
        workflow=task.workflow.ref if task.workflow is not None else None,
        schedule_arn=task.eventbridge.arn if task.eventbridge is not None else None,
    )


class Recorder:
    def __init__(
        self,
        store: PipelineStore,
        queues: DelayQueues,
        dead_letters: DeadLetters,
        timing: Timing,
        *,
        chains: Chains | None = None,
        workflows: WorkflowEnds | None = None,
        schedules: ScheduleEnds | None = None,
        clock: Callable[[], int] = now_ms,
        sleep: Callable[[float], None] = time.sleep,  # wall: pauses before DynamoDB is tried again
    ) -> None:
        self.store, self.queues, self.dead_letters, self.timing = store, queues, dead_letters, timing
        self.chains = chains
        """Starts the tasks an occurrence's end chains to (docs/chains.md); None: no chains."""
        self.workflows = workflows
        """Moves a workflow run on when one of its nodes ends (docs/workflows.md); None: no workflows."""
        self.schedules = schedules
        """Dead letters and completions of the EventBridge Scheduler API's schedules
        (docs/eventbridge.md, section 7); None: that API is not served."""
        self.clock, self.sleep = clock, sleep

    def record(self, claim: Claim, settled: Settlement) -> Handled:
        """Write the settlement down; the occurrence's answer to its delivery."""
        staged = claim.staged
        match settled:
            case Held():
                self.queues.send([(settled.message, settled.delay_s)])
                self.store.record_hold(staged, lease_until_ms=settled.lease_until_ms, throttled_ms=settled.throttled_ms)
                return Handled(staged, Result.THROTTLED, reason=f"held back by a limit for {settled.delay_s} s")
            case Skipped():
                self._finish(claim, settled.run, settled.targets_done)
                return Handled(staged, Result.SKIPPED, reason=settled.run.last_error)
            case Succeeded():
                return self._succeeded(claim, settled)
            case Retrying():
                self.queues.send([(settled.message, settled.delay_s)])
                self.store.record_retry(
                    staged,
                    error=settled.error,
                    targets_done=settled.targets_done,
                    fired_ms=settled.fired_ms,
                    lateness_ms=settled.lateness_ms,
                    throttled_ms=settled.throttled_ms,
                    started=settled.started,
                )
                return Handled(staged, Result.RETRYING, settled.lateness_ms, staged.attempt, reason=settled.error)
            case Ended():
                return self._ended(claim, settled)

    def _succeeded(self, claim: Claim, settled: Succeeded) -> Handled:
        """A one-shot's success waits for its batch's run log (:meth:`log_successes`); a
        recurring task's is written with its re-arm."""
        staged = claim.staged
        self._chain(claim, settled.run, settled.outcomes)
        self._node_ended(claim, settled.run, settled.outcomes)
        if settled.success is not None:
            self._note_parent(claim.claimed.task, settled.run)
            self._completed(claim.claimed.task)  # a one-shot's success is its last occurrence's end
        else:
            self._finish(claim, settled.run, settled.targets_done)
        return Handled(staged, Result.SUCCEEDED, settled.lateness_ms, staged.attempt, success=settled.success)

    def _ended(self, claim: Claim, settled: Ended, *, given_up: bool = False) -> Handled:
        """Dead-lettered or failed: its chains started, the dead letter kept (the table's, which
        the API redrives, and the DLQ's), the task moved on, and its alerts prepared."""
        task, staged, run = claim.claimed.task, claim.staged, settled.run
        try:
            self._chain(claim, run, settled.outcomes)
            self._node_ended(claim, run, settled.outcomes)
        except Exception:
            if not given_up:
                raise
            # the trigger may be failing on exactly this: the occurrence is given up still
            logger.exception(
                "the chain or workflow of an abandoned occurrence was not moved on", extra={"run_id": staged.run_id}
            )
        self.queues.dead_letter(staged, settled.reason, task.owner_id)
        self.dead_letters.record(dead_letter(task, staged, settled.reason, self.clock()))
        if self.schedules is not None and task.eventbridge is not None:
            self.schedules.dead_letter(task, staged, run.last_error, settled.exhausted)
        in_a_row = self._finish(claim, run, settled.targets_done)
        alerts = tuple(notices(task, staged.run_id, run.status, settled.reason, in_a_row, self.clock()))
        return Handled(
            staged, Result(run.status.value), settled.lateness_ms, staged.attempt, reason=settled.reason, alerts=alerts
        )

    def give_up(self, claim: Claim, settled: Ended) -> Handled:
        """Record an occurrence given up on its message's last delivery: as :meth:`record`, except
        that a chain that cannot be started does not stop it."""
        return self._ended(claim, settled, given_up=True)

    def _chain(self, claim: Claim, run: Run, outcomes: Sequence[Outcome]) -> None:
        """Start the tasks the occurrence's end chains to (docs/chains.md), before its end is
        recorded: a crash in between fires the occurrence again, and its second start of each
        hop finds the first (a hop's run id is derived from the parent run), so a child is
        neither lost nor run twice. The child receives the first answer body of this attempt
        (a success's, or the failure's)."""
        task, staged = claim.claimed.task, claim.staged
        branch = branch_of(run.status)
        if self.chains is None or branch is None or not task.chained(branch):
            return
        answered = next((o.body for o in outcomes if o.body), b"")
        link = ChainLink(
            ParentRun(task.owner_id, staged.run_id, run.status),
            hop=(task.chain.hop if task.chain is not None else 0) + 1,
            response=response_of(answered),
            error=run.last_error,
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

    def _node_ended(self, claim: Claim, run: Run, outcomes: Sequence[Outcome]) -> None:
        """A workflow node's run ended: its workflow run moves on (docs/workflows.md, section 3),
        before the end is recorded, for the reason :meth:`_chain` gives."""
        link, staged = claim.claimed.task.workflow, claim.staged
        branch = branch_of(run.status)
        if self.workflows is None or link is None or branch is None:
            return
        status = NodeStatus.SUCCEEDED if branch is Branch.SUCCESS else NodeStatus.FAILED
        answered = next((o.body for o in outcomes if o.body), b"")
        outcome = NodeOutcome(
            link.node,
            staged.run_id,
            status,
            response_of(answered),
            run.last_error if status is NodeStatus.FAILED else None,
            self.clock(),
        )
        self.workflows.node_ended(
            link.run_id, link.node, status, attempt=link.attempt, outcome=outcome, item_id=claim.claimed.task.id
        )

    def _finish(self, claim: Claim, run: Run, targets_done: int) -> int | None:
        """Record the run's final outcome; one that ends a counted task frees its place in its
        tenant's quota in the same write, as the task's failures in a row (and a pause they call
        for) go in it too. A recurring task is armed for its next occurrence (staged first when
        the scanners have passed it). Returns those failures (None: left as they were)."""
        now, task, staged, claimed = self.clock(), claim.claimed.task, claim.staged, claim.claimed
        streak = streak_after(task, run.status)
        self._note_parent(task, run)
        if staged.one_shot:
            counted_in = task.tenant if claimed.counted else None
            self.store.finish_one_shot(
                staged,
                run,
                now_ms=now,
                targets_done=targets_done,
                counted_in=counted_in,
                failures=streak.failures,
                task=task,
            )
            self._completed(task)
            return streak.failures
        following = next_occurrence(task.schedule, staged.due_ms, now, self.timing)
        stage_it = following is not None and streak.paused_reason is None and writer_stages(following, now, self.timing)
        if following is not None and stage_it:
            self.queues.stage([staged_for(task.id, following, one_shot=False, priority=task.priority)], now)
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
        if following is None:
            self._completed(task)
        return streak.failures

    def _completed(self, task: Task) -> None:
        """The task fired its last occurrence (an extra run is not one): a schedule made through
        the EventBridge Scheduler API may ask for its name to go. Whatever goes wrong here is
        logged and leaves the name: it never fails the occurrence's record, so never fires it
        again (a one-shot's success is logged with its batch's after this; a crash in between
        fires it again as any such crash does, and finds the name gone)."""
        if self.schedules is None or task.eventbridge is None or task.parent_id is not None:
            return
        try:
            self.schedules.completed(task)
        except Exception:
            logger.exception("a completed schedule's name was not removed", extra={"task_id": task.id})

    def _note_parent(self, task: Task, run: Run) -> None:
        """An extra run (run now, a chained run, a redrive) is an occurrence of its parent too:
        its end is the parent's latest occurrence (``last_run``), and a success ends a failed
        parent completed. Nothing for a task's own occurrences (their item says it)."""
        if task.parent_id is not None and task.workflow is None:  # a workflow is no task
            self.store.note_ended_run(task.parent_id, run)

    def log_successes(self, log_id: str, results: Sequence[Handled]) -> None:
        """Record a batch's one-shot successes: one write for all of them (or, if that write
        keeps failing, one each: a success must be on record before its lease runs out)."""
        successes = [r.success for r in results if r.success is not None]
        for attempt, pause in enumerate(RUN_LOG_WRITE_PAUSES_S, start=1):
            try:
                self.store.log_successes(log_id, successes, self.clock())
                return
            except StorageUnavailable:
                logger.warning("run log write failed", extra={"log_id": log_id, "attempt": attempt})
                self.sleep(pause)
        for fired in results:
            if (s := fired.success) is not None:
                run = ended_run(
                    fired.staged,
                    fired.staged.task_id,
                    RunStatus.SUCCEEDED,
                    attempts=s.attempts,
                    fired_ms=s.fired_ms,
                    lateness_ms=s.lateness_ms,
                )
                self.store.finish_one_shot(
                    fired.staged,
                    run,
                    now_ms=self.clock(),
                    targets_done=-1,
                    counted_in=s.counted_in,
                    logged_in=log_id,
                )
