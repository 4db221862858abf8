"""In-memory fakes of the service ports (shared/services/ports/), for tests that need no AWS.
They behave like the DynamoDB and S3 adapters (tests/integration/test_repository_contract.py runs
the same contract over both task repositories; tests/integration/test_pipeline_store_contract.py
over both pipeline stores, the in-memory one in tests/support/pipeline_store.py, which works on
an InMemoryTaskRepository's state; tests/integration/test_schedules_contract.py over both stores
of the EventBridge Scheduler API's groups and names, the in-memory one in
tests/support/schedules.py). The local runtime does not use them."""

from __future__ import annotations

import copy
import functools
import os
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

from shared.domain.claims import Success
from shared.domain.errors import ConcurrentUpdate, LimitNotFound, OriginTaken, SundialError, TaskNotFound
from shared.domain.firing import occurrence_key, run_id_for
from shared.domain.ids import parse_task_id
from shared.domain.jobs import (
    WATCHED_JOBS,
    JobPage,
    JobSpec,
    JobStatus,
    JobView,
    JsonValue,
    LevelProgress,
    NewJobRecord,
    StepFailure,
)
from shared.domain.limits import Limit, LimitSpec
from shared.domain.quota import fits
from shared.domain.signing import SECRET_BYTES, NewSecret, SecretInfo, secret_text
from shared.domain.states import ENDED, WATCHED_TASKS, RunStatus, TaskFilter, TaskStatus
from shared.domain.tasks import DeadLetterRef, Page, Priority, Run, Task, matches
from shared.domain.tenants import MAX_TASKS
from shared.domain.times import from_ms, to_ms
from shared.store.dynamo import run_position
from shared.store.keys import decode_cursor, encode_cursor, list_sk, task_key
from shared.store.quota import refused

# --- tasks -----------------------------------------------------------------------------------


def _replaced(obj: Any, **changes: Any) -> Any:
    """``dataclasses.replace`` for the frozen domain classes without ``__post_init__`` (Task, Run):
    the same object, made without calling ``__init__`` field by field. The explorer (verify/)
    reads tasks hundreds of thousands of times a run, and ``replace`` was a tenth of it."""
    made = object.__new__(type(obj))
    made.__dict__.update(obj.__dict__, **changes)
    return made


def _position(task: Task) -> str:
    return list_sk(to_ms(task.created_at), task.id)


Method = TypeVar("Method", bound=Callable[..., Any])


def atomic(method: Method) -> Method:
    """A method run under its object's ``table_lock``: each is one conditional write or consistent
    read, atomic as DynamoDB makes them whichever thread calls (the trigger fires the records of a
    batch on a thread each)."""

    @functools.wraps(method)
    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self.table_lock:
            return method(self, *args, **kwargs)

    return cast(Method, locked)


