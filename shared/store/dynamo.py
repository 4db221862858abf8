"""The task repository on DynamoDB, through the PynamoDB models."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from pynamodb.exceptions import DoesNotExist, PynamoDBException, TransactWriteError
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from shared.domain.errors import ConcurrentUpdate, StorageUnavailable, SundialError, TaskNotFound
from shared.domain.firing import run_id_for
from shared.domain.states import WATCHED_TASKS, LetterStatus, RunStatus, TaskFilter, TaskStatus
from shared.domain.tasks import DeadLetterRef, Page, Run, Task, matches
from shared.domain.tenants import MAX_TASKS
from shared.domain.times import from_ms, to_ms, utc_now
from shared.observability import logger
from shared.store import status_index, tags
from shared.store.items import occurrence_item, to_item, to_task
from shared.store.keys import decode_cursor, encode_cursor, task_key
from shared.store.listing import pages_for, positions
from shared.store.models import BucketItem, DeadLetterItem, RunItem, TaskItem, is_conflict
from shared.store.quota import TenantQuota, failed_conditions, free, transact
from shared.store.runs import run_from_item, run_item, run_logs, run_position
from shared.store.table import TABLE_MODELS

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


def _task_id_of(serialized: dict[str, Any]) -> str:
    return str(serialized["task_id"]["S"])


FINAL = (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED)


class DynamoTaskRepository:
    def __init__(
        self,
        list_shards: int,
        retention: timedelta = timedelta(days=30),
        sleep: Callable[[float], None] = time.sleep,  # wall: DynamoDB's backoff
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
            tags.write(tags.entries_of(task, self.list_shards, self.retention))  # before the task: it is found by them
            item.save(condition=TaskItem.pk.does_not_exist())
        except StorageUnavailable:
            self._release(task.tenant, 1)
            raise
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

    def get_extra(self, tenant: str, item_id: str) -> Task:
        pk, sk = task_key(item_id)
        try:
            item = BucketItem.get(pk, sk, consistent_read=True)
        except DoesNotExist as exc:
            raise TaskNotFound(f"run item {item_id!r} not found") from exc
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        if not isinstance(item, TaskItem) or item.tenant != tenant or not item.parent_id:
            raise TaskNotFound(f"run item {item_id!r} not found")
        return to_task(item, run_logs([item]))

    def update(self, task: Task, *, staged: bool = False, dropped_tags: Mapping[str, str] | None = None) -> Task:
        """Write what a client owns (definition, status, the armed occurrence) with one
        UpdateItem conditional on the version read; the pipeline's run fields are never
        touched. An occurrence armed outside the home item's bucket gets a pointer there.
        A final status (cancelled, completed) frees the task's place in its tenant's quota in
        the same write (:meth:`_finish`). The task's tag entries are written before (with the
        expiry the change gives them) and those of ``dropped_tags``, tags the change took away,
        deleted after (shared/store/tags.py)."""
        tags.write(tags.entries_of(task, self.list_shards, self.retention))
        written = self._update(task, staged=staged)
        if dropped_tags:
            tags.write((), tags.dropped_entries(task, dropped_tags, self.list_shards))
        return written

    def _update(self, task: Task, *, staged: bool) -> Task:
        fresh = to_item(task, self.list_shards)
        due_ms = to_ms(task.due_at)
        attributes = (
            "name", "status", "schedule", "anchor_ms", "targets", "multicast", "payload",
            "retry", "misfire", "priority", "due_ms", "next_fire_ms", "updated_ms", "expires_at",
            "alert", "pause_after_failures", "paused_reason", "failures", "on_success", "on_failure",
            "eventbridge", "tags",
            "lpk", "lsk",  # a task a listing page names gets its own index entry (shared/store/listing.py)
            "spk", "ssk",  # its entry in the status index, or none (docs/status-index.md)
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
            # the bucket item before the arming: a writer that dies between the two must not
            # leave the task armed for an occurrence no scan finds (an item the task is not
            # armed for is staged and refused by the claim)
            pointer = occurrence_item(task, due_ms, staged)
            if pointer is not None and task.status is TaskStatus.SCHEDULED:
                pointer.save()
            item.update(actions=actions, condition=TaskItem.version == task.version)
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
            now = utc_now()  # a run past its retention is left out (TTL deletes it later)
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
            if child is not None:  # its run as its item holds it, at its place (a backfill's: its occurrence)
                current = to_task(child, logs).run
                run = replace(current, task_id=task.id, scheduled_for=run.scheduled_for) if current is not None else run
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
        pages = pages_for(
            [(task, item) for (task, _), item in zip(tasks, items, strict=True)], self.list_shards, self.retention
        )
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
        try:  # before the tasks they name: a written task is always listed (and found by its tags)
            for page in pages:
                page.save()
            entries = [tags.entries_of(task, self.list_shards, self.retention) for task, _ in tasks]
            tags.write([entry for listed in entries for entry in listed])
        except PynamoDBException as exc:
            error = _storage_error(exc)
            unwritten = {item.task_id: error for item in items}
        except StorageUnavailable as exc:
            unwritten = {item.task_id: exc for item in items}
        for start in range(0, len(items) if not unwritten else 0, BATCH_WRITE_ITEMS):
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
        placed = Run(
            run_id,
            extra.parent_id,
            extra.due_at,
            extra.run.status if extra.run is not None else RunStatus.STAGED,
            last_error=extra.run.last_error if extra.run is not None else None,
            parent=extra.chain.parent if extra.chain is not None else None,
        )
        record = run_item(extra.parent_id, extra.tenant, placed, from_ms(due_ms) + self.retention, child=extra.id)
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
                            *status_index.actions(DeadLetterItem, None),  # off the waiting list
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

    def _list_watched(
        self,
        tenant: str,
        states: Sequence[TaskFilter],
        wanted: TaskFilter,
        limit: int,
        cursor: str | None,
        name_prefix: str | None,
    ) -> Page[Task]:
        """A page of the tasks in ``states`` through the status index, which names those only: each
        round asks for what the page still lacks (a name filter: a window, as the listing does)."""
        values = [s.value for s in states]

        def read(position: str | None, count: int) -> list[tuple[str, str, str]]:
            return status_index.entries(tenant, "task", values, self.list_shards, position, count)

        def want(found: int) -> int:
            return limit + 1 - found if name_prefix is None else max(limit + 1, FILTERED_WINDOW)

        return self._page_of(tenant, read, want, lambda task: matches(task, wanted, name_prefix), limit, cursor)

    def _list_tagged(
        self,
        tenant: str,
        tag: tuple[str, str],
        status: TaskStatus | TaskFilter | None,
        limit: int,
        cursor: str | None,
        name_prefix: str | None,
    ) -> Page[Task]:
        """A page of the tasks that have ``tag``, through its entries: each round asks for what
        the page still lacks (another filter too: a window, as the listing does)."""

        def read(position: str | None, count: int) -> list[tuple[str, str, str]]:
            return tags.positions(tenant, tag, self.list_shards, position, count)

        filtered = status is not None or name_prefix is not None

        def want(found: int) -> int:
            return max(limit + 1, FILTERED_WINDOW) if filtered else limit + 1 - found

        return self._page_of(tenant, read, want, lambda task: matches(task, status, name_prefix, tag), limit, cursor)

    def _page_of(
        self,
        tenant: str,
        read: Callable[[str | None, int], Sequence[tuple[str, str, str]]],
        want: Callable[[int], int],
        keep: Callable[[Task], bool],
        limit: int,
        cursor: str | None,
    ) -> Page[Task]:
        """A page of the tasks an index names, newest first: ``read(position, count)`` answers up to
        ``count`` entries (position, pk, sk) before ``position``, a round asks for ``want(found so
        far)``, and the items are read by key and checked again (another tenant's, or past its
        retention, never listed; ``keep`` says whether a task passes the filters). At most
        LIST_READ_BUDGET entries are read a request (whole rounds, at least one): a page may then come
        back short, even empty, with a cursor to go on from."""
        position = decode_cursor(cursor) if cursor else None
        now = utc_now()  # past its retention, a task is left out (TTL deletes it later)
        found: list[tuple[str, Task]] = []
        done = 0
        try:
            while True:
                asked = want(len(found))
                if done and done + asked > LIST_READ_BUDGET:
                    break
                entries = read(position, asked)
                if not entries:
                    return _task_page(found)
                keys = [(pk, sk) for _, pk, sk in entries]
                items = {(i.pk, i.sk): i for i in TaskItem.batch_get(keys, consistent_read=True)}
                logs = run_logs(list(items.values()))
                done += len(entries)
                for at, pk, sk in entries:
                    item = items.get((pk, sk))
                    position = at
                    if item is None or item.tenant != tenant or item.expired(now):
                        continue
                    task = to_task(item, logs)
                    if keep(task):
                        found.append((at, task))
                    if len(found) > limit:
                        page = found[:limit]
                        return _task_page(page, encode_cursor(page[-1][0]))
                if len(entries) < asked:
                    return _task_page(found)
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc
        # Read the budget without filling the page: hand back what we have.
        assert position is not None
        return _task_page(found, encode_cursor(position))

    def count(self, tenant: str, status: TaskFilter) -> int:
        """How many of the tenant's tasks are in ``status``, one the status index holds (failed,
        paused, paused after failures): exact, whatever the number of its other tasks."""
        states = WATCHED_TASKS.get(status)
        if states is None:
            raise ValueError(f"{status.value} tasks are not counted: the status index holds no such task")
        try:
            return status_index.count(tenant, "task", [s.value for s in states], self.list_shards)
        except PynamoDBException as exc:
            raise _storage_error(exc) from exc

    # Listing: the tenant's index entries and listing pages, newest first (shared/store/listing.py).

    def list(
        self,
        tenant: str,
        *,
        status: TaskStatus | TaskFilter | None,
        limit: int,
        cursor: str | None,
        name_prefix: str | None = None,
        tag: tuple[str, str] | None = None,
    ) -> Page[Task]:
        """Newest first through an index (never a scan). A tag reads that tag's entries
        (shared/store/tags.py), which name its tasks only: a full page whatever the tenant's other
        tasks, unless another filter leaves some out. A status somebody must look at (failed,
        paused, paused after failures) reads the status index, which holds those tasks only: a
        full page whatever the tenant's other tasks (docs/status-index.md). Other filters are
        applied to the items the listing index names, a window at a time, for at most
        LIST_READ_BUDGET items per request: a page may come back short, even empty, with a cursor
        to go on from."""
        if tag is not None:
            return self._list_tagged(tenant, tag, status, limit, cursor, name_prefix)
        if status is not None and (states := WATCHED_TASKS.get(TaskFilter(status.value))) is not None:
            return self._list_watched(tenant, states, TaskFilter(status.value), limit, cursor, name_prefix)
        filtered = status is not None or name_prefix is not None
        window = max(limit + 1, FILTERED_WINDOW) if filtered else limit + 1

        def read(position: str | None, count: int) -> list[tuple[str, str, str]]:
            return positions(tenant, self.list_shards, position, count)

        return self._page_of(
            tenant, read, lambda _: window, lambda task: matches(task, status, name_prefix), limit, cursor
        )


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
        return
    _add_missing_indexes()


def _add_missing_indexes() -> None:
    """A table made by an earlier version (a kept data folder) gets the indexes the models have
    since gained, one UpdateTable each (DynamoDB builds one new index at a time), as a
    deployment's gets them from CloudFormation; DynamoDB fills a new index from the items that
    carry its keys (docs/status-index.md, section 5, puts the older items in)."""
    connection = TaskItem._get_connection()
    client = connection.connection.client
    present = {
        index["IndexName"]
        for index in client.describe_table(TableName=connection.table_name)["Table"].get("GlobalSecondaryIndexes", [])
    }
    for index in TaskItem._get_schema()["global_secondary_indexes"]:
        if index["index_name"] in present:
            continue
        client.update_table(
            TableName=connection.table_name,
            AttributeDefinitions=index["attribute_definitions"],
            GlobalSecondaryIndexUpdates=[
                {
                    "Create": {
                        "IndexName": index["index_name"],
                        "KeySchema": index["key_schema"],
                        "Projection": index["projection"],
                    }
                }
            ],
        )


__all__ = ["DynamoTaskRepository", "ensure_table"]
