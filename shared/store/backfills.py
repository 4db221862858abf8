"""Backfills on DynamoDB (docs/backfill.md): a backfill's record, the marks of the occurrences it took,
and the extra runs that fire them; implements shared.services.ports.backfills.BackfillStore.

| item | pk | sk |
|---|---|---|
| the backfill (``BackfillItem``) | ``BF#<task id>`` | ``<backfill id>`` (a ULID: newest last) |
| an occurrence's mark (``BackfillMarkItem``) | ``BO#<task id>`` | ``<scheduled ms>`` (13 digits) |
| the run that fires it (``TaskItem``, an extra run) | ``B#<fire minute>#<shard>`` | its id |
| its place in the task's runs (``RunItem``) | ``R#<task id>`` | ``<scheduled ms>#<its run id>`` |

**One occurrence, one run, whoever asks.** Each occurrence is taken by one TransactWriteItems with:
a check that the task has no run of its own on record for it (``R#<task id>`` /
``<scheduled ms>#<run_id_for(task, scheduled ms)>``, the key its own run is recorded under, absent
or ``skipped``), the mark put only if it does not exist, the extra run put, its place in the task's
runs, and a check that the backfill is not cancelled. Two backfills of one occurrence (a retried
request, two overlapping windows, two at the same moment) write the same mark: one transaction
wins, the other's is cancelled and the occurrence is left out of it ("ConditionalCheckFailed" on
the mark: "Condition expressions", DynamoDB developer guide; a transaction is all or nothing:
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
The occurrences the task itself will still fire (from the one it is armed for on) are left out
before (shared/domain/backfills.py, ``left_out``): a recurring task moves past an occurrence only
after recording it (its re-arm writes the run record, then moves the task), so an occurrence behind
the task is on record by the time the transaction checks.

**Bounded.** 24 occurrences a transaction (four items each and the backfill's check: 97 of
TransactWriteItems' 100 actions; at most 4 MB in all, so a chunk also stops at 3.5 MB of items).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from pynamodb.exceptions import DoesNotExist, PynamoDBException
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from shared.domain.backfills import MARK_DAYS, Backfill, BackfillNotFound, LeftOut, Planned, Progress
from shared.domain.errors import StorageUnavailable
from shared.domain.firing import run_id_for
from shared.domain.schedules import At
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import Page, Run, Task
from shared.domain.times import from_ms, to_ms
from shared.store.items import to_item
from shared.store.keys import decode_cursor, encode_cursor, task_key
from shared.store.listing import PAGE_SLACK
from shared.store.models import BackfillItem, BackfillMarkItem, RunItem, TaskItem, is_conflict
from shared.store.quota import conflicted, failed_conditions
from shared.store.runs import run_item, run_logs, run_on_item

PER_TRANSACTION = 24
"""Occurrences taken (or runs cancelled) per TransactWriteItems: 4 actions each, 3 to cancel."""
TRANSACTION_BYTES = 3_500_000
CONFLICT_PAUSES_S = (0.02, 0.05, 0.1, 0.2, 0.4)
"""A transaction cancelled because another was writing one of its items (a backfill beside this
one taking the same marks) is sent again after these pauses; the loser then finds the marks taken."""
CANCEL_ROUNDS = 3
RUNNING = "running"
CANCELLED = "cancelled"
PROGRESS_ATTRIBUTES = [
    "pk", "sk", "kind", "task_id", "tenant", "status", "due_ms", "run_id", "run_due_ms", "run_status",
    "attempts", "fired_ms", "lateness_ms", "last_error", "throttled_ms", "run_log", "chain",
]  # fmt: skip
"""What the progress reads of a run's item (not its targets and payload)."""
WAITING_RUN = (RunStatus.STAGED,)
FAILED = (RunStatus.FAILED, RunStatus.DEAD_LETTERED)


def _storage_error(exc: PynamoDBException) -> StorageUnavailable:
    return StorageUnavailable(f"the backfill store did not answer: {exc.msg}")


def _record_key(task_id: str, backfill_id: str) -> tuple[str, str]:
    return f"BF#{task_id}", backfill_id


