"""Workflows (docs/workflows.md): their runs moving on, and the service the API calls.

:class:`WorkflowRuns` is what happens when a run starts and when one of its nodes ends, over two
ports, so that every step can be repeated (a redelivered message, a retried recording step) and
two triggers can do it at once (B and C of a diamond ending together) without a node starting
twice. The order is the chains' (docs/chains.md, section 2): a node's end is written on the run,
its children are started, and only then is the node's own run recorded by the trigger, so a
crash anywhere repeats these steps; each is a no-op where it was done. A child is created (its
item, under an id derived from the run, the node and its attempt) before it is marked running on
the run: a crash between them leaves a created child that the repeat finds (a duplicate) and
marks.

:class:`WorkflowService` registers workflows (a schedule is a recurring task of the tenant whose
target starts a run) and starts, reads, cancels and retries their runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from shared.domain.errors import (
    ConcurrentUpdate,
    FieldError,
    InvalidTransition,
    StorageUnavailable,
    TaskNotFound,
    ValidationFailed,
    WorkflowNotFound,
    WorkflowRunNotFound,
)
from shared.domain.ids import new_run_id
from shared.domain.schedules import At, Schedule
from shared.domain.tasks import Page, Run, TaskSpec, WorkflowTarget
from shared.domain.times import from_ms, now_ms
from shared.domain.workflow_defs import NodeDef, Workflow
from shared.domain.workflows import (
    NodeLink,
    NodeOutcome,
    NodeStart,
    NodeStatus,
    WorkflowRun,
    cancelled,
    fitted_parents,
    node_item_id,
    parents_of,
    retried,
    run_status,
    settle_skips,
)
from shared.services.ports.workflows import (
    Definitions,
    DefinitionVersions,
    NodeItems,
    NodeStarter,
    RunPages,
    ScheduleTasks,
    WorkflowRunStore,
)


@dataclass
class WorkflowRuns:
    store: WorkflowRunStore
    starter: NodeStarter
    shards: int
    clock: Callable[[], int] = now_ms

    def started(self, run: WorkflowRun) -> None:
        """A new run (its item written with every node pending): its roots start."""
        self.advance(run)

    def node_ended(
        self,
        run_id: str,
        node: str,
        status: NodeStatus,
        *,
        attempt: int = 1,
        outcome: NodeOutcome | None = None,
        item_id: str | None = None,
    ) -> None:
        """A node's run has its final outcome: keep it for the children, record it on the run,
        then start what it let start and skip what it ruled out. Nothing moves on in a cancelled
        run."""
        if outcome is not None:
            self.store.keep_outcome(run_id, attempt, outcome)
        run = self.store.node_ended(
            run_id,
            node,
            status,
            attempt=attempt,
            ended_ms=outcome.ended_ms if outcome is not None else None,
            error=outcome.error if outcome is not None else None,
            item_id=item_id,
            node_run_id=outcome.run_id if outcome is not None else None,
        )
        if run is not None and run.status is NodeStatus.RUNNING:
            self.advance(run)

    def advance(self, run: WorkflowRun) -> None:
        """Skip what can no longer run, start what is ready, and end the run when nothing is left:
        from the statuses read, repeatable."""
        statuses = dict(run.statuses)
        settled, ready = settle_skips(run.graph, statuses)
        for node, status in settled.items():
            if status is NodeStatus.SKIPPED and statuses.get(node, NodeStatus.PENDING) is NodeStatus.PENDING:
                self.store.node_skipped(run.run_id, node)
        if ready:
            self._start(run, sorted(ready))
            settled.update(dict.fromkeys(ready, NodeStatus.RUNNING))
        final = run_status(run.graph, settled)
        if final is not NodeStatus.RUNNING:
            self.store.run_ended(run.run_id, final, ended_ms=self.clock(), run=run)

    def _start(self, run: WorkflowRun, ready: list[str]) -> None:
        """Create every ready node's item (their parents' outcomes read once, for all of them),
        then mark them all running in one write: a fan-out of a hundred children is one write of
        the run item, not a hundred. When the one write is refused (a node was marked or ended
        meanwhile: another trigger, or a child whose run ended first), each is marked on its own."""
        parents = sorted({p for node in ready for p in parents_of(run.graph, node)})
        keys = [(p, run.attempts.get(p, 1)) for p in parents]
        kept = self.store.outcomes(run.run_id, keys) if keys else {}
        started = []
        for node in ready:
            item_id = node_item_id(run.run_id, node, run.attempts.get(node, 1), self.shards)
            node_run_id = self.starter.start(run, node, item_id, kept)  # first: a crash after it repeats as a duplicate
            started.append(NodeStart(node, item_id, node_run_id))
        now = self.clock()
        for group in _groups(started, MARKS_PER_WRITE):
            if len(group) > 1 and self.store.nodes_started(run.run_id, group, started_ms=now):
                continue
            for start in group:
                self.store.node_started(run.run_id, start.node, start.item_id, node_run_id=start.run_id, started_ms=now)


MARKS_PER_WRITE = 20
"""Nodes marked running in one UpdateItem: each takes four SET actions and a condition, about 90
characters of expression, and DynamoDB refuses an expression over 4 KB ("Expression parameters"
in "Service, account, and table quotas in Amazon DynamoDB"): 20 keep one well under it."""


def _groups(items: list[NodeStart], size: int) -> list[list[NodeStart]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def node_spec(node: NodeDef, now: datetime) -> TaskSpec:
    """What a node's run fires: the node's targets, payload and retry, now."""
    return TaskSpec(At(now), node.targets, node.multicast, payload=node.payload, retry=node.retry)


@dataclass
class ItemNodeStarter:
    """Starts a node as an extra run of its workflow (a one-shot item, as chains make), with its
    parents' outcomes (their kept outcome items) in its ``workflow`` link."""

    definitions: DefinitionVersions
    items: NodeItems
    clock: Callable[[], int] = now_ms

    def start(self, run: WorkflowRun, node: str, item_id: str, kept: Mapping[str, NodeOutcome]) -> str:
        definition = self.definitions.version(run.workflow_id, run.version)
        outcomes = [kept[p] for p in parents_of(run.graph, node) if p in kept]
        fitted, omitted = fitted_parents(outcomes)
        link = NodeLink(run.workflow_id, run.run_id, node, run.attempts.get(node, 1), fitted, omitted)
        spec = node_spec(definition.node(node), from_ms(self.clock()))
        return self.items.start_node(run.tenant, run.workflow_id, spec, item_id, link)


