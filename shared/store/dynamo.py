"""The task repository on DynamoDB, through the PynamoDB models."""

from __future__ import annotations

import heapq
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from pynamodb.exceptions import DoesNotExist, PynamoDBException, TransactWriteError
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from shared.domain.chains import ChainLink, ParentRun
from shared.domain.codec import (
    alert_from_dict,
    alert_to_dict,
    compact_json,
    retry_from_dict,
    retry_to_dict,
    schedule_from_dict,
    schedule_to_dict,
    target_from_dict,
    target_to_dict,
)
from shared.domain.errors import ConcurrentUpdate, StorageUnavailable, SundialError, TaskNotFound
from shared.domain.firing import occurrence_key, run_id_for
from shared.domain.ids import parse_task_id
from shared.domain.schedules import After, Every
from shared.domain.states import LetterStatus, RunStatus, TaskStatus
from shared.domain.tasks import DeadLetterRef, LastRun, Misfire, Page, Priority, Run, Task, matches
from shared.domain.tenants import MAX_TASKS
from shared.domain.times import from_ms, to_ms
from shared.observability import logger
from shared.store.keys import bucket_pk, decode_cursor, encode_cursor, list_pk, list_sk, task_key
from shared.store.models import (
    LIST_INDEX_NAME,
    TABLE_MODELS,
    BucketItem,
    DeadLetterItem,
    OccurrenceItem,
    RunItem,
    RunLogItem,
    TaskItem,
    is_conflict,
)
from shared.store.quota import TenantQuota, failed_conditions, free, transact

BATCH_WRITE_ITEMS = 25
"""Items per BatchWriteItem call (DynamoDB's limit)."""
BATCH_WRITE_ROUNDS = 5
BATCH_WRITE_FIRST_PAUSE_S = 0.05
"""Unprocessed items are sent again after 50, 100, 200, 400 ms (0.75 s in all at most)."""
FILTERED_WINDOW = 50
"""Index entries read per round when a status filter may discard some."""
LIST_READ_BUDGET = 200
"""Tasks one listing request reads at most (whole rounds of its window, at least one), whatever its
filters keep; past them the page is returned short with a cursor. A task item is at most about
130 KB (a 128 KiB registration): 200 are about 26 MB of BatchGetItem answers at worst, for a
function of 256 MB with a seventh of a vCPU and 10 s; the 20 rounds of 50 read before were 1,000
items, 130 MB."""


def _storage_error(exc: PynamoDBException) -> StorageUnavailable:
    return StorageUnavailable(f"the task store did not answer: {exc.msg}")


def to_item(task: Task, list_shards: int) -> TaskItem:
    schedule = task.schedule
    anchor = schedule.anchor if isinstance(schedule, After | Every) else None
    pk, sk = task_key(task.id)
    item = TaskItem(
        pk,
        sk,
        tenant=task.tenant,
        task_id=task.id,
        name=task.name,
        status=task.status.value,
        schedule=compact_json(schedule_to_dict(schedule)),
        anchor_ms=to_ms(anchor) if anchor else None,
        targets=compact_json([target_to_dict(target) for target in task.targets]),
        multicast=task.multicast,
        payload=None if task.payload is None else compact_json(task.payload),
        retry=compact_json(retry_to_dict(task.retry)),
        misfire=task.misfire.value,
        priority=lane_of(task.priority),
        due_ms=to_ms(task.due_at),
        next_fire_ms=to_ms(task.next_fire_at) if task.next_fire_at else None,
        version=task.version,
        created_ms=to_ms(task.created_at),
        updated_ms=to_ms(task.updated_at),
        expires_at=task.expires_at,
        parent_id=task.parent_id,
        stops_with_parent=task.stops_with_parent or None,
        alert=compact_json(alert_to_dict(task.alert)) if task.alert is not None else None,
        pause_after_failures=task.pause_after_failures,
        paused_reason=task.paused_reason,
        failures=task.consecutive_failures or None,
        on_success=compact_json(list(task.on_success)) if task.on_success else None,
        on_failure=compact_json(list(task.on_failure)) if task.on_failure else None,
        chain=compact_json(task.chain.to_dict()) if task.chain is not None else None,
        lpk=None if task.parent_id else list_pk(task.tenant, task.id, list_shards),
        lsk=None if task.parent_id else list_sk(to_ms(task.created_at), task.id),
    )
    run = task.run
    if run is not None:
        item.run_due_ms = to_ms(run.scheduled_for)
        item.run_id = run.run_id
        item.run_status = run.status.value
        item.attempts = run.attempts
        item.fired_ms = to_ms(run.fired_at) if run.fired_at else None
        item.lateness_ms = run.lateness_ms
        item.last_error = run.last_error
    return item


