"""The firing pipeline's store in memory (shared.services.ports.pipeline.PipelineStore), for tests of the
scanners and the trigger that need no AWS.

It works on an :class:`~tests.support.fakes.InMemoryTaskRepository`'s state as DynamoPipelineStore
(shared/store/pipeline.py) works on DynamoTaskRepository's table: a task created through the
repository is scanned, claimed and fired here, and its status and runs are read there.
tests/integration/test_pipeline_store_contract.py runs one contract over both stores.

Each method mirrors one conditional write of the DynamoDB store: it checks the same condition on
the same fields, writes the same ones and, as every write there does, bumps the task's version.
Not modelled: TTL deletions (nothing here ever expires but a run's record, which the
repository's ``runs`` leaves out as the DynamoDB one does), and failures of the store itself
(StorageUnavailable)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from shared.domain.claims import Claimed, Refusal, Success, armed_elsewhere, superseded, writer_may_still_arm
from shared.domain.codec import is_one_shot_spec, schedule_to_dict
from shared.domain.firing import Staged, occurrence_key, staged_for
from shared.domain.ids import parse_task_id
from shared.domain.quota import freed
from shared.domain.states import RunStatus, TaskStatus, ended_as
from shared.domain.tasks import LastRun, Run, Task
from shared.domain.times import from_ms, to_ms
from shared.store.keys import task_key
from tests.support.fakes import InMemoryTaskRepository, Occurrence, RecordedRun, RunFields, atomic, ttl

FIRING = RunStatus.FIRING
SCHEDULED = TaskStatus.SCHEDULED
CANCELLED = TaskStatus.CANCELLED


@dataclass
class Watermark:
    """A shard's mark item ``W#<shard>``: staged up to ``staged_until_ms``, and the lease of the
    scan working on it."""

    staged_until_ms: int | None = None
    scanning_until_ms: int | None = None


def _item_id(task_id: str) -> str:
    """The key of a task's home item (an id that is not one is TaskNotFound, as ``task_key`` says)."""
    return task_key(task_id)[1]


def _ended_run(run: Run) -> LastRun:
    """A run as ``ended_run`` keeps it (shared/store/dynamo.py, ``ended_run_to_json``: in ms)."""
    fired = from_ms(to_ms(run.fired_at)) if run.fired_at is not None else None
    return LastRun(run.run_id, from_ms(to_ms(run.scheduled_for)), run.status, fired)


