"""What the firing pipeline reads and writes (docs/design.md, sections 2.2-2.4); implements
shared.services.ports.pipeline.PipelineStore.

Every write here is conditional on the run it belongs to, so a duplicate delivery, a second
scanner's copy or a late retry can never move an occurrence twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from pynamodb.exceptions import DoesNotExist, PynamoDBException
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from shared.domain.claims import Claimed, Refusal, Success, armed_elsewhere, superseded, writer_may_still_arm
from shared.domain.errors import StorageUnavailable
from shared.domain.firing import Staged
from shared.domain.quota import freed
from shared.domain.states import RunStatus, TaskStatus, ended_as, watched_state
from shared.domain.tasks import Run, Task
from shared.domain.times import from_ms, to_ms
from shared.observability import logger
from shared.store import status_index
from shared.store.items import keys_in_status, occurrence_item, status_keys, to_task
from shared.store.keys import task_key
from shared.store.models import BucketItem, RunLogItem, TaskItem, is_conflict
from shared.store.quota import TenantQuota, failed_conditions, free, transact
from shared.store.runs import ended_run_json, run_item, run_logs, started_actions, throttled_actions
from shared.store.scanning import DynamoScans

FIRING = RunStatus.FIRING.value
SCHEDULED = TaskStatus.SCHEDULED.value
PAUSED = TaskStatus.PAUSED.value
CANCELLED = TaskStatus.CANCELLED.value


def _home(task_id: str) -> TaskItem:
    pk, sk = task_key(task_id)
    return TaskItem(pk, sk)


def _same_run(staged: Staged) -> Condition:
    return (
        (TaskItem.run_id == staged.run_id)
        & (TaskItem.run_due_ms == staged.due_ms)
        & (TaskItem.attempts == staged.attempt)
        & (TaskItem.run_status == FIRING)
    )


def _put_away(staged: Staged, run: Run, failures: int | None) -> list[Action]:
    """A recurring task's ended occurrence off its item's run fields (its run record is
    written): kept in brief as the task's ``ended_run``, with its failures in a row."""
    actions: list[Action] = [
        TaskItem.run_status.remove(),
        TaskItem.lease_until_ms.remove(),
        TaskItem.run_log.remove(),
        TaskItem.targets_done.remove(),
        TaskItem.last_error.remove(),
        TaskItem.fired_ms.remove(),
        TaskItem.lateness_ms.remove(),
        TaskItem.throttled_ms.remove(),
        TaskItem.run_started.remove(),
        TaskItem.ended_run.set(ended_run_json(run)),
        TaskItem.ended_run_ms.set(staged.due_ms),
    ]
    if failures is not None:
        actions.append(TaskItem.failures.set(failures))
    return actions


def _armed_for(
    next_due_ms: int, staged_next: bool, paused_reason: str | None, paused_keys: tuple[str, str] | None
) -> list[Action]:
    """The item armed for its task's next occurrence (staged by the re-arm or left to the
    scanners), paused with ``paused_reason`` when its failures in a row call for it (and put in
    the status index with ``paused_keys``: docs/status-index.md)."""
    actions: list[Action] = [
        TaskItem.due_ms.set(next_due_ms),
        TaskItem.next_fire_ms.set(next_due_ms),
        TaskItem.staged_ms.set(next_due_ms) if staged_next else TaskItem.staged_ms.remove(),
    ]
    if paused_reason is not None:
        actions += [TaskItem.status.set(TaskStatus.PAUSED.value), TaskItem.paused_reason.set(paused_reason)]
        actions += status_index.actions(TaskItem, paused_keys)
    return actions


def _superseded(current: TaskItem, staged: Staged, now_ms: int) -> str | None:
    """Why this message must end its run unfired (shared.domain.claims.superseded), or None."""
    if current.run_id != staged.run_id or current.run_due_ms != staged.due_ms:
        return None
    why = superseded(
        cancelled=current.status == CANCELLED,
        rescheduled=current.status == SCHEDULED and current.due_ms != staged.due_ms,
        run_status=current.run_status,
        attempts=int(current.attempts) if current.attempts is not None else None,
        lease_until_ms=int(current.lease_until_ms) if current.lease_until_ms is not None else None,
        staged_attempt=staged.attempt,
        held=staged.held,
        now_ms=now_ms,
    )
    return None if why is None or (current.run_status == FIRING and _logged(current, staged.run_id)) else why