def lane_of(priority: Priority) -> str | None:
    """A task's priority as its items keep it: absent when normal."""
    return None if priority is Priority.NORMAL else priority.value


def priority_of(stored: str | None) -> Priority:
    return Priority(stored) if stored else Priority.NORMAL


def run_of(item: TaskItem) -> Run | None:
    if item.run_id is None or item.run_due_ms is None or item.run_status is None:
        return None
    return Run(
        run_id=item.run_id,
        task_id=item.task_id,
        scheduled_for=from_ms(int(item.run_due_ms)),
        status=RunStatus(item.run_status),
        attempts=int(item.attempts or 0),
        fired_at=from_ms(int(item.fired_ms)) if item.fired_ms is not None else None,
        lateness_ms=int(item.lateness_ms) if item.lateness_ms is not None else None,
        last_error=item.last_error,
        throttled_ms=int(item.throttled_ms or 0),
        parent=ChainLink.from_dict(json.loads(item.chain)).parent if item.chain is not None else None,
    )


def to_task(item: TaskItem, logs: dict[str, RunLogItem] | None = None) -> Task:
    """The task an item holds. A one-shot run recorded in its batch's run log (``logs``, keyed
    by log id) has succeeded and the task is complete (docs/design.md, section 2.4)."""
    run = run_of(item)
    status = TaskStatus(item.status)
    next_fire: datetime | None = from_ms(int(item.next_fire_ms)) if item.next_fire_ms is not None else None
    logged = (logs or {}).get(item.run_log or "")
    if run is not None and run.status is RunStatus.FIRING and logged is not None and run.run_id in logged.runs:
        entry = logged.runs[run.run_id]
        run = replace(
            run,
            status=RunStatus.SUCCEEDED,
            fired_at=from_ms(int(entry["fired_ms"])),
            lateness_ms=int(entry["lateness_ms"]),
            attempts=int(entry["attempts"]),
            throttled_ms=int(entry.get("throttled_ms", 0)),
        )
        if status is TaskStatus.SCHEDULED and item.next_fire_ms == item.run_due_ms:
            status, next_fire = TaskStatus.COMPLETED, None
    anchor = from_ms(int(item.anchor_ms)) if item.anchor_ms is not None else None
    expires: datetime | None = item.expires_at
    return Task(
        id=item.task_id,
        tenant=item.tenant,
        name=item.name,
        schedule=schedule_from_dict(json.loads(item.schedule), anchor),
        targets=tuple(target_from_dict(t) for t in json.loads(item.targets)),
        multicast=bool(item.multicast),
        payload=None if item.payload is None else json.loads(item.payload),
        retry=retry_from_dict(json.loads(item.retry)),
        misfire=Misfire(item.misfire),
        priority=priority_of(item.priority),
        status=status,
        due_at=from_ms(int(item.due_ms)),
        next_fire_at=next_fire,
        created_at=from_ms(int(item.created_ms)),
        updated_at=from_ms(int(item.updated_ms)),
        version=int(item.version or 0),
        expires_at=expires,
        run=run,
        parent_id=item.parent_id,
        stops_with_parent=bool(item.stops_with_parent),
        alert=alert_from_dict(json.loads(item.alert)) if item.alert is not None else None,
        pause_after_failures=int(item.pause_after_failures) if item.pause_after_failures is not None else None,
        paused_reason=item.paused_reason,
        consecutive_failures=int(item.failures or 0),
        on_success=tuple(json.loads(item.on_success)) if item.on_success is not None else (),
        on_failure=tuple(json.loads(item.on_failure)) if item.on_failure is not None else (),
        chain=ChainLink.from_dict(json.loads(item.chain)) if item.chain is not None else None,
        ended_run=ended_run_of(item.ended_run),
    )


def ended_run_to_json(run: Run) -> str:
    fired = to_ms(run.fired_at) if run.fired_at is not None else None
    return compact_json(
        {"run_id": run.run_id, "scheduled_ms": to_ms(run.scheduled_for), "status": run.status.value, "fired_ms": fired}
    )


def ended_run_of(text: str | None) -> LastRun | None:
    if text is None:
        return None
    data = json.loads(text)
    fired = data.get("fired_ms")
    return LastRun(
        data["run_id"],
        from_ms(int(data["scheduled_ms"])),
        RunStatus(data["status"]),
        from_ms(int(fired)) if fired is not None else None,
    )