def _live_run_key(task_id: str, scheduled_ms: int) -> tuple[str, str]:
    """Where the task records its own run of the occurrence at ``scheduled_ms``."""
    return f"R#{task_id}", f"{scheduled_ms:013d}#{run_id_for(task_id, scheduled_ms)}"


def _to_backfill(item: BackfillItem) -> Backfill:
    plan = tuple(Planned(int(s), int(f), str(i)) for s, f, i in json.loads(item.plan))
    return Backfill(
        id=item.sk,
        tenant=item.tenant,
        task_id=item.task_id,
        start=from_ms(int(item.from_ms)),
        end=from_ms(int(item.to_ms)),
        per_second=float(item.per_second),
        created_at=from_ms(int(item.created_ms)),
        in_window=int(item.in_window),
        plan=plan,
        left_out=json.loads(item.left_out) if item.left_out else {},
        cancelled_at=from_ms(int(item.cancelled_ms)) if item.cancelled_ms is not None else None,
    )


def _plan_json(plan: Sequence[Planned]) -> str:
    return json.dumps([[p.scheduled_ms, p.fire_ms, p.item_id] for p in plan], separators=(",", ":"))


class DynamoBackfills:
    def __init__(
        self,
        list_shards: int,
        retention: timedelta,
        sleep: Callable[[float], None] = time.sleep,  # wall: DynamoDB's backoff
    ) -> None:
        self.list_shards = list_shards
        self.retention = retention
        self.sleep = sleep

    # --- what the window holds already ---------------------------------------------------

    def fired_and_taken(self, task_id: str, from_ms: int, to_ms: int) -> tuple[set[int], set[int], dict[int, str]]:
        fired: set[int] = set()
        try:
            records = RunItem.query(
                f"R#{task_id}", RunItem.sk.between(f"{from_ms:013d}", f"{to_ms - 1:013d}$"), consistent_read=True
            )
            for record in records:
                scheduled = int(record.scheduled_ms)
                own = record.child is None and record.run_id == run_id_for(task_id, scheduled)
                if own and record.status != RunStatus.SKIPPED.value and from_ms <= scheduled < to_ms:
                    fired.add(scheduled)
            marks = {
                int(mark.sk): mark.item_id
                for mark in BackfillMarkItem.query(
                    f"BO#{task_id}",
                    BackfillMarkItem.sk.between(f"{from_ms:013d}", f"{to_ms - 1:013d}"),
                    consistent_read=True,
                )
            }
            runs = TaskItem.batch_get(
                [task_key(item_id) for item_id in sorted(set(marks.values()))],
                consistent_read=True,
                attributes_to_get=["pk", "sk", "kind", "task_id", "status", "run_status", "fired_ms"],
            )
            uncalled = {run.task_id for run in runs if isinstance(run, TaskItem) and _ended_uncalled(run)}
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        free = {ms: item_id for ms, item_id in marks.items() if item_id in uncalled}
        return fired, set(marks) - set(free), free

    # --- starting -------------------------------------------------------------------------

    def start(self, backfill: Backfill, runs: Sequence[Task], free: Mapping[int, str]) -> dict[int, LeftOut]:
        """The backfill's record (its plan all of ``runs``), then each chunk of occurrences in one
        transaction; the record is then rewritten with the plan it could take and why the others
        were left out (a backfill whose request died before that still shows every run it wrote:
        its progress reads the plan's items, and an item never written counts as left out)."""
        pk, sk = _record_key(backfill.task_id, backfill.id)
        last_fire = max((p.fire_ms for p in backfill.plan), default=to_ms(backfill.created_at))
        record = BackfillItem(
            pk,
            sk,
            tenant=backfill.tenant,
            task_id=backfill.task_id,
            from_ms=to_ms(backfill.start),
            to_ms=to_ms(backfill.end),
            per_second=backfill.per_second,
            created_ms=to_ms(backfill.created_at),
            in_window=backfill.in_window,
            plan=_plan_json(backfill.plan),
            left_out=json.dumps(dict(backfill.left_out)) if backfill.left_out else None,
            status=RUNNING,
            expires_at=from_ms(last_fire) + self.retention + PAGE_SLACK,
        )
        try:
            record.save(condition=BackfillItem.pk.does_not_exist())
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        left: dict[int, LeftOut] = {}
        chunks = self._chunks(runs)
        for index, chunk in enumerate(chunks):
            left |= self._take(backfill, chunk, free)
            if LeftOut.CANCELLED in left.values():  # cancelled meanwhile: nothing after is taken
                left |= {to_ms(_scheduled(run)): LeftOut.CANCELLED for later in chunks[index + 1 :] for run, _ in later}
                break
        taken = [p for p in backfill.plan if p.scheduled_ms not in left]
        counts = dict(backfill.left_out)
        for reason in left.values():
            counts[reason.value] = counts.get(reason.value, 0) + 1
        try:
            record.update(
                actions=[BackfillItem.plan.set(_plan_json(taken)), BackfillItem.left_out.set(json.dumps(counts))]
            )
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        return left

    def _chunks(self, runs: Sequence[Task]) -> list[list[tuple[Task, TaskItem]]]:
        """The runs with their items (built once), :data:`PER_TRANSACTION` a chunk at most and at
        most :data:`TRANSACTION_BYTES` of items (a run's item is about its targets, payload and
        schedule as JSON and 600 bytes more; four items an occurrence, the run's the largest)."""
        chunks: list[list[tuple[Task, TaskItem]]] = [[]]
        size = 0
        for run in runs:
            item = to_item(replace(run, version=1), self.list_shards)
            item_bytes = len(item.targets) + len(item.payload or "") + len(item.schedule) + 600
            if chunks[-1] and (len(chunks[-1]) == PER_TRANSACTION or size + item_bytes > TRANSACTION_BYTES):
                chunks.append([])
                size = 0
            chunks[-1].append((run, item))
            size += item_bytes
        return [chunk for chunk in chunks if chunk]

    def _take(
        self, backfill: Backfill, chunk: list[tuple[Task, TaskItem]], free: Mapping[int, str]
    ) -> dict[int, LeftOut]:
        """Take a chunk's occurrences, each in the same transaction; those whose conditions fail are
        left out (and the rest sent again), as all of them once the backfill is cancelled."""
        left: dict[int, LeftOut] = {}
        pending = list(chunk)
        pauses = list(CONFLICT_PAUSES_S)
        while pending:
            try:
                self._transact(backfill, pending, free)
                return left
            except PynamoDBException as exc:
                failed = failed_conditions(exc)
                if 0 in failed:
                    return left | {to_ms(_scheduled(run)): LeftOut.CANCELLED for run, _ in pending}
                if failed:
                    kept = []
                    for i, (run, item) in enumerate(pending):
                        first = 1 + 4 * i
                        if first in failed:
                            left[to_ms(_scheduled(run))] = LeftOut.FIRED
                        elif {first + 1, first + 2} & failed:
                            left[to_ms(_scheduled(run))] = LeftOut.BACKFILLED
                        else:
                            kept.append((run, item))
                    pending = kept
                    continue
                if conflicted(exc) and pauses:
                    self.sleep(pauses.pop(0))
                    continue
                raise _storage_error(exc) from exc
        return left

    def _transact(self, backfill: Backfill, runs: Sequence[tuple[Task, TaskItem]], free: Mapping[int, str]) -> None:
        pk, sk = _record_key(backfill.task_id, backfill.id)
        with TransactWrite(connection=TaskItem._get_connection().connection) as transaction:
            transaction.condition_check(BackfillItem, pk, sk, condition=BackfillItem.status == RUNNING)
            for run, item in runs:
                scheduled = to_ms(_scheduled(run))
                fire = to_ms(run.due_at)
                live_pk, live_sk = _live_run_key(backfill.task_id, scheduled)
                transaction.condition_check(
                    RunItem,
                    live_pk,
                    live_sk,
                    condition=RunItem.pk.does_not_exist() | (RunItem.status == RunStatus.SKIPPED.value),
                )
                mark = BackfillMarkItem(
                    f"BO#{backfill.task_id}",
                    f"{scheduled:013d}",
                    backfill_id=backfill.id,
                    item_id=run.id,
                    expires_at=from_ms(scheduled) + timedelta(days=MARK_DAYS),
                )
                unmarked = BackfillMarkItem.pk.does_not_exist()
                if scheduled in free:  # held by a run that ended without a call: taken over from it
                    unmarked |= BackfillMarkItem.item_id == free[scheduled]
                transaction.save(mark, condition=unmarked)
                transaction.save(item, condition=TaskItem.pk.does_not_exist())
                placed = Run(run_id_for(run.id, fire), backfill.task_id, from_ms(scheduled), RunStatus.STAGED)
                transaction.save(
                    run_item(backfill.task_id, backfill.tenant, placed, from_ms(fire) + self.retention, child=run.id)
                )

    # --- reading --------------------------------------------------------------------------

    def get(self, task_id: str, backfill_id: str) -> Backfill:
        try:
            item = BackfillItem.get(*_record_key(task_id, backfill_id.upper()), consistent_read=True)
        except DoesNotExist as exc:
            raise BackfillNotFound(f"backfill {backfill_id!r} of task {task_id} not found") from exc
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        return _to_backfill(item)

    def list(self, task_id: str, *, limit: int, cursor: str | None) -> Page[Backfill]:
        position = decode_cursor(cursor) if cursor else None
        condition = BackfillItem.sk < position if position is not None else None
        try:
            read = list(
                BackfillItem.query(
                    f"BF#{task_id}", condition, scan_index_forward=False, limit=limit + 1, consistent_read=True
                )
            )
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        page = [_to_backfill(item) for item in read[:limit]]
        after = tuple(encode_cursor(b.id) for b in page)
        return Page(page, after[-1] if len(read) > limit else None, after)

    def _items(self, backfill: Backfill) -> dict[str, TaskItem]:
        keys = [task_key(p.item_id) for p in backfill.plan]
        try:
            found = TaskItem.batch_get(keys, consistent_read=True, attributes_to_get=PROGRESS_ATTRIBUTES)
            return {item.task_id: item for item in found if isinstance(item, TaskItem)}
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc

    def progress(self, backfill: Backfill) -> Progress:
        items = self._items(backfill)
        try:
            logs = run_logs(list(items.values()))
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        counts = dict.fromkeys(("waiting", "firing", "succeeded", "failed", "skipped", "cancelled"), 0)
        waiting_next: int | None = None
        for planned in backfill.plan:
            item = items.get(planned.item_id)
            if item is None:  # past its retention (TTL) or never written: nothing left to fire
                continue
            run = run_on_item(item, logs)
            if run is None:
                if item.status == TaskStatus.CANCELLED.value:
                    counts["cancelled"] += 1
                else:
                    counts["waiting"] += 1
                    waiting_next = min(waiting_next or planned.fire_ms, planned.fire_ms)
            elif run.status is RunStatus.SUCCEEDED:
                counts["succeeded"] += 1
            elif run.status in FAILED:
                counts["failed"] += 1
            elif run.status is RunStatus.SKIPPED:
                counts["skipped"] += 1
            else:
                counts["firing"] += 1
        return Progress(**counts, next_fire_ms=waiting_next)

    # --- cancelling -----------------------------------------------------------------------

    def cancel(self, backfill: Backfill, now_ms: int) -> Backfill:
        """The record marked cancelled (its later transactions then fail), then each of its runs
        not ended cancelled: one never claimed also gives its occurrence's mark back, in the same
        transaction (conditional on it still not being claimed), so a later backfill may take the
        occurrence; one claimed keeps its mark (it may have been called)."""
        pk, sk = _record_key(backfill.task_id, backfill.id)
        try:
            BackfillItem(pk, sk).update(
                actions=[BackfillItem.status.set(CANCELLED), BackfillItem.cancelled_ms.set(now_ms)],
                condition=BackfillItem.status == RUNNING,
            )
        except PynamoDBException as exc:
            if not is_conflict(exc):
                raise _storage_error(exc) from exc
        cancelled = self.get(backfill.task_id, backfill.id)
        expires = from_ms(now_ms) + self.retention
        for _ in range(CANCEL_ROUNDS):
            items = self._items(cancelled)
            open_items = [i for i in items.values() if i.status == TaskStatus.SCHEDULED.value]
            if not open_items:
                break
            for start in range(0, len(open_items), PER_TRANSACTION):
                self._cancel_runs(cancelled, open_items[start : start + PER_TRANSACTION], expires)
        return cancelled

    def _cancel_runs(self, backfill: Backfill, items: Sequence[TaskItem], expires: Any) -> None:
        """Cancel these runs in one transaction. A transaction fails whole: when the condition of
        some failed (their runs claimed or ended meanwhile), it is sent again at once without them,
        which the next round reads again; when another transaction was writing one of its items,
        the next round reads them all again. (Before, the whole chunk waited for the next round,
        and a backfill whose runs were being claimed at its pace could end its rounds with none
        cancelled: the record's cancel still stops them firing.)"""
        by_item = {p.item_id: p for p in backfill.plan}
        left = list(items)
        while left:
            deletes: list[int] = []
            updates: list[int] = []
            """For each delete and update of the transaction, the position in ``left`` of its run."""
            try:
                with TransactWrite(connection=TaskItem._get_connection().connection) as transaction:
                    for position, item in enumerate(left):
                        deleted, updated = _cancel_run(transaction, backfill, item, by_item[item.task_id], expires)
                        deletes += [position] * deleted
                        updates += [position] * updated
                return
            except PynamoDBException as exc:
                failed = failed_conditions(exc)
                if not failed and conflicted(exc):
                    return  # read again by the next round
                if not failed:
                    raise _storage_error(exc) from exc
                # the cancellation reasons are in the order of the request's items (TransactionCanceledException:
                # https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html),
                # which PynamoDB sends deletes first, then updates (pynamodb/connection/base.py,
                # transact_write_items); moto answers in that order too (the integration test's claimed run)
                owners = deletes + updates
                moved = {owners[at] for at in failed if at < len(owners)}
                if not moved:
                    return  # reasons not matched to a run: the next round reads them all again
                left = [item for position, item in enumerate(left) if position not in moved]