def _logged(current: TaskItem, run_id: str) -> bool:
    """Whether the run log of the item's firing batch lists ``run_id``: it succeeded (a GetItem)."""
    logs = run_logs([current])
    return current.run_log in logs and run_id in logs[current.run_log].runs


class DynamoPipelineStore(DynamoScans):
    def __init__(self, retention_ms: int, list_shards: int = 1) -> None:
        self.retention_ms = retention_ms
        self.list_shards = list_shards
        """The deployment's list shards: a task's status index entry goes to its list shard's
        partition (docs/status-index.md), as the task repository's writes put it."""

    # --- claiming -------------------------------------------------------------------------

    def claim(
        self, staged: Staged, *, now_ms: int, lease_until_ms: int, log_id: str, take_own: bool = False
    ) -> Claimed | Refusal:
        """Take the run of a staged occurrence: one conditional write (docs/design.md, 2.4).
        ``take_own``: a lease held under ``log_id`` (this trigger batch's, a failed attempt of
        its own) does not stop the claim."""
        item = _home(staged.task_id)
        armed = (TaskItem.status == SCHEDULED) & (TaskItem.due_ms == staged.due_ms)
        if staged.held:
            # put back by a limit: its run waits, throttled, for this message (no attempt used)
            mine = (
                (TaskItem.run_id == staged.run_id)
                & (TaskItem.run_due_ms == staged.due_ms)
                & (TaskItem.run_status == RunStatus.THROTTLED.value)
                & (TaskItem.attempts == staged.attempt - 1)
            )
            actions: list[Action] = []
        elif staged.attempt == 1:
            mine = TaskItem.run_due_ms.does_not_exist() | (TaskItem.run_due_ms != staged.due_ms)
            actions = [  # a new run: what an earlier one left (abandoned mid-retry) is not its
                TaskItem.targets_done.set(0),
                TaskItem.last_error.remove(),
                TaskItem.fired_ms.remove(),
                TaskItem.lateness_ms.remove(),
                TaskItem.throttled_ms.remove(),
                TaskItem.run_started.remove(),
            ]
        else:
            mine = (
                (TaskItem.run_id == staged.run_id)
                & (TaskItem.run_due_ms == staged.due_ms)
                & (TaskItem.run_status == RunStatus.RETRYING.value)
                & (TaskItem.attempts == staged.attempt - 1)
            )
            actions = []
        actions += [
            TaskItem.run_due_ms.set(staged.due_ms),
            TaskItem.run_id.set(staged.run_id),
            TaskItem.run_status.set(FIRING),
            TaskItem.attempts.set(staged.attempt),
            TaskItem.lease_until_ms.set(lease_until_ms),
            TaskItem.run_log.set(log_id),
            TaskItem.version.add(1),
        ]
        if staged.one_shot:
            actions.append(TaskItem.expires_at.set(self._expiry(now_ms)))
        try:
            item.update(actions=actions, condition=armed & mine)
            return Claimed(to_task(item), int(item.targets_done or 0), log_id, bool(item.counted))
        except PynamoDBException as exc:
            if not is_conflict(exc):
                raise StorageUnavailable(f"claim of {staged.run_id}: {exc.msg}") from exc
        return self._reclaim(staged, now_ms=now_ms, lease_until_ms=lease_until_ms, log_id=log_id, take_own=take_own)

    def _reclaim(
        self, staged: Staged, *, now_ms: int, lease_until_ms: int, log_id: str, take_own: bool
    ) -> Claimed | Refusal:
        """A claim refused: a duplicate, a stale message, a crashed run whose lease expired, or a
        run whose task was cancelled or rescheduled under it (taken to be ended unfired)."""
        try:
            current = BucketItem.get(*task_key(staged.task_id), consistent_read=True)
        except DoesNotExist:
            return Refusal.BEHIND
        if isinstance(current, TaskItem) and (why := _superseded(current, staged, now_ms)) is not None:
            return self._take_superseded(current, staged, why, lease_until_ms=lease_until_ms, log_id=log_id)
        if isinstance(current, TaskItem) and current.status == PAUSED:  # a resume's write may be in flight
            ran, updated_ms = current.run_id == staged.run_id, int(current.updated_ms)
            if writer_may_still_arm(staged, updated_ms=updated_ms, ran=ran, now_ms=now_ms):
                return Refusal.RESUMING
        return self._take_over(
            current, staged, now_ms=now_ms, lease_until_ms=lease_until_ms, log_id=log_id, take_own=take_own
        )

    def _take_over(
        self,
        current: BucketItem,
        staged: Staged,
        *,
        now_ms: int,
        lease_until_ms: int,
        log_id: str,
        take_own: bool,
    ) -> Claimed | Refusal:
        """Take over a crashed run whose lease expired, or say why the claim was refused."""
        if not isinstance(current, TaskItem) or current.status != SCHEDULED:
            self._free_abandoned(current, staged, now_ms)
            return Refusal.STALE
        if current.due_ms != staged.due_ms:
            ran, updated_ms = current.run_id == staged.run_id, int(current.updated_ms)
            return armed_elsewhere(int(current.due_ms), staged, updated_ms=updated_ms, ran=ran, now_ms=now_ms)
        if current.run_due_ms != staged.due_ms:
            # Armed for this occurrence, not yet claimed: the item was written between our
            # conditional write and this read. A first attempt claims it on the next try.
            return Refusal.BEHIND if staged.attempt == 1 else Refusal.STALE
        if current.run_id != staged.run_id:
            return Refusal.STALE
        if current.run_status == FIRING and (
            current.attempts == staged.attempt - 1 or (staged.held and current.attempts == staged.attempt)
        ):
            # a retry (or a held copy) overtook the write that records the attempt before it;
            # unless that attempt succeeded (a one-shot's success is in its batch's run log only)
            return Refusal.DONE if _logged(current, staged.run_id) else Refusal.EARLY
        if current.run_status != FIRING or current.attempts != staged.attempt:
            return Refusal.DONE
        if (current.lease_until_ms or 0) >= now_ms and not (take_own and current.run_log == log_id):
            return Refusal.IN_FLIGHT
        if _logged(current, staged.run_id):
            return Refusal.DONE  # it succeeded; only its record was late or the message came again
        try:
            current.update(
                actions=[
                    TaskItem.lease_until_ms.set(lease_until_ms),
                    TaskItem.run_log.set(log_id),
                    TaskItem.version.add(1),
                ],
                condition=_same_run(staged)
                & (TaskItem.lease_until_ms == current.lease_until_ms)
                & (TaskItem.run_log == current.run_log),
            )
        except PynamoDBException as exc:
            if is_conflict(exc):
                return Refusal.IN_FLIGHT
            raise StorageUnavailable(f"reclaim of {staged.run_id}: {exc.msg}") from exc
        return Claimed(to_task(current), int(current.targets_done or 0), log_id, bool(current.counted))

    def _take_superseded(
        self, current: TaskItem, staged: Staged, why: str, *, lease_until_ms: int, log_id: str
    ) -> Claimed | Refusal:
        """Take a run whose task was cancelled or rescheduled under it (:func:`_superseded`), to
        end it without a call: a write conditional on the item being as read (its version)."""
        try:
            current.update(
                actions=[
                    TaskItem.run_status.set(FIRING),
                    TaskItem.attempts.set(staged.attempt),
                    TaskItem.lease_until_ms.set(lease_until_ms),
                    TaskItem.run_log.set(log_id),
                    TaskItem.version.add(1),
                ],
                condition=TaskItem.version == current.version,
            )
        except PynamoDBException as exc:
            if is_conflict(exc):
                return Refusal.STALE  # moved on meanwhile: whoever moved it ends it
            raise StorageUnavailable(f"ending {staged.run_id}: {exc.msg}") from exc
        claimed = Claimed(to_task(current), int(current.targets_done or 0), log_id, bool(current.counted))
        return replace(claimed, superseded=why)

    def _free_abandoned(self, current: BucketItem, staged: Staged, now_ms: int) -> None:
        """A one-shot task ended (cancelled) while this run of it was in flight: a cancel leaves
        its place to the run's outcome (shared/store/dynamo.py, ``_finish``). When the run can
        no longer have one (a retry that will not be claimed now, or an attempt whose trigger
        died: its lease is over and no run log has it), this refused claim frees the place."""
        if not isinstance(current, TaskItem) or not (
            staged.one_shot and current.counted and current.run_id == staged.run_id
        ):
            return
        if current.status not in (TaskStatus.CANCELLED.value, TaskStatus.COMPLETED.value, TaskStatus.FAILED.value):
            return  # paused: it still counts, and may fire after it resumes
        retrying = current.run_status in (RunStatus.RETRYING.value, RunStatus.THROTTLED.value)
        died = current.run_status == FIRING and (current.lease_until_ms or 0) < now_ms
        if not retrying and not died:
            return
        if died:
            logs = run_logs([current])
            if current.run_log in logs and staged.run_id in logs[current.run_log].runs:
                return  # it succeeded, and its run log freed the place

        def write(transaction: TransactWrite) -> None:
            transaction.update(
                current,
                actions=[TaskItem.counted.remove(), TaskItem.version.add(1)],
                condition=(TaskItem.version == current.version) & TaskItem.counted.exists(),
            )
            free(transaction, {current.tenant: 1})

        try:
            transact(write)
        except PynamoDBException as exc:
            if not failed_conditions(exc):
                raise StorageUnavailable(f"freeing {staged.task_id}: {exc.msg}") from exc

    def status_of(self, task_id: str) -> TaskStatus | None:
        """A task's status as it is now (a consistent read of its home item: 1 RRU up to 4 KB,
        which a projection would not lower); ``None`` once the task is gone."""
        try:
            item = BucketItem.get(*task_key(task_id), consistent_read=True)
        except DoesNotExist:
            return None
        except PynamoDBException as exc:
            raise StorageUnavailable(f"status of {task_id}: {exc.msg}") from exc
        return TaskStatus(item.status) if isinstance(item, TaskItem) else None

    # --- recording ------------------------------------------------------------------------

    def _expiry(self, now_ms: int) -> datetime:
        return from_ms(now_ms + self.retention_ms)

    def log_successes(self, log_id: str, successes: list[Success], now_ms: int) -> None:
        """One write for the successful one-shot runs of a trigger batch. Their tasks can no
        longer fire: after it, each tenant gets back its counted ones (one ``live_tasks - k``
        per tenant; the tasks' items are not written, docs/design.md 2.4). The log is put only
        if it does not exist: a replay (a write answered as failed that was done after all,
        sent again) writes nothing and frees nothing twice. Two plain writes, not a
        transaction: transactions on a tenant's counter conflict with each other at every
        busy tenant's pace; a crash between the two leaves the places counted (the safe side)."""
        if not successes:
            return
        runs: dict[str, Any] = {
            s.run_id: {"fired_ms": s.fired_ms, "lateness_ms": s.lateness_ms, "attempts": s.attempts}
            | ({"throttled_ms": s.throttled_ms} if s.throttled_ms else {})
            for s in successes
        }
        log = RunLogItem(f"RL#{log_id}", "RL", runs=runs, expires_at=self._expiry(now_ms))
        try:
            log.save(condition=RunLogItem.pk.does_not_exist())
        except PynamoDBException as exc:
            if is_conflict(exc):
                return  # written already: this is a replay
            raise StorageUnavailable(f"run log {log_id}: {exc.msg}") from exc
        for tenant, count in sorted(freed(s.counted_in for s in successes).items()):
            try:
                TenantQuota.release(tenant, count)
            except StorageUnavailable:
                logger.warning("a tenant's freed places were not given back", extra={"tenant": tenant, "count": count})

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
    ) -> bool:
        return self._update_run(
            staged,
            [
                TaskItem.run_status.set(RunStatus.RETRYING.value),
                TaskItem.last_error.set(error),
                TaskItem.targets_done.set(targets_done),
                TaskItem.fired_ms.set(TaskItem.fired_ms | fired_ms),
                TaskItem.lateness_ms.set(TaskItem.lateness_ms | lateness_ms),
                TaskItem.lease_until_ms.remove(),
                *throttled_actions(throttled_ms),
                *started_actions(started),
            ],
        )

    def record_hold(self, staged: Staged, *, lease_until_ms: int, throttled_ms: int) -> bool:
        """A claimed attempt put back by a limit: its run waits ``throttled`` (the attempt not
        used) for the held copy of its message, held by the lease until its start and after;
        ``throttled_ms``: what the run will have been held back when it starts. False when the
        run moved on meanwhile."""
        return self._update_run(
            staged,
            [
                TaskItem.run_status.set(RunStatus.THROTTLED.value),
                TaskItem.attempts.set(staged.attempt - 1),
                TaskItem.lease_until_ms.set(lease_until_ms),
                *throttled_actions(throttled_ms),
            ],
        )

    def _status_keys(self, task_id: str, task: Task | None, status: TaskStatus) -> tuple[str, str] | None:
        """A task's status index keys once it is ``status``: from ``task``, or, for a status the
        index holds, from what its item says of it that never changes (tenant, creation time,
        whether it is listed)."""
        if task is not None:
            return status_keys(task, self.list_shards, status)
        if watched_state(status, None) is None:
            return None
        try:
            item = TaskItem.get(
                *task_key(task_id),
                consistent_read=True,
                attributes_to_get=["tenant", "created_ms", "parent_id"],
            )
        except DoesNotExist:
            return None
        except PynamoDBException as exc:
            raise StorageUnavailable(f"reading task {task_id}: {exc.msg}") from exc
        listed = item.parent_id is None
        return keys_in_status(item.tenant, task_id, int(item.created_ms), listed, status, None, self.list_shards)

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
        """A one-shot task's final outcome other than success (failed, dead-lettered, skipped),
        or a success whose run log ``logged_in`` could not be written. ``counted_in``: the
        tenant whose quota counts the task, which gets its place back in the same write. A task
        cancelled while the run was firing stays cancelled (the run's outcome is still kept).
        ``failures``: the task's failures in a row after this run (None: left as it is).
        ``task``: the task as claimed, whose ``failed`` end puts it in the status index in the
        same write (docs/status-index.md; without it, its item is read for its tenant and
        creation time, which never change)."""
        ended = ended_as(run.status)
        keys = self._status_keys(staged.task_id, task, ended)
        completed = [
            TaskItem.status.set(ended.value),
            TaskItem.next_fire_ms.remove(),
            *status_index.actions(TaskItem, keys),
        ]
        actions = [
            TaskItem.run_status.set(run.status.value),
            TaskItem.attempts.set(run.attempts),  # a skipped run made one attempt fewer than its claim
            TaskItem.last_error.set(run.last_error) if run.last_error else TaskItem.last_error.remove(),
            TaskItem.targets_done.set(targets_done),
            TaskItem.lease_until_ms.remove(),
            TaskItem.expires_at.set(self._expiry(now_ms)),
            *throttled_actions(run.throttled_ms),
            *started_actions(run.started),
        ]
        if failures is not None:
            actions.append(TaskItem.failures.set(failures))
        if run.fired_at is not None:
            actions.append(TaskItem.fired_ms.set(TaskItem.fired_ms | to_ms(run.fired_at)))
            actions.append(TaskItem.lateness_ms.set(TaskItem.lateness_ms | (run.lateness_ms or 0)))
        live, cancelled = TaskItem.status != CANCELLED, TaskItem.status == CANCELLED
        if counted_in is not None:
            if self._finish_counted(staged, [*completed, *actions], counted_in, also=live, logged_in=logged_in):
                return True
            if self._finish_counted(staged, actions, counted_in, also=cancelled, logged_in=logged_in):
                return True
        return self._update_run(staged, [*completed, *actions], also=live) or self._update_run(
            staged, actions, also=cancelled
        )

    def _finish_counted(
        self,
        staged: Staged,
        actions: Sequence[Action],
        tenant: str,
        *,
        also: Condition | None = None,
        logged_in: str | None = None,
    ) -> bool:
        """The final write of a counted task's run, its ``counted`` mark removed and its
        tenant's ``live_tasks - 1`` in one TransactWriteItems. True when settled: written, or
        (``logged_in``) found in that batch's run log, whose write freed the place already.
        False, nothing written, when the task is not counted (any more) or the run moved on:
        the plain write then does what it did before quotas."""
        condition = _same_run(staged) & TaskItem.counted.exists()
        if also is not None:
            condition &= also

        def write(transaction: TransactWrite) -> None:
            transaction.update(
                _home(staged.task_id),
                actions=[*actions, TaskItem.counted.remove(), TaskItem.version.add(1)],
                condition=condition,
            )
            free(transaction, {tenant: 1})
            if logged_in is not None:
                transaction.condition_check(
                    RunLogItem, f"RL#{logged_in}", "RL", condition=RunLogItem.pk.does_not_exist()
                )

        try:
            transact(write)
        except PynamoDBException as exc:
            failed = failed_conditions(exc)
            if 2 in failed:
                return True  # the run log was written after all: the run succeeded and was freed there
            if failed:
                return False
            raise StorageUnavailable(f"run {staged.run_id}: {exc.msg}") from exc
        return True

    def _update_run(self, staged: Staged, actions: Sequence[Action], also: Condition | None = None) -> bool:
        condition = _same_run(staged) if also is None else _same_run(staged) & also
        try:
            _home(staged.task_id).update(actions=[*actions, TaskItem.version.add(1)], condition=condition)
        except PynamoDBException as exc:
            if is_conflict(exc):
                return False  # the run moved on without us (cancelled, reclaimed after our lease)
            raise StorageUnavailable(f"run {staged.run_id}: {exc.msg}") from exc
        return True

    def note_ended_run(self, task_id: str, run: Run) -> None:
        """An extra run of ``task_id`` (run now, a chained run, a redrive) ended: it is the task's
        latest occurrence unless one scheduled later ended already (an older one never
        overwrites it); a success ends a ``failed`` task ``completed`` (a redrive that worked).
        Best effort: the run's own outcome is on record whatever happens here."""
        item = TaskItem(*task_key(task_id))
        scheduled = to_ms(run.scheduled_for)
        try:
            item.update(
                actions=[TaskItem.ended_run.set(ended_run_json(run)), TaskItem.ended_run_ms.set(scheduled)],
                condition=TaskItem.pk.exists()
                & (TaskItem.ended_run_ms.does_not_exist() | (TaskItem.ended_run_ms <= scheduled)),
            )
        except PynamoDBException as exc:
            if not is_conflict(exc):
                logger.warning("an extra run's end was not noted on its task", extra={"task_id": task_id})
            return
        if run.status is RunStatus.SUCCEEDED:
            try:
                item.update(
                    actions=[
                        TaskItem.status.set(TaskStatus.COMPLETED.value),
                        TaskItem.version.add(1),
                        *status_index.actions(TaskItem, None),  # off the failed list (docs/status-index.md)
                    ],
                    condition=TaskItem.status == TaskStatus.FAILED.value,
                )
            except PynamoDBException as exc:
                if not is_conflict(exc):
                    logger.warning("a failed task was not marked completed", extra={"task_id": task_id})

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
        """A recurring task's occurrence is over: keep its run, arm the next occurrence (or
        complete the task: a ``counted`` one gives its place in its tenant's quota back in the
        same write). False if the task changed meanwhile (its writer re-armed it). ``failures``:
        the task's failures in a row after this occurrence (None: left as it is); with
        ``paused_reason``, the task is paused in the same write (its next occurrence armed, as a
        client's pause leaves it, for a resume to follow its misfire policy from)."""
        expires = self._expiry(now_ms)
        try:
            run_item(task.id, task.tenant, run, expires).save()
            put_away = _put_away(staged, run, failures)
            if next_due_ms is None:
                status = ended_as(run.status)
                ended = [
                    TaskItem.status.set(status.value),
                    TaskItem.next_fire_ms.remove(),
                    *status_index.actions(TaskItem, status_keys(task, self.list_shards, status)),
                ]
                actions = [*put_away, *ended, TaskItem.expires_at.set(expires)]
            else:
                paused = status_keys(task, self.list_shards, TaskStatus.PAUSED, paused_reason)
                actions = [*put_away, *_armed_for(next_due_ms, staged_next, paused_reason, paused)]
            # The next occurrence's bucket item first, then the arming: a trigger that dies
            # between the two leaves an item the scanner stages and the claim refuses (the task
            # is not armed for it), and its message comes back to re-arm; in the other order it
            # left the task armed for an occurrence no scan would ever find (`make chaos`).
            if next_due_ms is not None and (pointer := occurrence_item(task, next_due_ms, staged_next)) is not None:
                pointer.expires_at = self._expiry(next_due_ms)
                pointer.save()
            # Re-armed (or completed) only if still armed for this occurrence: a client who
            # rescheduled the task meanwhile (PATCH) armed it already, one who cancelled it
            # ended it; then the run is only put away.
            armed = (TaskItem.due_ms == staged.due_ms) & (TaskItem.status != CANCELLED)
            if next_due_ms is None and counted and self._finish_counted(staged, actions, task.tenant, also=armed):
                return True
            if not self._update_run(staged, actions, also=armed):
                self._update_run(staged, put_away)
                return False
        except PynamoDBException as exc:
            raise StorageUnavailable(f"re-arming {task.id}: {exc.msg}") from exc
        return True