def parent_of(text: str | None) -> ParentRun | None:
    """A run record's ``parent`` member."""
    if text is None:
        return None
    data = json.loads(text)
    return ParentRun(data["task_id"], data["run_id"], RunStatus(data["status"]))


def run_from_item(item: RunItem) -> Run:
    return Run(
        run_id=item.run_id,
        task_id=item.task_id,
        scheduled_for=from_ms(int(item.scheduled_ms)),
        status=RunStatus(item.status),
        attempts=int(item.attempts or 0),
        fired_at=from_ms(int(item.fired_ms)) if item.fired_ms is not None else None,
        lateness_ms=int(item.lateness_ms) if item.lateness_ms is not None else None,
        last_error=item.last_error,
        throttled_ms=int(item.throttled_ms or 0),
        parent=parent_of(item.parent),
    )


def run_position(run: Run) -> str:
    """Where a run sorts in its task's history: the sort key of its ``R#`` item."""
    return f"{to_ms(run.scheduled_for):013d}#{run.run_id}"


def run_logs(items: list[TaskItem]) -> dict[str, RunLogItem]:
    """The run logs that may hold the outcome of these items' firing runs (one BatchGetItem)."""
    wanted = {i.run_log for i in items if i.run_status == RunStatus.FIRING.value and i.run_log}
    if not wanted:
        return {}
    keys = [(f"RL#{log}", "RL") for log in sorted(wanted)]
    return {log.pk.removeprefix("RL#"): log for log in RunLogItem.batch_get(keys)}


def _task_id_of(serialized: dict[str, Any]) -> str:
    return str(serialized["task_id"]["S"])


FINAL = (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED)


