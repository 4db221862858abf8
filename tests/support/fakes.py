"""In-memory fakes of the service ports (shared/services/ports.py), for tests that need no AWS.
They behave like the DynamoDB and S3 adapters (tests/integration/test_repository_contract.py runs
the same contract over both task repositories). The local runtime does not use them."""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from shared.domain.errors import ConcurrentUpdate, LimitNotFound, OriginTaken, SundialError, TaskNotFound
from shared.domain.jobs import JobSpec, JobStatus, JobView, JsonValue, LevelProgress, StepFailure
from shared.domain.limits import Limit, LimitSpec
from shared.domain.quota import fits
from shared.domain.signing import SECRET_BYTES, NewSecret, SecretInfo, secret_text
from shared.domain.states import TaskStatus
from shared.domain.tasks import DeadLetterRef, Page, Run, Task, matches
from shared.domain.tenants import MAX_TASKS
from shared.domain.times import from_ms, to_ms
from shared.store.keys import decode_cursor, encode_cursor, list_sk, task_key
from shared.store.quota import refused

# --- tasks -----------------------------------------------------------------------------------


def _position(task: Task) -> str:
    return list_sk(to_ms(task.created_at), task.id)


class InMemoryTaskRepository:
    """Same behaviour as the DynamoDB repository, in a dict (for fast domain tests)."""

    def __init__(self, default_max_tasks: int = MAX_TASKS) -> None:
        self._tasks: dict[str, Task] = {}
        self.redriven: set[str] = set()
        self.default_max_tasks = default_max_tasks
        self.max_tasks: dict[str, int] = {}
        """Tenants with a quota of their own (the others have the default)."""
        self.counted: set[str] = set()
        """The tasks counted in their tenant's quota (the fake has no pipeline to end them)."""

    def create(self, task: Task, *, staged: bool = False) -> Task:
        self._check_room(task.tenant, 1)
        return self._store(task, counted=True)

    def _check_room(self, tenant: str, wanted: int) -> None:
        limit = self.max_tasks.get(tenant, self.default_max_tasks)
        if not fits(self.live_tasks(tenant), limit, wanted):
            raise refused(tenant, limit, wanted)

    def _store(self, task: Task, *, counted: bool) -> Task:
        task_key(task.id)
        if task.id in self._tasks:
            raise ConcurrentUpdate(f"task {task.id} already exists")
        stored = replace(task, version=1)
        self._tasks[task.id] = stored
        if counted:
            self.counted.add(task.id)
        return copy.deepcopy(stored)

    def live_tasks(self, tenant: str) -> int:
        return sum(1 for task_id in self.counted if self._tasks[task_id].tenant == tenant)

    def get(self, tenant: str, task_id: str) -> Task:
        task_key(task_id)
        task = self._tasks.get(task_id.upper())
        if task is None or task.tenant != tenant or task.parent_id is not None:
            raise TaskNotFound(f"task {task_id!r} not found")
        return copy.deepcopy(task)

    def list(
        self, tenant: str, *, status: TaskStatus | None, limit: int, cursor: str | None, name_prefix: str | None = None
    ) -> Page[Task]:
        after = decode_cursor(cursor) if cursor else None
        listed = (t for t in self._tasks.values() if t.tenant == tenant and t.parent_id is None)
        mine = sorted(listed, key=_position, reverse=True)
        if after is not None:
            mine = [t for t in mine if _position(t) < after]
        matching = [t for t in mine if matches(t, status, name_prefix)]
        page = matching[:limit]
        more = len(matching) > limit
        return Page([copy.deepcopy(t) for t in page], encode_cursor(_position(page[-1])) if more else None)

    def update(self, task: Task, *, staged: bool = False) -> Task:
        current = self._tasks.get(task.id)
        if current is None:
            raise TaskNotFound(f"task {task.id!r} not found")
        if current.version != task.version:
            raise ConcurrentUpdate(f"task {task.id} changed meanwhile; read it again")
        stored = replace(task, version=task.version + 1)
        self._tasks[task.id] = stored
        if task.status in (TaskStatus.COMPLETED, TaskStatus.CANCELLED):
            self.counted.discard(task.id)
        return copy.deepcopy(stored)

    def create_many(self, tasks: Sequence[tuple[Task, bool]]) -> Sequence[Task | SundialError]:
        for tenant in sorted({task.tenant for task, _ in tasks}):
            self._check_room(tenant, sum(1 for task, _ in tasks if task.tenant == tenant))
        return [self._store(task, counted=True) for task, _ in tasks]

    def create_run(self, extra: Task, *, staged: bool, redrive: DeadLetterRef | None = None) -> Task:
        if redrive is not None:
            if redrive.run_id in self.redriven:
                raise ConcurrentUpdate("that dead letter was redriven already")
            self.redriven.add(redrive.run_id)
        return self._store(extra, counted=False)

    def runs(self, task: Task, *, limit: int, cursor: str | None) -> Page[Run]:
        """The fake has no pipeline: a task's runs are the one it carries and its extra runs'."""
        extra = [t.run for t in self._tasks.values() if t.parent_id == task.id and t.run is not None]
        items = ([task.run] if task.run is not None else []) + extra if cursor is None else []
        return Page(items[:limit])


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


class InMemoryJobStore:
    def __init__(self) -> None:
        self.jobs: dict[str, InMemoryJob] = {}

    def add(self, spec: JobSpec) -> None:
        self.jobs[spec.job_id] = InMemoryJob(spec)

    def spec(self, job_id: str) -> JobSpec:
        job = self.jobs[job_id]
        return replace(job.spec, status=job.status)

    def planned(self, job_id: str, shards_per_level: Sequence[int]) -> None:
        self.jobs[job_id].levels = list(shards_per_level)
        self.jobs[job_id].total = sum(shards_per_level)
        self.jobs[job_id].planned = True

    def shards_per_level(self, job_id: str) -> list[int]:
        return self.jobs[job_id].levels

    def pre_started(self, job_id: str) -> None:
        self.jobs[job_id].pre_started = True

    def shard_done(self, job_id: str, level: int, shard: int, *, by_level: bool = True) -> tuple[int, int]:
        job = self.jobs[job_id]
        job.done = job.done | {(level, shard)}
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

    def cancel(self, job_id: str) -> bool:
        """What the API's conditional write does (shared/store/jobs.py)."""
        job = self.jobs[job_id]
        if job.status is not JobStatus.RUNNING or job.post_started:
            return False
        job.status = JobStatus.CANCELLED
        return True

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
            job_id, None, job.status, len(job.done), job.total if planned else None, None, job.result, job.error, 0,
            None, job.post_started, levels=levels if planned else None, post_started_ms=1 if job.post_started else None,
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
    """shared.services.ports.SigningSecrets in memory (values in the clear: tests only)."""

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
    """shared.services.ports.LimitStore in memory (no state items: the trigger's side is not here)."""

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