class InMemoryPipelineStore:
    """What the scanners and the trigger read and write, in memory, with DynamoPipelineStore's
    observable behaviour."""

    def __init__(self, repository: InMemoryTaskRepository, retention_ms: int) -> None:
        self.repository = repository
        self.retention_ms = retention_ms
        self.watermarks: dict[int, Watermark] = {}
        self.clean: dict[int, int] = {}
        """The tick's item ``W#clean``."""
        self.table_lock = repository.table_lock
        """The repository's: a write here and one there never interleave (:func:`atomic`)."""

    # --- the items --------------------------------------------------------------------------

    def _task(self, task_id: str) -> Task | None:
        """A task's home item as stored (its run fields apart), or None."""
        return self.repository._tasks.get(task_id)

    def _fields(self, task_id: str) -> RunFields:
        return self.repository.run_fields.setdefault(task_id, RunFields())

    def _written(self, task_id: str, **changes: Any) -> None:
        """The home item written: ``changes`` to its task fields, and its version bumped."""
        task = self.repository._tasks[task_id]
        self.repository._tasks[task_id] = replace(task, version=task.version + 1, **changes)

    def _same_run(self, staged: Staged, also: Callable[[Task], bool] = lambda task: True) -> RunFields | None:
        """The run fields of ``staged``'s task if it holds this attempt of its run, firing
        (``_same_run``), and ``also`` holds of the task; None otherwise (the write is refused)."""
        task = self._task(_item_id(staged.task_id))
        if task is None:
            return None
        fields = self._fields(task.id)
        mine = (
            fields.run_id == staged.run_id
            and fields.run_due_ms == staged.due_ms
            and fields.attempts == staged.attempt
            and fields.run_status is FIRING
        )
        return fields if mine and also(task) else None

    def _expiry(self, now_ms: int) -> datetime:
        return ttl(from_ms(now_ms + self.retention_ms))

    def _logged(self, fields: RunFields) -> bool:
        """Whether the run log of the fields' batch lists their run (it succeeded)."""
        return fields.run_id in self.repository.run_logs.get(fields.run_log or "", {})

    def _free(self, task_id: str, tenant: str) -> None:
        """The item's ``counted`` mark removed and ``tenant`` given its place back (one transaction)."""
        self.repository.counted.discard(task_id)
        self.repository.live[tenant] -= 1

    # --- scanning ---------------------------------------------------------------------------

    @atomic
    def watermark(self, shard: int) -> int | None:
        mark = self.watermarks.get(shard)
        return mark.staged_until_ms if mark is not None else None

    @atomic
    def scan_marks(self, shards: Sequence[int]) -> tuple[dict[int, int | None], dict[int, int]]:
        marks = {shard: self.watermarks.get(shard, Watermark()).staged_until_ms for shard in shards}
        return marks, {shard: ms for shard, ms in self.clean.items() if shard in marks}

    @atomic
    def mark_clean(self, until: dict[int, int]) -> None:
        self.clean = dict(until)

    @atomic
    def has_items(self, shard: int, start_ms: int, end_ms: int) -> bool:
        """Any home item or occurrence of ``shard`` due in the window, whatever its state."""
        homes = (parse_task_id(task_id) for task_id in self.repository._tasks)
        if any(home.shard == shard and start_ms <= home.due_ms < end_ms for home in homes):
            return True
        return any(
            item_shard == shard and start_ms <= occurrence.due_ms < end_ms
            for (item_shard, _), occurrence in self.repository.occurrences.items()
        )

    @atomic
    def begin_scan(self, shard: int, now_ms: int, lease_ms: int) -> tuple[int | None, int] | None:
        """Take the shard's scan lease unless another scan holds it (its lease not yet run out):
        the conditional UpdateItem that also creates the mark item."""
        mark = self.watermarks.setdefault(shard, Watermark())
        if mark.scanning_until_ms is not None and mark.scanning_until_ms >= now_ms:
            return None
        mark.scanning_until_ms = now_ms + lease_ms
        return mark.staged_until_ms, mark.scanning_until_ms

    @atomic
    def end_scan(self, shard: int, lease: int, mark: int) -> bool:
        """Move the mark (anywhere: the write has no condition on it) and release the lease, if
        the lease is still ``lease``."""
        current = self.watermarks.get(shard)
        if current is None or current.scanning_until_ms != lease:
            return False
        current.staged_until_ms, current.scanning_until_ms = mark, None
        return True

    @atomic
    def due(self, shard: int, start_ms: int, end_ms: int) -> list[Staged]:
        """What the Query of the shard's buckets in ``[start_ms, end_ms)`` finds stageable, in
        key order (due time first): home items armed for their first due time, scheduled and
        not claimed for it yet; and occurrence items, whatever their task became (the claim
        drops a stale one). Neither when its writer staged it."""
        found: list[tuple[str, Staged]] = []
        for task_id, task in self.repository._tasks.items():
            home = parse_task_id(task_id)
            if home.shard == shard and start_ms <= home.due_ms < end_ms and self._home_stageable(task):
                one_shot = is_one_shot_spec(schedule_to_dict(task.schedule))
                found.append((task_id, staged_for(task_id, home.due_ms, one_shot, task.priority)))
        for (item_shard, sk), occurrence in self.repository.occurrences.items():
            due = occurrence.due_ms
            if item_shard == shard and start_ms <= due < end_ms and occurrence.staged_ms != due:
                found.append((sk, staged_for(occurrence.task_id, due, one_shot=False, priority=occurrence.priority)))
        return [staged for _, staged in sorted(found, key=lambda pair: pair[0])]

    def _home_stageable(self, task: Task) -> bool:
        due = to_ms(task.due_at)
        return (
            task.status is SCHEDULED
            and parse_task_id(task.id).due_ms == due
            and self.repository.staged_ms.get(task.id) != due
            and self._fields(task.id).run_due_ms != due
        )

    # --- claiming ---------------------------------------------------------------------------

    @atomic
    def claim(
        self, staged: Staged, *, now_ms: int, lease_until_ms: int, log_id: str, take_own: bool = False
    ) -> Claimed | Refusal:
        """Take the run of a staged occurrence (the conditional UpdateItem of docs/design.md,
        2.4); when refused, read the item to tell why (:meth:`_reclaim`)."""
        task_id = _item_id(staged.task_id)
        task = self._task(task_id)
        if task is None or not self._claimable(task, staged):
            return self._reclaim(staged, now_ms=now_ms, lease_until_ms=lease_until_ms, log_id=log_id, take_own=take_own)
        fields = self._fields(task_id)
        if not staged.held and staged.attempt == 1:  # a new run: what an earlier one did is gone
            fields.targets_done, fields.last_error, fields.fired_ms, fields.throttled_ms = 0, None, None, None
            fields.lateness_ms, fields.started = None, None
        fields.run_due_ms, fields.run_id, fields.run_status = staged.due_ms, staged.run_id, FIRING
        fields.attempts, fields.lease_until_ms, fields.run_log = staged.attempt, lease_until_ms, log_id
        self._written(task_id, expires_at=self._expiry(now_ms) if staged.one_shot else task.expires_at)
        return self._claimed(task_id, log_id)

    def _claimable(self, task: Task, staged: Staged) -> bool:
        """The claim's condition: the task is scheduled and armed for this due time, and the run
        is this message's to take: a held copy's run waits throttled with its attempt unused; a
        first attempt's has not started; a retry's is retrying after the attempt before."""
        fields = self._fields(task.id)
        armed = task.status is SCHEDULED and to_ms(task.due_at) == staged.due_ms
        if staged.attempt == 1 and not staged.held:
            return armed and fields.run_due_ms != staged.due_ms
        waiting = RunStatus.THROTTLED if staged.held else RunStatus.RETRYING
        return (
            armed
            and fields.run_id == staged.run_id
            and fields.run_due_ms == staged.due_ms
            and fields.run_status is waiting
            and fields.attempts == staged.attempt - 1
        )

    def _claimed(self, task_id: str, log_id: str) -> Claimed:
        """The claim's answer: the task as written (``ALL_NEW``, no run log read)."""
        fields = self._fields(task_id)
        task = self.repository.item_task(task_id, logged=False)
        return Claimed(task, fields.targets_done or 0, log_id, task_id in self.repository.counted)

    def _reclaim(
        self, staged: Staged, *, now_ms: int, lease_until_ms: int, log_id: str, take_own: bool = False
    ) -> Claimed | Refusal:
        """A claim refused: a duplicate, a stale message, or a crashed run whose lease expired
        (taken over by a write conditional on the old lease and log)."""
        task = self._task(_item_id(staged.task_id))
        if task is None:
            return Refusal.BEHIND
        fields = self._fields(task.id)
        if (why := self._superseded(task, fields, staged, now_ms)) is not None:
            # taken to be ended unfired (a write conditional on the item as read: its version)
            fields.run_status, fields.attempts = FIRING, staged.attempt
            fields.lease_until_ms, fields.run_log = lease_until_ms, log_id
            self._written(task.id)
            return replace(self._claimed(task.id, log_id), superseded=why)
        ran, updated_ms = fields.run_id == staged.run_id, to_ms(task.updated_at)
        if task.status is TaskStatus.PAUSED and writer_may_still_arm(
            staged, updated_ms=updated_ms, ran=ran, now_ms=now_ms
        ):
            return Refusal.RESUMING
        if task.status is not SCHEDULED:
            self._free_abandoned(task, staged, now_ms)
            return Refusal.STALE
        due = to_ms(task.due_at)
        if due != staged.due_ms:
            return armed_elsewhere(due, staged, updated_ms=updated_ms, ran=ran, now_ms=now_ms)
        if fields.run_due_ms != staged.due_ms:
            return Refusal.BEHIND if staged.attempt == 1 else Refusal.STALE
        if fields.run_id != staged.run_id:
            return Refusal.STALE
        if fields.run_status is FIRING and (
            fields.attempts == staged.attempt - 1 or (staged.held and fields.attempts == staged.attempt)
        ):
            # a retry (or a held copy) overtook the write of the attempt before it, unless that
            # attempt succeeded (in its batch's run log)
            return Refusal.DONE if self._logged(fields) else Refusal.EARLY
        if fields.run_status is not FIRING or fields.attempts != staged.attempt:
            return Refusal.DONE
        if (fields.lease_until_ms or 0) >= now_ms and not (take_own and fields.run_log == log_id):
            return Refusal.IN_FLIGHT
        if self._logged(fields):
            return Refusal.DONE  # it succeeded; only its record was late or the message came again
        fields.lease_until_ms, fields.run_log = lease_until_ms, log_id
        self._written(task.id)
        return self._claimed(task.id, log_id)

    def _superseded(self, task: Task, fields: RunFields, staged: Staged, now_ms: int) -> str | None:
        """Why this message must end its run unfired: its task was cancelled or rescheduled while
        the run waited for it or while its trigger died firing (shared.domain.claims.superseded)."""
        if fields.run_id != staged.run_id or fields.run_due_ms != staged.due_ms:
            return None
        why = superseded(
            cancelled=task.status is CANCELLED,
            rescheduled=task.status is SCHEDULED and to_ms(task.due_at) != staged.due_ms,
            run_status=fields.run_status.value if fields.run_status is not None else None,
            attempts=fields.attempts,
            lease_until_ms=fields.lease_until_ms,
            staged_attempt=staged.attempt,
            held=staged.held,
            now_ms=now_ms,
        )
        return None if why is None or (fields.run_status is FIRING and self._logged(fields)) else why

    def _free_abandoned(self, task: Task, staged: Staged, now_ms: int) -> None:
        """A counted one-shot task ended (cancelled) while this run of it was in flight, and the
        run can no longer end (a retry that will not be claimed now, or an attempt whose trigger
        died and no run log has): this refused claim gives its place back."""
        fields = self._fields(task.id)
        if not (staged.one_shot and task.id in self.repository.counted and fields.run_id == staged.run_id):
            return
        if task.status not in (CANCELLED, TaskStatus.COMPLETED, TaskStatus.FAILED):
            return  # paused: it still counts, and may fire after it resumes
        retrying = fields.run_status in (RunStatus.RETRYING, RunStatus.THROTTLED)
        died = fields.run_status is FIRING and (fields.lease_until_ms or 0) < now_ms
        if not retrying and not died:
            return
        if died and self._logged(fields):
            return  # it succeeded, and its run log freed the place
        self._free(task.id, task.tenant)
        self._written(task.id)

    @atomic
    def status_of(self, task_id: str) -> TaskStatus | None:
        """The item's status as stored (no run log read: a one-shot whose success only its run
        log holds is still ``scheduled`` here); None once the task is gone."""
        task = self._task(_item_id(task_id))
        return task.status if task is not None else None

    # --- recording --------------------------------------------------------------------------

    @atomic
    def log_successes(self, log_id: str, successes: list[Success], now_ms: int) -> None:
        """The batch's run log, put only if it does not exist (a replay writes and frees nothing),
        then each tenant's counted successes given back; the tasks' items are not written."""
        if not successes or log_id in self.repository.run_logs:
            return
        self.repository.run_logs[log_id] = {success.run_id: success for success in successes}
        for tenant, count in freed(s.counted_in for s in successes).items():
            self.repository.live[tenant] -= count

    @atomic
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
        """The attempt failed and will be retried: the run ``retrying``, its lease released; the
        first attempt's fired time and lateness are kept (``if_not_exists``)."""
        fields = self._same_run(staged)
        if fields is None:
            return False
        fields.run_status, fields.last_error, fields.targets_done = RunStatus.RETRYING, error, targets_done
        fields.fired_ms = fields.fired_ms if fields.fired_ms is not None else fired_ms
        fields.lateness_ms = fields.lateness_ms if fields.lateness_ms is not None else lateness_ms
        fields.lease_until_ms = None
        if throttled_ms:
            fields.throttled_ms = throttled_ms
        if started:
            fields.started = started
        self._written(_item_id(staged.task_id))
        return True

    @atomic
    def record_hold(self, staged: Staged, *, lease_until_ms: int, throttled_ms: int) -> bool:
        """A claimed attempt put back by a limit: the run waits ``throttled``, its attempt unused,
        held by the lease for the held copy of its message."""
        fields = self._same_run(staged)
        if fields is None:
            return False
        fields.run_status, fields.attempts = RunStatus.THROTTLED, staged.attempt - 1
        fields.lease_until_ms = lease_until_ms
        if throttled_ms:
            fields.throttled_ms = throttled_ms
        self._written(_item_id(staged.task_id))
        return True

    @atomic
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
        """A one-shot's final outcome, if the task holds this attempt of the run: the task ends as
        the run did unless it was cancelled meanwhile (it stays cancelled, the run's outcome
        kept). ``counted_in``: a counted task gives that tenant its place back in the same
        write; ``logged_in``: if that batch's run log was written after all, nothing is written
        (its write freed the place) and the answer is True."""
        if counted_in is not None and logged_in is not None and logged_in in self.repository.run_logs:
            return True  # the transaction's condition on the run log failed: the run succeeded there
        fields = self._same_run(staged)
        if fields is None:
            return False
        task_id = _item_id(staged.task_id)
        task = self.repository._tasks[task_id]
        if counted_in is not None and task_id in self.repository.counted:
            self._free(task_id, counted_in)
        self._record_end(fields, run, targets_done)
        ended: dict[str, Any] = {"expires_at": self._expiry(now_ms)}
        if task.status is not CANCELLED:
            ended |= {"status": ended_as(run.status), "next_fire_at": None}
        if failures is not None:
            ended["consecutive_failures"] = failures
        self._written(task_id, **ended)
        return True

    def _record_end(self, fields: RunFields, run: Run, targets_done: int) -> None:
        """The run fields of a one-shot's final write: its status, attempts, error and lease."""
        fields.run_status, fields.attempts, fields.last_error = run.status, run.attempts, run.last_error or None
        fields.targets_done, fields.lease_until_ms = targets_done, None
        if run.throttled_ms:
            fields.throttled_ms = run.throttled_ms
        if run.started:
            fields.started = run.started
        if run.fired_at is not None:
            fields.fired_ms = fields.fired_ms if fields.fired_ms is not None else to_ms(run.fired_at)
            fields.lateness_ms = fields.lateness_ms if fields.lateness_ms is not None else (run.lateness_ms or 0)

    @atomic
    def note_ended_run(self, task_id: str, run: Run) -> None:
        """An extra run of ``task_id`` ended: the task's ``ended_run`` unless a later one is there
        (this write does not bump the version); then a success makes a ``failed`` task
        ``completed``."""
        item_id = _item_id(task_id)
        task = self._task(item_id)
        scheduled = to_ms(run.scheduled_for)
        if task is None or self.repository.ended_run_ms.get(item_id, scheduled) > scheduled:
            return
        self.repository._tasks[item_id] = replace(task, ended_run=_ended_run(run))
        self.repository.ended_run_ms[item_id] = scheduled
        if run.status is RunStatus.SUCCEEDED and task.status is TaskStatus.FAILED:
            self._written(item_id, status=TaskStatus.COMPLETED)

    @atomic
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
        """A recurring task's occurrence is over: its run item is written (whatever happens next),
        then, if the task is still armed for the occurrence and not cancelled, the run is cleared
        from the item and the next occurrence armed (an occurrence item written for it), or the
        task completed (a ``counted`` one giving its place back). A task rescheduled or cancelled
        meanwhile only has its run cleared, and the answer is False."""
        task_id = _item_id(task.id)
        self._record_run(task, staged, run, now_ms)
        if self._same_run(staged) is None:
            return False  # the run moved on without us (reclaimed after our lease)
        armed = self._same_run(staged, lambda t: to_ms(t.due_at) == staged.due_ms and t.status is not CANCELLED)
        changes = self._clear_run(task_id, staged, run, failures)
        if armed is None:
            self._written(task_id, **changes)
            return False
        if next_due_ms is None:
            if counted and task_id in self.repository.counted:
                self._free(task_id, task.tenant)
            self._written(
                task_id, **changes, status=ended_as(run.status), next_fire_at=None, expires_at=self._expiry(now_ms)
            )
            return True
        self._written(task_id, **changes, **self._arm(task_id, next_due_ms, staged_next, paused_reason))
        home = parse_task_id(task_id)
        if next_due_ms != home.due_ms:  # at the first due time the home item is the pointer
            staged_ms = next_due_ms if staged_next else None
            key = (home.shard, occurrence_key(task_id, next_due_ms))
            self.repository.occurrences[key] = Occurrence(task_id, next_due_ms, staged_ms, task.priority)
        return True

    def _record_run(self, task: Task, staged: Staged, run: Run, now_ms: int) -> None:
        """The run item ``R#<task id>`` / ``<due ms>#<run id>`` (a put: a second one replaces it)."""
        fired = from_ms(to_ms(run.fired_at)) if run.fired_at is not None else None
        kept = Run(
            run.run_id,
            task.id,
            from_ms(staged.due_ms),
            run.status,
            run.attempts,
            fired,
            run.lateness_ms,
            run.last_error,
            run.throttled_ms,
            started=run.started,
        )
        records = self.repository.recorded_runs.setdefault(task.id, {})
        records[f"{staged.due_ms:013d}#{staged.run_id}"] = RecordedRun(kept, self._expiry(now_ms))

    def _clear_run(self, task_id: str, staged: Staged, run: Run, failures: int | None) -> dict[str, Any]:
        """The run taken off the item's run fields (its id, due time and attempts stay); the
        changes to its task fields that go with it: the run kept as ``ended_run``, and the
        task's failures in a row."""
        fields = self._fields(task_id)
        fields.run_status = fields.lease_until_ms = fields.run_log = fields.targets_done = None
        fields.last_error = fields.fired_ms = fields.lateness_ms = fields.throttled_ms = None
        fields.started = None
        self.repository.ended_run_ms[task_id] = staged.due_ms
        changes: dict[str, Any] = {"ended_run": _ended_run(run)}
        if failures is not None:
            changes["consecutive_failures"] = failures
        return changes

    def _arm(self, task_id: str, next_due_ms: int, staged_next: bool, paused_reason: str | None) -> dict[str, Any]:
        """The next occurrence armed on the home item (staged by its writer or not): the
        changes to its task fields, and to its status when the task pauses itself."""
        if staged_next:
            self.repository.staged_ms[task_id] = next_due_ms
        else:
            self.repository.staged_ms.pop(task_id, None)
        armed: dict[str, Any] = {"due_at": from_ms(next_due_ms), "next_fire_at": from_ms(next_due_ms)}
        if paused_reason is not None:
            armed |= {"status": TaskStatus.PAUSED, "paused_reason": paused_reason}
        return armed
