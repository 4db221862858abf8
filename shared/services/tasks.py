"""Use cases of the task API: the only place the API handler calls into."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from shared.domain import schedules as sched
from shared.domain.buckets import choose_shard
from shared.domain.chains import MAX_HOPS, Branch, ChainLink, ChainStart, chained_item_id
from shared.domain.errors import (
    ConcurrentUpdate,
    InvalidTransition,
    StorageUnavailable,
    SundialError,
    TaskNotFound,
    ValidationFailed,
    VersionMismatch,
)
from shared.domain.firing import Staged, Timing, resume_due, run_id_for, running, staged_for, writer_stages
from shared.domain.limits import Limit
from shared.domain.own import OwnResources
from shared.domain.patches import Keep, TaskPatch, patched
from shared.domain.registration import first_due, max_past_of, new_task
from shared.domain.schedules import At
from shared.domain.states import LetterStatus, RunStatus, TaskFilter, TaskStatus, check_task_transition
from shared.domain.tasks import (
    DeadLetter,
    DeadLetterRef,
    EventBridgeSchedule,
    Misfire,
    Page,
    Run,
    Target,
    Task,
    TaskSpec,
    WorkflowTarget,
)
from shared.domain.times import from_ms, to_ms, truncate_ms, utc_now
from shared.domain.workflows import NodeLink
from shared.services.limits import check_named_limits, named_limits
from shared.services.ports.pipeline import Stager
from shared.services.ports.tasks import DeadLetters, TaskRepository, WorkflowLookup
from shared.services.ports.tenants import LimitStore

CHANGE_ATTEMPTS = 5
MAX_REDRIVE = 100
"""Dead letters one ``{"all": true}`` redrive fires at most; its ``next_cursor`` goes on from there.
Each costs a transaction (the new run and the letter's mark), a staging message and, once per
task, a read: about 3 calls of 10-30 ms, so 100 take 1 to 9 s at worst, within the API function's
10 s only with the listing bounded too (the dead letters store reads at most a few hundred)."""


@dataclass(frozen=True)
class Redriven:
    """What one redrive request fired: (letter, new run id) each, and for ``{"all": true}`` where
    the next call goes on from (None: every letter has been looked at)."""

    runs: list[tuple[DeadLetter, str]]
    next_cursor: str | None = None


def _extra_spec(task: Task, now: datetime) -> TaskSpec:
    """What an extra run of ``task`` (run now, a chained run) fires: the task's targets and
    payload now, on its lane, and its chains (an extra run's end starts them too). Its dead
    letter alerts as the task's would; it is not one of the task's occurrences in a row (an
    item of its own), so it neither counts toward nor pauses the task."""
    alert = replace(task.alert, after_consecutive_failures=None) if task.alert is not None else None
    return replace(task.spec, schedule=At(now), misfire=None, alert=alert, pause_after_failures=None)


def _staged(task: Task) -> Staged:
    """The message of the task's armed occurrence, on the task's lane."""
    return staged_for(task.id, to_ms(task.due_at), one_shot=not task.recurring, priority=task.priority)


@dataclass
class TaskService:
    repository: TaskRepository
    bucket_shards: int
    retention: timedelta
    stager: Stager | None = None
    """Where a task due before the scanners' next window is staged by its writer."""
    dead_letters_store: DeadLetters | None = None
    timing: Timing = field(default_factory=Timing)
    own: OwnResources = field(default_factory=OwnResources)
    """Sundial's own resources, which no task may target."""
    clock: Callable[[], datetime] = utc_now
    randbytes: Callable[[int], bytes] = os.urandom
    workflows: WorkflowLookup | None = None
    """The tenants' workflows: a ``workflow`` target must name one (None: no check)."""
    limit_store: LimitStore | None = None
    """The tenants' limits per destination: a target's ``limit`` must name one of its tenant's
    (None: no check, as in tests that register without limits)."""

    def _now(self) -> datetime:
        return truncate_ms(self.clock())

    def _shard(self) -> int:
        return choose_shard(secrets.randbits(32), self.bucket_shards)

    def _check_own(self, spec: TaskSpec) -> None:
        """Refuse targets (the alert's too, and an EventBridge-made schedule's dead-letter queue,
        which the trigger writes to as to a target) that are Sundial's own resources."""
        self.own.check(spec.targets, spec.multicast)
        refused = self.own.refusal(spec.alert.target) if spec.alert is not None else None
        if refused is not None:
            raise ValidationFailed.on(f"alert.target.{refused[0]}", refused[1])
        dead_letters = spec.eventbridge.dead_letter_arn if spec.eventbridge is not None else None
        why = self.own.arn_refusal(dead_letters) if dead_letters is not None else None
        if why is not None:
            raise ValidationFailed.on("eventbridge.dead_letter_arn", why)

    def _check_limits(self, tenant: str, named: dict[str, str], known: list[Sequence[Limit]]) -> None:
        """A target's ``limit`` names one of the tenant's limits (read once per request, and only
        when a target names one: ``known`` keeps what was read)."""
        if not named or self.limit_store is None:
            return
        if not known:
            known.append(self.limit_store.for_tenant(tenant))
        check_named_limits(named, known[0])

    def _check_chains(
        self, tenant: str, spec: TaskSpec, known: dict[str, str | None], before: Task | None = None
    ) -> None:
        """``on_success[i]`` / ``on_failure[i]`` name tasks of the tenant that are not cancelled
        (another tenant's task is one that does not exist: nothing leaks). A change checks the
        ids it adds only: a child cancelled since does not block changing something else (it
        is skipped when its turn comes). ``known``: what this request has read (id -> why it is
        refused, None: fine)."""
        for branch in Branch:
            ids = spec.on_success if branch is Branch.SUCCESS else spec.on_failure
            kept = set(before.chained(branch)) if before is not None else set()
            for index, child_id in enumerate(ids):
                if child_id in kept:
                    continue
                if child_id not in known:
                    try:
                        child = self.repository.get(tenant, child_id)
                        known[child_id] = "is cancelled" if child.status is TaskStatus.CANCELLED else None
                    except TaskNotFound:
                        known[child_id] = "names no task of yours"
                refused = known[child_id]
                if refused is not None:
                    raise ValidationFailed.on(f"{branch.value}[{index}]", f"{child_id} {refused}")

    def _check_workflows(self, tenant: str, spec: TaskSpec, known: dict[str, bool]) -> None:
        """A ``workflow`` target names one of the tenant's workflows (another tenant's is one that
        does not exist). ``known``: what this request has read."""
        if self.workflows is None:
            return
        for index, target in enumerate(spec.targets):
            if not isinstance(target, WorkflowTarget):
                continue
            if target.workflow_id not in known:
                known[target.workflow_id] = self.workflows.exists(tenant, target.workflow_id)
            if not known[target.workflow_id]:
                where = f"targets[{index}]" if spec.multicast else "target"
                raise ValidationFailed.on(f"{where}.workflow.id", f"{target.workflow_id} names no workflow of yours")

    def register(self, tenant: str, spec: TaskSpec, *, own_target: bool = False, now: datetime | None = None) -> Task:
        """``own_target``: the spec is Sundial's own making (the canary's target is the canary
        function; a workflow's schedule starts a workflow not written yet): it is not checked
        against the deployment's own resources or the tenant's workflows. Never from the API.
        ``now``: the registration's time, when the caller read it already and the spec counts
        from it (an EventBridge rate schedule without ``StartDate`` starts at its creation: a
        clock read a millisecond later would put its first occurrence a period later)."""
        if not own_target:
            self._check_own(spec)
            self._check_workflows(tenant, spec, {})
        self._check_limits(tenant, named_limits(spec.targets, spec.multicast), [])
        self._check_chains(tenant, spec, {})
        now = self._now() if now is None else truncate_ms(now)
        task = new_task(spec, tenant=tenant, now=now, shard=self._shard(), randbytes=self.randbytes)
        return self.repository.create(task, staged=self._stage(task, now))

    def register_many(self, tenant: str, specs: Sequence[TaskSpec | SundialError]) -> list[Task | SundialError]:
        """Register each spec on its own (an error in, or found now, answers its index only),
        with one staging pass and batched writes for all of them."""
        now = self._now()
        answers: list[Task | SundialError] = []
        known: list[Sequence[Limit]] = []
        children: dict[str, str | None] = {}
        workflows: dict[str, bool] = {}
        for spec in specs:
            if isinstance(spec, SundialError):
                answers.append(spec)
                continue
            try:
                self._check_own(spec)
                self._check_workflows(tenant, spec, workflows)
                self._check_limits(tenant, named_limits(spec.targets, spec.multicast), known)
                self._check_chains(tenant, spec, children)
                answers.append(new_task(spec, tenant=tenant, now=now, shard=self._shard(), randbytes=self.randbytes))
            except ValidationFailed as exc:
                answers.append(exc)
        tasks = [a for a in answers if isinstance(a, Task)]
        staged = {t.id for t in tasks if self._must_stage(t, now)}
        if staged and self.stager is not None:
            # The messages go first: if the write then fails, they find no task and are dropped.
            occurrences = [_staged(t) for t in tasks if t.id in staged]
            self.stager.stage(occurrences, to_ms(now))
        written = self.repository.create_many([(t, t.id in staged) for t in tasks])
        stored = {task.id: outcome for task, outcome in zip(tasks, written, strict=True)}
        return [stored[a.id] if isinstance(a, Task) else a for a in answers]

    def update(self, tenant: str, task_id: str, patch: TaskPatch, if_version: int | None = None) -> Task:
        """Apply a client's change to the task as it is now (read again and re-applied if the
        pipeline or another client wrote it meanwhile: concurrent changes never lose each
        other). A new schedule re-arms the task: the occurrence staged under the old one no
        longer matches it and is dropped by the trigger's claim. ``if_version`` (a client's
        ``If-Match``): change it only if it is still at that version."""

        def update(task: Task, now: datetime) -> Task | None:
            if if_version is not None and task.version != if_version:
                raise VersionMismatch(
                    f"the task is at version {task.version}, not {if_version}: read it again and reapply your change"
                )
            if task.status not in (TaskStatus.SCHEDULED, TaskStatus.PAUSED):
                raise InvalidTransition(f"a {task.status.value} task cannot be changed; register a new one")
            spec = patched(task, patch)
            self._check_own(spec)
            self._check_workflows(tenant, spec, {})
            # the targets the change sets only: a limit deleted since a target was given stops
            # applying to it, and does not block changing something else
            self._check_limits(tenant, named_limits(spec.targets, spec.multicast, task.targets), [])
            self._check_chains(tenant, spec, {}, before=task)
            misfire = spec.misfire or task.misfire
            schedule, due = task.schedule, task.due_at
            if patch.reschedules:
                schedule = sched.anchored(spec.schedule, now)
                # the bound on an `at` already past is the API's that makes the change
                eventbridge = None if isinstance(patch.eventbridge, Keep) else patch.eventbridge
                due = first_due(schedule, misfire, now, max_past_of(eventbridge))
            changed = task.with_spec(
                spec, schedule=schedule, misfire=misfire, due_at=due, next_fire_at=due, updated_at=now
            )
            dropped = {key: value for key, value in task.tags.items() if changed.tags.get(key) != value}
            if not patch.reschedules:
                return self.repository.update(changed, staged=False, dropped_tags=dropped)
            staged = changed.status is TaskStatus.SCHEDULED and self._stage(changed, now)
            return self.repository.update(changed, staged=staged, dropped_tags=dropped)

        return self._change(tenant, task_id, update)

    def run_now(self, tenant: str, task_id: str) -> str:
        """One extra occurrence now, outside the schedule: a run of its own (its own run id,
        claimed, retried and dead-lettered like any other); returns its run id."""
        task = self.repository.get(tenant, task_id)
        if task.status in (TaskStatus.PAUSED, TaskStatus.CANCELLED):
            raise InvalidTransition(
                f"a {task.status.value} task does not run"
                + ("; resume it first" if task.status is TaskStatus.PAUSED else "")
            )
        return self._extra_run(tenant, task.id, _extra_spec(task, self._now()))

    def _extra_run(
        self,
        tenant: str,
        parent_id: str,
        spec: TaskSpec,
        redrive: DeadLetterRef | None = None,
        *,
        item_id: str | None = None,
        chain: ChainLink | None = None,
        workflow: NodeLink | None = None,
    ) -> str:
        """A run now stops if its task is paused or cancelled before it is claimed; a redrive
        (``redrive`` given) fires what its dead letter recorded whatever became of the task. A
        chained run (``chain``) has the item id its hop derives (``item_id``)."""
        now = self._now()
        spec = replace(spec, schedule=At(now), misfire=Misfire.FIRE_NOW)
        extra = replace(
            new_task(spec, tenant=tenant, now=now, shard=self._shard(), randbytes=self.randbytes),
            parent_id=parent_id,
            stops_with_parent=redrive is None and workflow is None,
            chain=chain,
            workflow=workflow,
        )
        if item_id is not None:
            extra = replace(extra, id=item_id)
        self.repository.create_run(extra, staged=self._stage(extra, now), redrive=redrive)
        return run_id_for(extra.id, to_ms(extra.due_at))

    # Workflows (docs/workflows.md) ----------------------------------------------------------

    def check_targets(self, tenant: str, targets: Sequence[Target], multicast: bool) -> None:
        """A workflow node's targets, checked as a task's are (none of Sundial's own resources,
        limits that exist)."""
        self.own.check(targets, multicast)
        self._check_limits(tenant, named_limits(targets, multicast), [])

    def start_node(self, tenant: str, workflow_id: str, spec: TaskSpec, item_id: str, link: NodeLink) -> str:
        """A workflow node's run: an extra run of the workflow under the id its run and node
        derive, so a second start finds it and starts nothing; its run id either way. It is not
        stopped by its parent's status (a workflow is no task: its runs are cancelled on their own)."""
        try:
            return self._extra_run(tenant, workflow_id, spec, item_id=item_id, workflow=link)
        except ConcurrentUpdate:
            return self.node_run(tenant, item_id).run_id

    def node_run(self, tenant: str, item_id: str) -> Run:
        """A workflow node's run as its item holds it (``staged`` until it is first claimed)."""
        item = self.repository.get_extra(tenant, item_id)
        if item.run is not None:
            return item.run
        run_id = run_id_for(item.id, to_ms(item.due_at))
        return Run(run_id, item.owner_id, item.due_at, RunStatus.STAGED)

    def cancel_node(self, tenant: str, item_id: str) -> None:
        """A node's item cancelled, so that none of its attempts fires from now on (its run was
        cancelled); one that ended already is left as it is."""

        def cancel(task: Task, now: datetime) -> Task | None:
            if task.status is not TaskStatus.SCHEDULED:
                return None
            cancelled = replace(
                task, status=TaskStatus.CANCELLED, next_fire_at=None, updated_at=now, expires_at=now + self.retention
            )
            return self.repository.update(cancelled)

        self._change(tenant, item_id, cancel, read=self.repository.get_extra)

    # Chains (docs/chains.md) ---------------------------------------------------------------

    def start_chained(self, parent: Task, link: ChainLink, child_id: str, branch: Branch) -> ChainStart:
        """Start one hop: the child task runs once, now, as run now would, with ``link`` (its
        parent occurrence) in its callback body. Every start of one hop writes the same item
        (its id is derived from the parent run), so a second start finds it and starts nothing.
        A child that is gone is skipped; one that is cancelled or paused, or one hop past
        :data:`MAX_HOPS`, gets a skipped run that says why in its history."""
        item_id = chained_item_id(link.parent.run_id, child_id, branch, self.bucket_shards)
        try:
            child = self.repository.get(parent.tenant, child_id)
        except TaskNotFound:
            return ChainStart(child_id, skipped=f"chained task {child_id} no longer exists")
        skipped = None
        if link.hop > MAX_HOPS:
            skipped = f"chain stopped after {MAX_HOPS} hops"
        elif child.status in (TaskStatus.CANCELLED, TaskStatus.PAUSED):
            skipped = f"its task was {child.status.value} when its parent {link.parent.run_id} ended"
        try:
            if skipped is not None:
                self._skipped_run(child, link, item_id, skipped)
                return ChainStart(child_id, skipped=skipped)
            run_id = self._extra_run(
                parent.tenant, child.id, _extra_spec(child, self._now()), item_id=item_id, chain=link
            )
        except ConcurrentUpdate:
            return ChainStart(child_id, duplicate=True)  # started (or skipped) by an earlier start
        return ChainStart(child_id, run_id=run_id)

    def _skipped_run(self, child: Task, link: ChainLink, item_id: str, reason: str) -> None:
        """A hop that does not run: its item is written ended (a skipped run), so the child's
        history says why, and a second start of the hop finds it."""
        now = self._now()
        spec = replace(_extra_spec(child, now), misfire=Misfire.FIRE_NOW)
        item = replace(
            new_task(spec, tenant=child.tenant, now=now, shard=0, randbytes=self.randbytes),
            id=item_id,
            parent_id=child.id,
            chain=link,
            status=TaskStatus.COMPLETED,
            next_fire_at=None,
            expires_at=now + self.retention,
        )
        run_id = run_id_for(item_id, to_ms(item.due_at))
        run = Run(run_id, child.id, item.due_at, RunStatus.SKIPPED, last_error=reason, parent=link.parent)
        self.repository.create_run(replace(item, run=run), staged=False)

    # Dead letters --------------------------------------------------------------------------

    def dead_letters(
        self, tenant: str, *, limit: int, cursor: str | None, status: LetterStatus | None
    ) -> Page[DeadLetter]:
        return self._letters().list(tenant, limit=limit, cursor=cursor, status=status)

    def count_dead_letters(self, tenant: str, status: LetterStatus = LetterStatus.DEAD_LETTERED) -> int:
        """How many of the tenant's dead letters wait for a redrive (ValueError for another status)."""
        return self._letters().count(tenant, status)

    def dead_letter(self, tenant: str, letter_id: str) -> DeadLetter:
        return self._letters().get(tenant, letter_id)

    def redrive(self, tenant: str, letter_ids: Sequence[str] | None, cursor: str | None = None) -> Redriven:
        """Fire each dead letter once more (``None``: those not redriven yet, a step at a time:
        up to MAX_REDRIVE of them, among the letters one list request reads, from ``cursor``):
        a new run of its task with what it fired, marked on the letter in the same write, so two
        redrives of one letter fire it once. The new run's end starts its task's chains as they
        are now (none when the task is gone)."""
        letters = self._letters()
        chains: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        after: str | None = None
        if letter_ids is None:
            page = letters.list(tenant, limit=MAX_REDRIVE, cursor=cursor, status=LetterStatus.DEAD_LETTERED)
            chosen, after = page.items, page.next_cursor
        else:
            chosen = [letters.get(tenant, letter_id) for letter_id in dict.fromkeys(i.upper() for i in letter_ids)]
        redriven: list[tuple[DeadLetter, str]] = []
        for letter in chosen:
            if letter.redriven_run_id is not None:
                continue
            if letter.task_id not in chains:
                chains[letter.task_id] = self._chains_of(tenant, letter.task_id)
            on_success, on_failure = chains[letter.task_id]
            spec = TaskSpec(
                At(self._now()),
                letter.targets,
                letter.multicast,
                letter.name,
                letter.payload,
                letter.retry,
                on_success=on_success,
                on_failure=on_failure,
                # a schedule's occurrence: its targets get the schedule's Input again
                eventbridge=EventBridgeSchedule(letter.schedule_arn) if letter.schedule_arn is not None else None,
            )
            try:
                run_id = self._extra_run(tenant, letter.task_id, spec, DeadLetterRef(tenant, letter.run_id))
            except ConcurrentUpdate:
                continue  # redriven by someone else meanwhile: it fires once, from there
            redriven.append((letter, run_id))
        return Redriven(redriven, after)

    def _chains_of(self, tenant: str, task_id: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """A task's ``on_success`` and ``on_failure`` as they are now; none once it is gone."""
        try:
            task = self.repository.get(tenant, task_id)
        except TaskNotFound:
            return (), ()
        return task.on_success, task.on_failure

    def _letters(self) -> DeadLetters:
        if self.dead_letters_store is None:
            raise StorageUnavailable("this deployment keeps no dead letters")
        return self.dead_letters_store

    def get(self, tenant: str, task_id: str) -> Task:
        return self.repository.get(tenant, task_id)

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
        return self.repository.list(tenant, status=status, limit=limit, cursor=cursor, name_prefix=name_prefix, tag=tag)

    def count(self, tenant: str, status: TaskFilter) -> int:
        """How many of the tenant's tasks are ``status`` (failed, paused, paused after failures)."""
        return self.repository.count(tenant, status)

    def runs(self, tenant: str, task_id: str, *, limit: int, cursor: str | None) -> Page[Run]:
        task = self.repository.get(tenant, task_id)
        return self.repository.runs(task, limit=limit, cursor=cursor)

    def _change(
        self,
        tenant: str,
        task_id: str,
        change: Callable[[Task, datetime], Task | None],
        read: Callable[[str, str], Task] | None = None,
    ) -> Task:
        """Read, change, write conditionally on the version read; the pipeline writes the same
        item (claims, re-arms), so a lost race is read again and re-applied, a few times.
        ``read``: how the item is read (a task's by default; an extra run's for a node)."""
        read = read or self.repository.get
        attempt = 1
        while True:
            task = read(tenant, task_id)
            try:
                return change(task, self._now()) or task
            except ConcurrentUpdate:
                if attempt == CHANGE_ATTEMPTS:
                    raise
                attempt += 1

    def pause(self, tenant: str, task_id: str) -> Task:
        """Nothing fires while paused: a staged occurrence finds the task paused and is dropped."""

        def pause(task: Task, now: datetime) -> Task | None:
            if task.status is TaskStatus.PAUSED:
                return None
            check_task_transition(task.status, TaskStatus.PAUSED)
            return self.repository.update(replace(task, status=TaskStatus.PAUSED, updated_at=now))

        return self._change(tenant, task_id, pause)

    def resume(self, tenant: str, task_id: str) -> Task:
        """Arm the task again, following its misfire policy for what it missed while paused; its
        ``paused_reason`` and its count of failures in a row start afresh."""

        def resume(task: Task, now: datetime) -> Task | None:
            if task.status is TaskStatus.SCHEDULED:
                return None
            check_task_transition(task.status, TaskStatus.SCHEDULED)
            task = replace(task, paused_reason=None, consecutive_failures=0)
            due = resume_due(task.schedule, to_ms(task.due_at), task.misfire, to_ms(now), running(task))
            if due is None:
                done = replace(
                    task,
                    status=TaskStatus.COMPLETED,
                    next_fire_at=None,
                    updated_at=now,
                    expires_at=now + self.retention,
                )
                return self.repository.update(done)
            resumed = replace(
                task, status=TaskStatus.SCHEDULED, due_at=from_ms(due), next_fire_at=from_ms(due), updated_at=now
            )
            return self.repository.update(resumed, staged=self._stage(resumed, now))

        return self._change(tenant, task_id, resume)

    def _must_stage(self, task: Task, now: datetime) -> bool:
        return self.stager is not None and writer_stages(to_ms(task.due_at), to_ms(now), self.timing)

    def _stage(self, task: Task, now: datetime) -> bool:
        """Stage the task's armed occurrence now if the scanners may already have passed it."""
        if self.stager is None or not self._must_stage(task, now):
            return False
        # The message goes first: if the write then fails, it finds no matching task and is dropped
        # (once its writer's time is up: a claim that overtakes the write looks again meanwhile).
        self.stager.stage([replace(_staged(task), writer_ms=to_ms(now))], to_ms(now))
        return True

    def cancel(self, tenant: str, task_id: str) -> Task:
        """Cancel a task so that none of its occurrences fires; cancelling twice is harmless."""

        def cancel(task: Task, now: datetime) -> Task | None:
            if task.status is TaskStatus.CANCELLED:
                return None
            check_task_transition(task.status, TaskStatus.CANCELLED)
            cancelled = replace(
                task, status=TaskStatus.CANCELLED, next_fire_at=None, updated_at=now, expires_at=now + self.retention
            )
            return self.repository.update(cancelled)

        return self._change(tenant, task_id, cancel)