def ttl(instant: datetime) -> datetime:
    """An expiry as DynamoDB keeps it: ``expires_at`` is a TTL attribute, whole epoch seconds."""
    return from_ms(to_ms(instant) // 1000 * 1000)


@dataclass
class RunFields:
    """The run fields of a task's home item (``TaskItem``, shared/store/models.py): the run of its
    current occurrence, as the pipeline writes them (tests/support/pipeline_store.py). As on the
    item they outlive the run: a re-arm removes its status and what it did but keeps ``run_id``,
    ``run_due_ms`` and ``attempts`` (a first claim compares its due time with ``run_due_ms``)."""

    run_id: str | None = None
    run_due_ms: int | None = None
    run_status: RunStatus | None = None
    attempts: int | None = None
    fired_ms: int | None = None
    lateness_ms: int | None = None
    throttled_ms: int | None = None
    lease_until_ms: int | None = None
    run_log: str | None = None
    """The trigger batch whose run log holds this run's success, if it succeeded."""
    last_error: str | None = None
    targets_done: int | None = None
    """Bit i set: target i already succeeded for this run (a retry calls only the others)."""
    started: tuple[str, ...] | None = None
    """What the run's targets started so far (``run_started``)."""

    @classmethod
    def written(cls, run: Run | None) -> RunFields:
        """What ``to_item`` (shared/store/dynamo.py) writes of a new item's run."""
        if run is None:
            return cls()
        fired = to_ms(run.fired_at) if run.fired_at is not None else None
        return cls(run.run_id, to_ms(run.scheduled_for), run.status, run.attempts, fired, run.lateness_ms,
                   last_error=run.last_error)  # fmt: skip

    def run(self, task: Task) -> Run | None:
        """The run these fields hold (``run_of``): none without an id, a due time and a status."""
        if self.run_id is None or self.run_due_ms is None or self.run_status is None:
            return None
        return Run(
            run_id=self.run_id,
            task_id=task.id,
            scheduled_for=from_ms(self.run_due_ms),
            status=self.run_status,
            attempts=self.attempts or 0,
            fired_at=from_ms(self.fired_ms) if self.fired_ms is not None else None,
            lateness_ms=self.lateness_ms,
            last_error=self.last_error,
            throttled_ms=self.throttled_ms or 0,
            parent=task.chain.parent if task.chain is not None else None,
            started=self.started or (),
        )


@dataclass
class Occurrence:
    """An occurrence item (``OccurrenceItem``): a later occurrence of a task, a pointer in the
    bucket of its due minute for the scanners."""

    task_id: str
    due_ms: int
    staged_ms: int | None
    """Its writer staged it itself: the scanners skip it."""
    priority: Priority


@dataclass
class RecordedRun:
    """A run item ``R#<task id>`` (``RunItem``): a finished occurrence of a recurring task, or an
    extra run's place in its task's history (``child``: the item that holds the extra run)."""

    run: Run
    expires_at: datetime | None
    child: str | None = None


class InMemoryTaskRepository:
    """Same behaviour as the DynamoDB repository, in dicts (for fast domain tests). What it keeps
    is what the table holds, so the in-memory pipeline store (tests/support/pipeline_store.py)
    works on it as DynamoPipelineStore does on DynamoTaskRepository's table: a task created here
    is scanned, claimed and fired there, and its runs and status are read here."""

    def __init__(self, default_max_tasks: int = MAX_TASKS, retention: timedelta = timedelta(days=30)) -> None:
        self._tasks: dict[str, Task] = {}
        """Each task's home item but its run fields (a task read here gets its run from
        :attr:`run_fields`)."""
        self.run_fields: dict[str, RunFields] = {}
        self.staged_ms: dict[str, int] = {}
        """The due time each item's writer staged itself (the scanners skip the item then)."""
        self.ended_run_ms: dict[str, int] = {}
        """The scheduled time of each task's ``ended_run`` (an older one never overwrites it)."""
        self.occurrences: dict[tuple[int, str], Occurrence] = {}
        """The occurrence items, by (bucket shard, sort key)."""
        self.recorded_runs: dict[str, dict[str, RecordedRun]] = {}
        """The run items of each task, by sort key (``<scheduled ms>#<run id>``)."""
        self.run_logs: dict[str, dict[str, Success]] = {}
        """The run-log items ``RL#<batch id>``: the successes of one trigger batch, by run id."""
        self.redriven: dict[str, tuple[str, datetime]] = {}
        """The dead letters an extra run redrove, by their run id: the redrive's run id and when
        (what the DynamoDB transaction writes on the letter's item)."""
        self.default_max_tasks = default_max_tasks
        self.max_tasks: dict[str, int] = {}
        """Tenants with a quota of their own (the others have the default)."""
        self.counted: set[str] = set()
        """The tasks whose item is marked ``counted``: the write that ends one removes the mark
        and gives its tenant's place back."""
        self.live: Counter[str] = Counter()
        """Each tenant's ``live_tasks`` (shared/store/quota.py). A one-shot success in a run log
        gives its place back without writing its item (its mark stays)."""
        self.retention = retention
        """How long a run's record is kept (extra runs': the pipeline store has its own)."""
        self.table_lock = threading.RLock()
        """Held by each read and write, the pipeline store's too (:func:`atomic`)."""
        self.copy_reads = True
        """Each read answers a copy, as a table's does (a test that changes what it read changes
        nothing stored). The explorer (verify/) turns it off: the product never changes what it
        reads (its tasks are frozen), and the copies were a third of its time."""

    @atomic
    def create(self, task: Task, *, staged: bool = False) -> Task:
        self._check_room(task.tenant, 1)
        return self._store(task, counted=True, staged=staged)

    def _check_room(self, tenant: str, wanted: int) -> None:
        limit = self.max_tasks.get(tenant, self.default_max_tasks)
        if not fits(self.live_tasks(tenant), limit, wanted):
            raise refused(tenant, limit, wanted)

    def _store(self, task: Task, *, counted: bool, staged: bool) -> Task:
        task_key(task.id)
        if task.id in self._tasks:
            raise ConcurrentUpdate(f"task {task.id} already exists")
        self._tasks[task.id] = replace(task, version=1, run=None)
        self.run_fields[task.id] = RunFields.written(task.run)
        if staged:
            self.staged_ms[task.id] = to_ms(task.due_at)
        if counted:
            self.counted.add(task.id)
            self.live[task.tenant] += 1
        return self.item_task(task.id, logged=False)

    @atomic
    def live_tasks(self, tenant: str) -> int:
        return self.live[tenant]

    @atomic
    def item_task(self, task_id: str, *, logged: bool = True) -> Task:
        """The task an item holds, its run read off its run fields (``to_task``); ``logged``: a
        firing run its batch's run log lists has succeeded, and a one-shot task whose run that
        is is completed (as a read with the run logs resolves it)."""
        stored = self._tasks[task_id]
        fields = self.run_fields.setdefault(task_id, RunFields())
        task = _replaced(stored, run=fields.run(stored))
        run = task.run
        entry = self.run_logs.get(fields.run_log or "", {}).get(run.run_id) if run is not None else None
        if logged and run is not None and run.status is RunStatus.FIRING and entry is not None:
            succeeded = replace(
                run,
                status=RunStatus.SUCCEEDED,
                fired_at=from_ms(entry.fired_ms),
                lateness_ms=entry.lateness_ms,
                attempts=entry.attempts,
                throttled_ms=entry.throttled_ms,
            )
            task = replace(task, run=succeeded)
            next_fire = to_ms(task.next_fire_at) if task.next_fire_at is not None else None
            if task.status is TaskStatus.SCHEDULED and next_fire == fields.run_due_ms:
                task = replace(task, status=TaskStatus.COMPLETED, next_fire_at=None)
        return copy.deepcopy(task) if self.copy_reads else task

    @atomic
    def get(self, tenant: str, task_id: str) -> Task:
        task_key(task_id)
        task = self._tasks.get(task_id.upper())
        if task is None or task.tenant != tenant or task.parent_id is not None:
            raise TaskNotFound(f"task {task_id!r} not found")
        return self.item_task(task.id)

    @atomic
    def get_extra(self, tenant: str, item_id: str) -> Task:
        task_key(item_id)
        task = self._tasks.get(item_id.upper())
        if task is None or task.tenant != tenant or task.parent_id is None:
            raise TaskNotFound(f"run item {item_id!r} not found")
        return self.item_task(task.id)

    @atomic
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
        after = decode_cursor(cursor) if cursor else None
        listed = (self.item_task(t.id) for t in self._tasks.values() if t.tenant == tenant and t.parent_id is None)
        mine = sorted(listed, key=_position, reverse=True)
        if after is not None:
            mine = [t for t in mine if _position(t) < after]
        matching = [t for t in mine if matches(t, status, name_prefix, tag)]
        page = matching[:limit]
        more = len(matching) > limit
        return Page(page, encode_cursor(_position(page[-1])) if more else None)

    @atomic
    def count(self, tenant: str, status: TaskFilter) -> int:
        if status not in WATCHED_TASKS:
            raise ValueError(f"{status.value} tasks are not counted: the status index holds no such task")
        listed = (self.item_task(t.id) for t in self._tasks.values() if t.tenant == tenant and t.parent_id is None)
        return sum(1 for t in listed if matches(t, status, None))

    @atomic
    def update(self, task: Task, *, staged: bool = False, dropped_tags: Mapping[str, str] | None = None) -> Task:
        """What a client owns (definition, status, the armed occurrence), never the pipeline's
        run fields; a final status frees a counted task's place (``_finish``) unless it is a
        one-shot whose run is firing (that run's outcome frees it); an occurrence armed outside
        the home item's bucket gets an occurrence item there."""
        current = self._tasks.get(task.id)
        if current is None:
            raise TaskNotFound(f"task {task.id!r} not found")
        if current.version != task.version:
            raise ConcurrentUpdate(f"task {task.id} changed meanwhile; read it again")
        kept = {name: getattr(current, name) for name in _NOT_A_CLIENTS}
        self._tasks[task.id] = replace(task, version=task.version + 1, run=None, **kept)
        due_ms = to_ms(task.due_at)
        if staged:
            self.staged_ms[task.id] = due_ms
        else:
            self.staged_ms.pop(task.id, None)
        firing = self.run_fields.get(task.id, RunFields()).run_status is RunStatus.FIRING
        if task.status in ENDED and task.id in self.counted and (task.recurring or not firing):
            self.counted.discard(task.id)
            self.live[current.tenant] -= 1
            return replace(task, version=task.version + 1)
        home = parse_task_id(task.id)
        if home.due_ms != due_ms and task.status is TaskStatus.SCHEDULED:
            key = (home.shard, occurrence_key(task.id, due_ms))
            self.occurrences[key] = Occurrence(task.id, due_ms, due_ms if staged else None, task.priority)
        return self.item_task(task.id)

    @atomic
    def create_many(self, tasks: Sequence[tuple[Task, bool]]) -> Sequence[Task | SundialError]:
        for tenant in sorted({task.tenant for task, _ in tasks}):
            self._check_room(tenant, sum(1 for task, _ in tasks if task.tenant == tenant))
        return [self._store(task, counted=True, staged=staged) for task, staged in tasks]

    @atomic
    def create_run(self, extra: Task, *, staged: bool, redrive: DeadLetterRef | None = None) -> Task:
        """The extra run's item and its place in its task's history (a run item pointing at
        it), all or nothing, as the DynamoDB transaction writes them."""
        if extra.parent_id is None:
            raise ValueError("an extra run has a parent task")
        if extra.id in self._tasks:
            raise ConcurrentUpdate(f"run {extra.id} exists already")
        due_ms = to_ms(extra.due_at)
        run_id = run_id_for(extra.id, due_ms)
        if redrive is not None:
            if redrive.run_id in self.redriven:
                raise ConcurrentUpdate("that dead letter was redriven already")
            self.redriven[redrive.run_id] = (run_id, extra.created_at)
        stored = self._store(extra, counted=False, staged=staged)
        place = Run(
            run_id,
            extra.parent_id,
            from_ms(due_ms),
            extra.run.status if extra.run is not None else RunStatus.STAGED,
            last_error=extra.run.last_error if extra.run is not None else None,
            parent=extra.chain.parent if extra.chain is not None else None,
        )
        record = RecordedRun(place, ttl(from_ms(due_ms) + self.retention), child=extra.id)
        self.recorded_runs.setdefault(extra.parent_id, {})[f"{due_ms:013d}#{run_id}"] = record
        return stored

    @atomic
    def runs(self, task: Task, *, limit: int, cursor: str | None) -> Page[Run]:
        """The task's runs, newest first by scheduled time, as the DynamoDB repository reads them:
        its run items (an extra run's shows the run its item holds now; one past its retention
        is left out) and the current occurrence's run, which the task carries, in its place."""
        position = decode_cursor(cursor) if cursor else None
        records = self.recorded_runs.get(task.id, {})
        older = sorted((sk for sk in records if position is None or sk < position), reverse=True)
        now = datetime.now(UTC)  # as DynamoDB's read: a run past its retention is left out
        found: list[Run] = []
        for sk in older[: limit + 1]:
            record = records[sk]
            if record.expires_at is not None and record.expires_at <= now:
                continue
            run = record.run
            child = self.item_task(record.child).run if record.child in self._tasks else None
            found.append(replace(child, task_id=task.id, scheduled_for=run.scheduled_for) if child is not None else run)
        current = task.run
        if (
            current is not None
            and (position is None or run_position(current) < position)
            and all(r.run_id != current.run_id for r in found)
        ):
            found.append(current)
        found.sort(key=run_position, reverse=True)
        page = found[:limit]
        after = tuple(encode_cursor(run_position(run)) for run in page)
        return Page(page, after[-1] if len(found) > limit else None, after)


_NOT_A_CLIENTS = ("tenant", "created_at", "parent_id", "stops_with_parent", "chain", "ended_run")
"""What a client's update never writes (the DynamoDB update's attribute list leaves them out)."""


# --- jobs ------------------------------------------------------------------------------------


@dataclass
class InMemoryJob:
    spec: JobSpec
    levels: list[int] = field(default_factory=list)
    total: int = 0
    done: frozenset[tuple[int, int]] = frozenset()
    notified: set[int] = field(default_factory=set)
    status: JobStatus = JobStatus.RUNNING
    result: JsonValue = None
    result_ref: str | None = None
    error: str | None = None
    post_started: bool = False
    pre_started: bool = False
    planned: bool = False
    failure: StepFailure | None = None
    notify_failure: StepFailure | None = None
    total_items: int | None = None
    shard_items: dict[str, int] = field(default_factory=dict)
    tenant: str = "default"
    name: str | None = None
    created_ms: int = 0


class InMemoryJobStore:
    """The job item as the job's steps (``JobStore``) and the API (``JobRecords``) read and write
    it (shared/store/jobs.py)."""

    def __init__(self) -> None:
        self.jobs: dict[str, InMemoryJob] = {}

    def add(self, spec: JobSpec) -> None:
        self.jobs[spec.job_id] = InMemoryJob(spec)

    def create(self, job: NewJobRecord) -> bool:
        if job.job_id in self.jobs:
            return False
        spec = JobSpec(job.job_id, job.sharding, job.notify_every_percent, progress_key=job.progress_key)
        self.jobs[job.job_id] = InMemoryJob(spec, tenant=job.tenant, name=job.name, created_ms=job.created_ms)
        return True

    def view(self, tenant: str, job_id: str) -> JobView | None:
        job = self.jobs.get(job_id)
        return self.current(job_id) if job is not None and job.tenant == tenant else None

    def views(self, tenant: str, limit: int, cursor: str | None, status: JobStatus | None = None) -> JobPage:
        """Newest first by listing position, full pages whatever the filter (the DynamoDB store's
        are full for the statuses the status index holds)."""
        after = decode_cursor(cursor) if cursor else None
        listed = sorted(
            ((list_sk(job.created_ms, job_id), job_id) for job_id, job in self.jobs.items() if job.tenant == tenant),
            reverse=True,
        )
        matching = [
            (position, job_id)
            for position, job_id in listed
            if (after is None or position < after) and (status is None or self.jobs[job_id].status is status)
        ]
        page = matching[:limit]
        views = [view for _, job_id in page if (view := self.current(job_id)) is not None]
        more = len(matching) > limit
        return JobPage(views, encode_cursor(page[-1][0]) if more else None, tuple(encode_cursor(p) for p, _ in page))

    def count(self, tenant: str, status: JobStatus) -> int:
        if status not in WATCHED_JOBS:
            raise ValueError(f"{status.value} jobs are not counted: the status index holds no such job")
        return sum(1 for job in self.jobs.values() if job.tenant == tenant and job.status is status)

    def spec(self, job_id: str) -> JobSpec:
        job = self.jobs[job_id]
        return replace(job.spec, status=job.status)

    def planned(self, job_id: str, shards_per_level: Sequence[int], total_items: int | None = None) -> None:
        self.jobs[job_id].levels = list(shards_per_level)
        self.jobs[job_id].total = sum(shards_per_level)
        self.jobs[job_id].planned = True
        self.jobs[job_id].total_items = total_items

    def shards_per_level(self, job_id: str) -> list[int]:
        return self.jobs[job_id].levels

    def pre_started(self, job_id: str) -> None:
        self.jobs[job_id].pre_started = True

    def shard_done(
        self, job_id: str, level: int, shard: int, *, by_level: bool = True, items: int | None = None
    ) -> tuple[int, int]:
        job = self.jobs[job_id]
        job.done = job.done | {(level, shard)}
        if items is not None:
            job.shard_items[f"{level}/{shard}"] = items
        return len(job.done), job.total

    def claim_notification(self, job_id: str, percent: int) -> bool:
        job = self.jobs[job_id]
        if percent in job.notified or job.status is not JobStatus.RUNNING:
            return False
        job.notified.add(percent)
        return True

    def claim_post(self, job_id: str) -> bool:
        job = self.jobs[job_id]
        if job.status is not JobStatus.RUNNING:
            return False
        job.post_started = True
        return True

    def cancel(self, tenant: str, job_id: str, now_ms: int = 0) -> JobView | None:
        """What the API's conditional write does (shared/store/jobs.py)."""
        job = self.jobs.get(job_id)
        if job is None or job.tenant != tenant or job.status is not JobStatus.RUNNING or job.post_started:
            return None
        job.status = JobStatus.CANCELLED
        return self.current(job_id)

    def succeeded(
        self, job_id: str, result: JsonValue, *, result_ref: str | None = None, result_bytes: int | None = None
    ) -> bool:
        job = self.jobs[job_id]
        if job.status is not JobStatus.RUNNING:
            return False
        job.status, job.result, job.result_ref = JobStatus.SUCCEEDED, result, result_ref
        return True

    def failed(self, job_id: str, error: str, failure: StepFailure | None = None) -> bool:
        job = self.jobs[job_id]
        if job.status is not JobStatus.RUNNING:
            return False
        job.status, job.error, job.failure = JobStatus.FAILED, error, failure
        return True

    def notify_failed(self, job_id: str, failure: StepFailure) -> None:
        self.jobs[job_id].notify_failure = failure

    def current(self, job_id: str) -> JobView | None:
        job = self.jobs.get(job_id)
        if job is None:
            return None
        planned = job.planned
        levels = tuple(
            LevelProgress(lv, n, sum(1 for level, _ in job.done if level == lv)) for lv, n in enumerate(job.levels)
        )
        return JobView(
            job_id, job.name, job.status, len(job.done), job.total if planned else None, None, job.result, job.error,
            job.created_ms, None, job.post_started, levels=levels if planned else None,
            post_started_ms=1 if job.post_started else None,
        )  # fmt: skip


class InMemoryBlobs:
    def __init__(self) -> None:
        self.objects: dict[str, JsonValue] = {}

    def put(self, key: str, value: JsonValue) -> None:
        self.objects[key] = value

    def get(self, key: str) -> JsonValue:
        return self.objects[key]

    def url(self, key: str, expires_s: int) -> str:
        return f"memory://{key}?expires={expires_s}"


@dataclass
class InMemorySigningSecrets:
    """shared.services.ports.tenants.SigningSecrets in memory (values in the clear: tests only)."""

    secrets: dict[str, list[tuple[SecretInfo, str]]] = field(default_factory=dict)
    reads: int = 0
    """How many times the values were read (a decrypt each in the real adapter)."""

    def infos(self, tenant: str) -> Sequence[SecretInfo]:
        return [info for info, _ in self.secrets.get(tenant, [])]

    def active(self, tenant: str, now_ms: int) -> Sequence[str]:
        self.reads += 1
        if not self.secrets.get(tenant):
            self.secrets[tenant] = [(SecretInfo(f"s{now_ms}", now_ms, None), secret_text(os.urandom(SECRET_BYTES)))]
        return [value for info, value in self.secrets[tenant] if info.active(now_ms)]

    def rotate(self, tenant: str, previous_expires_in_ms: int, now_ms: int) -> NewSecret:
        until = now_ms + previous_expires_in_ms
        kept = [
            (replace(info, expires_ms=min(until, info.expires_ms if info.expires_ms is not None else until)), value)
            for info, value in self.secrets.get(tenant, [])
        ]
        created = NewSecret(SecretInfo(f"s{now_ms}", now_ms, None), secret_text(os.urandom(SECRET_BYTES)))
        self.secrets[tenant] = [(created.info, created.secret), *kept]
        return created


@dataclass
class InMemoryLimits:
    """shared.services.ports.tenants.LimitStore in memory (no state items: the trigger's side is not here)."""

    limits: dict[tuple[str, str], Limit] = field(default_factory=dict)
    reads: int = 0
    """How many times a tenant's limits were read (``for_tenant``: a Query each in the real adapter)."""

    def put(self, tenant: str, name: str, spec: LimitSpec, now_ms: int) -> Limit:
        taken = [x for (t, n), x in self.limits.items() if t == tenant and n != name and x.origin == spec.origin]
        if spec.origin is not None and taken:
            raise OriginTaken(f"limit {taken[0].name!r} has the origin {spec.origin} already")
        old = self.limits.get((tenant, name))
        limit = Limit(
            tenant,
            name,
            spec.per_second,
            spec.burst,
            spec.max_in_flight,
            spec.origin,
            old.version + 1 if old is not None else 1,
            old.created_at if old is not None else from_ms(now_ms),
            from_ms(now_ms),
        )
        self.limits[tenant, name] = limit
        return limit

    def get(self, tenant: str, name: str) -> Limit:
        if (tenant, name) not in self.limits:
            raise LimitNotFound(f"no limit {name!r}")
        return self.limits[tenant, name]

    def delete(self, tenant: str, name: str) -> None:
        self.get(tenant, name)
        del self.limits[tenant, name]

    def for_tenant(self, tenant: str) -> Sequence[Limit]:
        self.reads += 1
        return [self.limits[key] for key in sorted(self.limits) if key[0] == tenant]