@dataclass(frozen=True)
class WorkflowDraft:
    """A workflow as a client sends it (validated by the API models and :func:`validated`)."""

    nodes: tuple[NodeDef, ...]
    graph: Any
    name: str | None = None
    schedule: Schedule | None = None


UNSET: Any = object()


@dataclass
class WorkflowService:
    definitions: Definitions
    runs_store: RunPages
    runs: WorkflowRuns
    tasks: ScheduleTasks
    items: NodeItems
    clock: Callable[[], int] = now_ms

    # Workflows --------------------------------------------------------------------------------

    def create(self, tenant: str, draft: WorkflowDraft) -> Workflow:
        self._check_nodes(tenant, draft.nodes)
        now = self.clock()
        workflow = Workflow(
            id=new_run_id(now),
            tenant=tenant,
            nodes=draft.nodes,
            graph=draft.graph,
            created_at=from_ms(now),
            updated_at=from_ms(now),
            name=draft.name,
            schedule=draft.schedule,
        )
        # the schedule's task first (it names the workflow's id); a workflow that is then not
        # written cancels it again
        workflow = replace(workflow, schedule_task_id=self._schedule(workflow))
        try:
            self.definitions.create(workflow)
        except Exception:
            if workflow.schedule_task_id is not None:
                self.tasks.cancel(tenant, workflow.schedule_task_id)
            raise
        return workflow

    def get(self, tenant: str, workflow_id: str) -> Workflow:
        return self.definitions.get(tenant, workflow_id.upper())

    def list(self, tenant: str, limit: int, cursor: str | None) -> Page[Workflow]:
        return self.definitions.list(tenant, limit, cursor)

    def update(
        self,
        tenant: str,
        workflow_id: str,
        *,
        name: Any = UNSET,
        nodes: tuple[NodeDef, ...] | None = None,
        graph: Any = None,
        schedule: Any = UNSET,
    ) -> Workflow:
        """A new version: runs already going on keep the version they started with. A new
        schedule replaces the schedule's task (``None``: the workflow runs only by hand)."""
        before = self.get(tenant, workflow_id)
        if nodes is not None:
            self._check_nodes(tenant, nodes)
        after = replace(
            before,
            name=before.name if name is UNSET else name,
            nodes=nodes if nodes is not None else before.nodes,
            graph=graph if graph is not None else before.graph,
            schedule=before.schedule if schedule is UNSET else schedule,
            version=before.version + 1,
            updated_at=from_ms(self.clock()),
        )
        if schedule is not UNSET:
            after = replace(after, schedule_task_id=self._schedule(after))
        try:
            self.definitions.update(after, was=before.version)
        except Exception:
            if schedule is not UNSET and after.schedule_task_id is not None:
                self.tasks.cancel(tenant, after.schedule_task_id)
            raise
        if schedule is not UNSET and before.schedule_task_id is not None:
            self._cancel_task(tenant, before.schedule_task_id)
        return after

    def delete(self, tenant: str, workflow_id: str) -> None:
        """The workflow goes (its runs going on finish), and its schedule's task is cancelled."""
        workflow = self.get(tenant, workflow_id)
        self.definitions.delete(tenant, workflow.id, self.clock())
        if workflow.schedule_task_id is not None:
            self._cancel_task(tenant, workflow.schedule_task_id)

    def _schedule(self, workflow: Workflow) -> str | None:
        if workflow.schedule is None:
            return None
        spec = TaskSpec(
            workflow.schedule,
            (WorkflowTarget(workflow.id),),
            name=f"workflow {workflow.name or workflow.id}"[:200],
        )
        return str(self.tasks.register(workflow.tenant, spec, own_target=True).id)  # the workflow is not written yet

    def _cancel_task(self, tenant: str, task_id: str) -> None:
        with suppress(TaskNotFound, InvalidTransition):  # ended (a one-shot schedule), expired, or forgotten
            self.tasks.cancel(tenant, task_id)

    def _check_nodes(self, tenant: str, nodes: Sequence[NodeDef]) -> None:
        """Each node's targets as a task's are checked (not Sundial's own, limits that exist),
        the refusal naming ``nodes[i].``."""
        for index, node in enumerate(nodes):
            try:
                self.tasks.check_targets(tenant, node.targets, node.multicast)
            except ValidationFailed as exc:
                details = [FieldError(f"nodes[{index}].{d.field}", d.message) for d in exc.details]
                raise ValidationFailed(f"nodes[{index}]: {exc.message}", details) from exc

    # Runs -------------------------------------------------------------------------------------

    def start_run(self, tenant: str, workflow_id: str, run_id: str | None = None) -> WorkflowRun:
        """A run of the workflow as it stands, its roots started, as it is then (read back)."""
        return self._read(self.begin_run(tenant, workflow_id, run_id))

    def begin_run(self, tenant: str, workflow_id: str, run_id: str | None = None) -> str:
        """:meth:`start_run` without the read back (a schedule's start answers nothing): the
        run's id. With ``run_id`` (a schedule's occurrence), every start of that id starts one
        run: a repeat finds it and moves it on from where it stands (a start that crashed before
        its roots started is completed)."""
        workflow = self.get(tenant, workflow_id)
        now = self.clock()
        run = WorkflowRun(
            run_id=run_id or new_run_id(now),
            workflow_id=workflow.id,
            tenant=tenant,
            graph=workflow.graph,
            statuses=dict.fromkeys(workflow.graph.nodes, NodeStatus.PENDING),
            version=workflow.version,
            created_ms=now,
        )
        if not self.runs_store.create(run):
            existing = self.runs_store.get(run.run_id)
            if existing is None or existing.tenant != tenant or existing.workflow_id != workflow.id:
                raise ConcurrentUpdate(f"run {run.run_id} exists already")
            run = existing
        if run.status is NodeStatus.RUNNING:
            self.runs.advance(run)
        return run.run_id

    def run(self, tenant: str, workflow_id: str, run_id: str) -> WorkflowRun:
        run = self.runs_store.get(run_id.upper())
        if run is None or run.tenant != tenant or run.workflow_id != workflow_id.upper():
            raise WorkflowRunNotFound(f"workflow run {run_id!r} not found")
        return run

    def node_run(self, tenant: str, workflow_id: str, run_id: str, node: str) -> Run:
        """A node's run in a run (its attempts, lateness, last error), once it started."""
        run = self.run(tenant, workflow_id, run_id)
        item_id = run.node(node).item_id if node in run.graph.nodes else None
        if item_id is None:
            raise WorkflowRunNotFound(f"node {node!r} has no run in workflow run {run.run_id}")
        try:
            return self.items.node_run(tenant, item_id)
        except TaskNotFound as exc:
            raise WorkflowRunNotFound(f"the run of node {node!r} is no longer kept") from exc

    def runs_of(self, tenant: str, workflow_id: str, limit: int, cursor: str | None) -> Page[WorkflowRun]:
        workflow = self.get(tenant, workflow_id)
        return self.runs_store.list(workflow.id, limit, cursor)

    def runs_by_status(self, tenant: str, status: NodeStatus, limit: int, cursor: str | None) -> Page[WorkflowRun]:
        """The tenant's runs of every workflow in ``status`` (failed), newest first."""
        return self.runs_store.by_status(tenant, status, limit, cursor)

    def count_runs(self, tenant: str, status: NodeStatus) -> int:
        """How many of the tenant's runs are ``status``: failed (ValueError for another)."""
        return self.runs_store.count(tenant, status)

    def cancel_run(self, tenant: str, workflow_id: str, run_id: str) -> WorkflowRun:
        """No node starts after it: the nodes not ended are cancelled on the run, and the items of
        those running are cancelled, so none fires again (one being called right now finishes its
        call; its end then moves nothing)."""
        for _ in range(5):
            before = self.run(tenant, workflow_id, run_id)
            if before.status is NodeStatus.CANCELLED:
                return before
            if before.status is not NodeStatus.RUNNING:
                raise InvalidTransition(f"the run has {before.status.value}; only a running run can be cancelled")
            after, running_items = cancelled(before, self.clock())
            if self.runs_store.replace(before, after):
                for item_id in running_items:
                    with suppress(TaskNotFound):  # expired
                        self.items.cancel_node(tenant, item_id)
                return self._read(before.run_id)
        raise ConcurrentUpdate("the run kept changing; cancel it again")

    def retry_run(self, tenant: str, workflow_id: str, run_id: str) -> WorkflowRun:
        """The failed (and cancelled) nodes run again, under their next attempt, and what was
        skipped is decided again. A running run is moved on from where it stands (a repair after
        a crash: nothing that started starts again)."""
        for _ in range(5):
            before = self.run(tenant, workflow_id, run_id)
            if before.status is NodeStatus.SUCCEEDED:
                raise InvalidTransition("the run succeeded; there is nothing to retry")
            if before.status is NodeStatus.RUNNING:
                self.runs.advance(before)
                return self._read(before.run_id)
            after = retried(before)
            if self.runs_store.replace(before, after):
                self.runs.advance(after)
                return self._read(before.run_id)
        raise ConcurrentUpdate("the run kept changing; retry it again")

    def _read(self, run_id: str) -> WorkflowRun:
        run = self.runs_store.get(run_id)
        if run is None:
            raise StorageUnavailable(f"run {run_id} was written but could not be read back")
        return run


@dataclass
class WorkflowTargetStarter:
    """Delivers a task's ``workflow`` target: starts the run whose id is the occurrence's run id,
    so every attempt and every copy of the occurrence starts one run."""

    service: WorkflowService

    def start_for(self, workflow_id: str, run_id: str, tenant: str) -> tuple[bool, str | None]:
        try:
            self.service.begin_run(tenant, workflow_id, run_id)
        except WorkflowNotFound as exc:
            return False, exc.message
        except StorageUnavailable as exc:
            return False, exc.message
        return True, None