class DynamoTaskRepository:
    def __init__(
        self,
        list_shards: int,
        retention: timedelta = timedelta(days=30),
        sleep: Callable[[float], None] = time.sleep,
        default_max_tasks: int = MAX_TASKS,
    ) -> None:
        self.list_shards = list_shards
        self.retention = retention
        self.sleep = sleep
        self.quota = TenantQuota(default_max_tasks)
        """Tenants without a ``max_tasks`` of their own have ``default_max_tasks``."""

    def create(self, task: Task, *, staged: bool = False) -> Task:
        """Store a new task and count it in its tenant's quota: ``live_tasks + 1`` on the tenant
        item conditioned on room for it (:class:`QuotaExceeded`, nothing stored, when there is
        none), then the task's put; a put that fails gives the place back
        (``TenantQuota.count_one`` says why not one transaction)."""
        item = to_item(replace(task, version=1), self.list_shards)
        if staged:
            item.staged_ms = to_ms(task.due_at)
        item.counted = True
        self.quota.count_one(task.tenant)
        try:
            item.save(condition=TaskItem.pk.does_not_exist())
        except PynamoDBException as exc:
            self._release(task.tenant, 1)
            if is_conflict(exc):
                raise ConcurrentUpdate(f"task {task.id} already exists") from exc
            raise _storage_error(exc) from exc
        return to_task(item)

    def live_tasks(self, tenant: str) -> int:
        """The tenant's count of tasks that can still fire."""
        return self.quota.live(tenant)

    def get(self, tenant: str, task_id: str) -> Task:
        pk, sk = task_key(task_id)
        try:
            item = BucketItem.get(pk, sk, consistent_read=True)
        except DoesNotExist as exc:
            raise TaskNotFound(f"task {task_id!r} not found") from exc
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        if not isinstance(item, TaskItem) or item.tenant != tenant or item.parent_id:
            raise TaskNotFound(f"task {task_id!r} not found")  # an extra run is not a task
        return to_task(item, run_logs([item]))

    def update(self, task: Task, *, staged: bool = False) -> Task:
        """Write what a client owns (definition, status, the armed occurrence) with one
        UpdateItem conditional on the version read; the pipeline's run fields are never
        touched. An occurrence armed outside the home item's bucket gets a pointer there.
        A final status (cancelled, completed) frees the task's place in its tenant's quota in
        the same write (:meth:`_finish`)."""
        fresh = to_item(task, self.list_shards)
        due_ms = to_ms(task.due_at)
        attributes = (
            "name", "status", "schedule", "anchor_ms", "targets", "multicast", "payload",
            "retry", "misfire", "priority", "due_ms", "next_fire_ms", "updated_ms", "expires_at",
            "alert", "pause_after_failures", "paused_reason", "failures", "on_success", "on_failure",
        )  # fmt: skip
        actions: list[Action] = []
        for name in attributes:
            attribute = TaskItem.get_attributes()[name]
            value = getattr(fresh, name)
            actions.append(attribute.remove() if value is None else attribute.set(value))
        actions.append(TaskItem.staged_ms.set(due_ms) if staged else TaskItem.staged_ms.remove())
        actions.append(TaskItem.version.add(1))
        if task.status in FINAL and self._finish(task, actions):
            return replace(task, version=task.version + 1)
        item = TaskItem(*task_key(task.id))
        try:
            item.update(actions=actions, condition=TaskItem.version == task.version)
            if parse_task_id(task.id).due_ms != due_ms and task.status is TaskStatus.SCHEDULED:
                OccurrenceItem(
                    bucket_pk(due_ms, parse_task_id(task.id).shard),
                    occurrence_key(task.id, due_ms),
                    task_id=task.id,
                    due_ms=due_ms,
                    staged_ms=due_ms if staged else None,
                    priority=lane_of(task.priority),
                ).save()
        except PynamoDBException as exc:
            if is_conflict(exc):
                raise ConcurrentUpdate(f"task {task.id} changed meanwhile; read it again") from exc
            raise _storage_error(exc) from exc
        return to_task(item, run_logs([item]))

    def _finish(self, task: Task, actions: list[Action]) -> bool:
        """Write a task's final status and give its place back, in one TransactWriteItems,
        if it is counted; False (nothing written) if it is not, or changed since it was read
        (the caller's plain write then tells which).

        A one-shot task whose run is firing is not freed here: that run's outcome frees it
        (its success through the batch's run log, which never touches this item, or its
        failure through the pipeline's final write), so the two never both do."""
        counted = TaskItem.counted.exists()
        if not task.recurring:
            counted &= TaskItem.run_status.does_not_exist() | (TaskItem.run_status != RunStatus.FIRING.value)

        def write(transaction: TransactWrite) -> None:
            transaction.update(
                TaskItem(*task_key(task.id)),
                actions=[*actions, TaskItem.counted.remove()],
                condition=(TaskItem.version == task.version) & counted,
            )
            free(transaction, {task.tenant: 1})

        try:
            transact(write)
        except PynamoDBException as exc:
            if failed_conditions(exc):
                return False
            raise _storage_error(exc) from exc
        return True

    def runs(self, task: Task, *, limit: int, cursor: str | None) -> Page[Run]:
        """The task's runs, newest first by scheduled time: the recorded ones (an extra run's
        record points at the one-shot item that holds its state) and the current occurrence's,
        which the home item holds, in its place among them."""
        position = decode_cursor(cursor) if cursor else None
        condition = RunItem.sk < position if position else None
        try:
            now = datetime.now(UTC)  # a run past its retention is left out (TTL deletes it later)
            read = RunItem.query(f"R#{task.id}", condition, scan_index_forward=False, limit=limit + 1)
            items = [item for item in read if not item.expired(now)]
            children = {i.child for i in items if i.child}
            held = {c.task_id: c for c in TaskItem.batch_get([task_key(c) for c in sorted(children)])}
            logs = run_logs(list(held.values()))
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        found: list[Run] = []
        for item in items:
            run = run_from_item(item)
            child = held.get(item.child or "")
            if child is not None:
                current = to_task(child, logs).run
                run = replace(current, task_id=task.id) if current is not None else run
            found.append(run)
        current = task.run
        if (
            current is not None
            and (position is None or run_position(current) < position)
            and all(r.run_id != current.run_id for r in found)  # recorded already: the record is final
        ):
            found.append(current)
        found.sort(key=run_position, reverse=True)
        page = found[:limit]
        after = tuple(encode_cursor(run_position(run)) for run in page)
        return Page(page, after[-1] if len(found) > limit else None, after)

    def create_many(self, tasks: Sequence[tuple[Task, bool]]) -> Sequence[Task | SundialError]:
        """Store new tasks, (task, staged) each, 25 per BatchWriteItem call; the answer says of
        each whether it was written (the task) or not (StorageUnavailable), so that a client
        is never told a written task failed. Items DynamoDB leaves unprocessed (throttling)
        are sent again with a doubling pause, BATCH_WRITE_ROUNDS times in all. Not conditional
        (BatchWriteItem takes no conditions): their ids are fresh ULIDs with 80 random bits.

        All of them are counted in their tenant's quota first, or none (:class:`QuotaExceeded`
        for the whole batch, nothing stored): one conditional UpdateItem reserves them
        (TenantQuota.reserve says what a crash after it costs), and those that were not
        written are given back after."""
        items = []
        for task, staged in tasks:
            item = to_item(replace(task, version=1), self.list_shards)
            if staged:
                item.staged_ms = to_ms(task.due_at)
            item.counted = True
            items.append(item)
        wanted = Counter(item.tenant for item in items)
        reserved: list[str] = []
        try:
            for tenant, count in sorted(wanted.items()):
                self.quota.reserve(tenant, count)
                reserved.append(tenant)
        except SundialError:
            for tenant in reserved:
                self._release(tenant, wanted[tenant])
            raise
        unwritten: dict[str, StorageUnavailable] = {}
        for start in range(0, len(items), BATCH_WRITE_ITEMS):
            unwritten.update(self._write_batch(items[start : start + BATCH_WRITE_ITEMS]))
        for tenant, count in sorted(Counter(i.tenant for i in items if i.task_id in unwritten).items()):
            self._release(tenant, count)
        return [unwritten.get(item.task_id) or to_task(item) for item in items]

    def _release(self, tenant: str, count: int) -> None:
        """Give back what a reservation took for tasks not written; if that fails too, the
        tenant stays over-counted (the safe side) rather than the answer lose its tasks."""
        try:
            self.quota.release(tenant, count)
        except StorageUnavailable:
            logger.warning("a quota reservation was not given back", extra={"tenant": tenant, "count": count})

    def _write_batch(self, items: Sequence[TaskItem]) -> dict[str, StorageUnavailable]:
        """Write up to 25 items; the ids of those not written, with why."""
        connection = TaskItem._get_connection()
        pending = [item.serialize() for item in items]
        pause = BATCH_WRITE_FIRST_PAUSE_S
        for round_ in range(1, BATCH_WRITE_ROUNDS + 1):
            try:
                answer = connection.batch_write_item(put_items=pending) or {}
            except PynamoDBException as exc:
                error = _storage_error(exc)
                return {_task_id_of(item): error for item in pending}
            unprocessed = answer.get("UnprocessedItems", {}).get(TaskItem.Meta.table_name, [])
            pending = [request["PutRequest"]["Item"] for request in unprocessed]
            if not pending:
                return {}
            if round_ < BATCH_WRITE_ROUNDS:
                self.sleep(pause)
                pause *= 2
        error = StorageUnavailable(
            f"the task store left this task unwritten {BATCH_WRITE_ROUNDS} times (throttled); register it again"
        )
        return {_task_id_of(item): error for item in pending}

    def create_run(self, extra: Task, *, staged: bool, redrive: DeadLetterRef | None = None) -> Task:
        """Store an extra run (a one-shot task whose ``parent_id`` is set) and its place in its
        parent's history, in one transaction, only if the run's item does not exist (a chained
        run's id is derived from its parent run: ConcurrentUpdate when it was started already);
        with ``redrive``, the dead letter it redrives is
        marked in the same transaction, so a dead letter is redriven once (ConcurrentUpdate if
        it was already). An extra run is an occurrence of its task, not a registration: it is
        not counted in the tenant's quota."""
        if extra.parent_id is None:
            raise ValueError("an extra run has a parent task")
        item = to_item(replace(extra, version=1), self.list_shards)
        if staged:
            item.staged_ms = to_ms(extra.due_at)
        due_ms = to_ms(extra.due_at)
        run_id = run_id_for(extra.id, due_ms)
        parent = extra.chain.parent if extra.chain is not None else None
        record = RunItem(
            f"R#{extra.parent_id}",
            f"{due_ms:013d}#{run_id}",
            tenant=extra.tenant,
            task_id=extra.parent_id,
            run_id=run_id,
            status=(extra.run.status if extra.run is not None else RunStatus.STAGED).value,
            scheduled_ms=due_ms,
            last_error=extra.run.last_error if extra.run is not None else None,
            child=extra.id,
            parent=compact_json({"task_id": parent.task_id, "run_id": parent.run_id, "status": parent.status.value})
            if parent is not None
            else None,
            expires_at=from_ms(due_ms) + self.retention,
        )
        try:
            with TransactWrite(connection=TaskItem._get_connection().connection) as transaction:
                transaction.save(item, condition=TaskItem.pk.does_not_exist())
                transaction.save(record)
                if redrive is not None:
                    letter = DeadLetterItem(f"DL#{redrive.tenant}", redrive.run_id)
                    transaction.update(
                        letter,
                        actions=[
                            DeadLetterItem.status.set(LetterStatus.REDRIVEN),
                            DeadLetterItem.redriven_run_id.set(run_id),
                            DeadLetterItem.redriven_ms.set(to_ms(extra.created_at)),
                        ],
                        condition=DeadLetterItem.status == LetterStatus.DEAD_LETTERED,
                    )
        except TransactWriteError as exc:
            if is_conflict(exc):
                if redrive is not None:
                    raise ConcurrentUpdate("that dead letter was redriven already") from exc
                raise ConcurrentUpdate(f"run {run_id} exists already") from exc
            raise _storage_error(exc) from exc
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        return to_task(item)

    # Listing: merge the tenant's index partitions newest first, then read the items.

    def _positions(self, tenant: str, before: str | None, count: int) -> list[tuple[str, str, str]]:
        """Up to ``count`` (lsk, pk, sk) of the tenant's index entries older than ``before``."""

        def shard(k: int) -> Iterator[tuple[str, str, str]]:
            # The low-level query: the model-level one filters on `kind`, which a keys-only
            # index does not project.
            condition = TaskItem.lsk < before if before is not None else None
            start: dict[str, Any] | None = None
            remaining = count
            while remaining > 0:
                page = TaskItem._get_connection().query(
                    f"L#{tenant}#{k}",
                    range_key_condition=condition,
                    index_name=LIST_INDEX_NAME,
                    scan_index_forward=False,
                    limit=remaining,
                    exclusive_start_key=start,
                )
                for raw in page.get("Items", []):
                    remaining -= 1
                    yield raw["lsk"]["S"], raw["pk"]["S"], raw["sk"]["S"]
                start = page.get("LastEvaluatedKey")
                if start is None:
                    break

        streams = [shard(k) for k in range(self.list_shards)]
        merged = heapq.merge(*streams, key=lambda entry: entry[0], reverse=True)
        return [entry for _, entry in zip(range(count), merged, strict=False)]

    def list(
        self,
        tenant: str,
        *,
        status: TaskStatus | None,
        limit: int,
        cursor: str | None,
        name_prefix: str | None = None,
    ) -> Page[Task]:
        """Newest first through the listing index (never a scan). Filters are applied to the
        items read, a window at a time, for at most LIST_READ_BUDGET items per request: a page may
        come back short, even empty, with a cursor to go on from."""
        position = decode_cursor(cursor) if cursor else None
        now = datetime.now(UTC)  # past its retention, a task is left out (TTL deletes it later)
        filtered = status is not None or name_prefix is not None
        window = max(limit + 1, FILTERED_WINDOW) if filtered else limit + 1
        found: list[tuple[str, Task]] = []
        try:
            for _ in range(max(1, LIST_READ_BUDGET // window)):
                entries = self._positions(tenant, position, window)
                if not entries:
                    return _task_page(found)
                keys = [(pk, sk) for _, pk, sk in entries]
                items = {(i.pk, i.sk): i for i in TaskItem.batch_get(keys, consistent_read=True)}
                logs = run_logs(list(items.values()))
                for lsk, pk, sk in entries:
                    item = items.get((pk, sk))
                    position = lsk
                    if item is None or item.tenant != tenant or item.expired(now):
                        continue
                    task = to_task(item, logs)
                    if matches(task, status, name_prefix):
                        found.append((lsk, task))
                    if len(found) > limit:
                        page = found[:limit]
                        return _task_page(page, encode_cursor(page[-1][0]))
                if len(entries) < window:
                    return _task_page(found)
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        # Read the budget without filling the page: hand back what we have.
        assert position is not None
        return _task_page(found, encode_cursor(position))


def _task_page(found: list[tuple[str, Task]], next_cursor: str | None = None) -> Page[Task]:
    """Tasks by their listing position: each one's cursor goes on after it."""
    return Page([task for _, task in found], next_cursor, tuple(encode_cursor(lsk) for lsk, _ in found))


def ensure_table(table_name: str | None = None) -> None:
    """Create the table from the models where it does not exist (the local runtime and tests)."""
    if table_name is not None:
        for model in TABLE_MODELS:
            model.Meta.table_name = table_name
    if not TaskItem.exists():
        TaskItem.create_table(wait=True)


__all__ = ["DynamoTaskRepository", "bucket_pk", "ensure_table", "to_item", "to_task"]