def _cancel_run(
    transaction: TransactWrite, backfill: Backfill, item: TaskItem, planned: Planned, expires: Any
) -> tuple[int, int]:
    """One run's cancel, written into ``transaction``; returns how many deletes and updates."""
    ended: list[Action] = [
        TaskItem.status.set(TaskStatus.CANCELLED.value),
        TaskItem.next_fire_ms.remove(),
        TaskItem.expires_at.set(expires),
        TaskItem.version.add(1),
    ]
    scheduled = TaskItem.status == TaskStatus.SCHEDULED.value
    if item.run_status is not None:
        transaction.update(TaskItem(item.pk, item.sk), actions=ended, condition=scheduled)
        return 0, 1
    transaction.update(
        TaskItem(item.pk, item.sk), actions=ended, condition=scheduled & TaskItem.run_status.does_not_exist()
    )
    mark = BackfillMarkItem(f"BO#{backfill.task_id}", f"{planned.scheduled_ms:013d}")
    transaction.delete(mark, condition=BackfillMarkItem.backfill_id == backfill.id)
    placed = RunItem(
        f"R#{backfill.task_id}", f"{planned.scheduled_ms:013d}#{run_id_for(planned.item_id, planned.fire_ms)}"
    )
    transaction.update(
        placed,
        actions=[
            RunItem.status.set(RunStatus.SKIPPED.value),
            RunItem.last_error.set(f"its backfill {backfill.id} was cancelled before it fired"),
        ],
        condition=RunItem.pk.exists(),
    )
    return 1, 2


def _ended_uncalled(run: TaskItem) -> bool:
    """Whether a backfill's run ended without calling its targets: skipped before any attempt was
    called (its task paused or cancelled when its turn came, its backfill cancelled while it was
    claimed), or cancelled before it was claimed. Its occurrence may be taken again; a run that made
    a call (or may still) keeps it."""
    if run.run_status is None:
        return run.status == TaskStatus.CANCELLED.value
    return run.run_status == RunStatus.SKIPPED.value and run.fired_ms is None


def _scheduled(run: Task) -> Any:
    """The occurrence an extra run of a backfill fires: its schedule's ``at``."""
    assert isinstance(run.schedule, At), "a backfill's run is At(<its occurrence>)"
    return run.schedule.at
