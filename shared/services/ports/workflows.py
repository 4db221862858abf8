"""The ports of workflows: their definitions, their runs and the nodes' tasks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from shared.domain.tasks import Page, Run, Target, TaskSpec
from shared.domain.workflow_defs import Workflow
from shared.domain.workflows import NodeLink, NodeOutcome, NodeStart, NodeStatus, WorkflowRun


class WorkflowEnds(Protocol):
    """Moves a workflow run on when one of its nodes' runs has its final outcome
    (shared/services/workflows.py, ``WorkflowRuns.node_ended``)."""

    def node_ended(
        self,
        run_id: str,
        node: str,
        status: NodeStatus,
        *,
        attempt: int = 1,
        outcome: NodeOutcome | None = None,
        item_id: str | None = None,
    ) -> None: ...


class WorkflowRunStore(Protocol):
    """The run's item; every write is conditional, so a repeat or a race changes nothing twice."""

    def create(self, run: WorkflowRun) -> bool:
        """The run's item, only if it does not exist."""

    def get(self, run_id: str) -> WorkflowRun | None: ...

    def keep_outcome(self, run_id: str, attempt: int, outcome: NodeOutcome) -> None:
        """The node's outcome for its children's bodies (a repeat keeps the first)."""

    def outcomes(self, run_id: str, keys: Sequence[tuple[str, int]]) -> dict[str, NodeOutcome]: ...

    def node_ended(
        self,
        run_id: str,
        node: str,
        status: NodeStatus,
        *,
        attempt: int = 1,
        ended_ms: int | None = None,
        error: str | None = None,
        item_id: str | None = None,
        node_run_id: str | None = None,
    ) -> WorkflowRun | None:
        """The end of the node's ``attempt`` (from ``pending``: created, its start not yet marked;
        ``running``; or already ``status``: a repeat), with its item and run ids; the run as it is
        after the write (``ReturnValues=ALL_NEW``), or None when the write was refused (another end
        was recorded, the run was cancelled, or a retry moved the node to a later attempt)."""

    def node_started(
        self, run_id: str, node: str, item_id: str, *, node_run_id: str | None = None, started_ms: int | None = None
    ) -> bool:
        """``pending`` -> ``running`` (with the node's item and run ids) in a running run; False
        otherwise."""

    def nodes_started(self, run_id: str, starts: Sequence[NodeStart], *, started_ms: int) -> bool:
        """Every one of ``starts`` ``pending`` -> ``running`` in one write, in a running run; False
        (nothing written) when one of them was not pending."""

    def node_skipped(self, run_id: str, node: str) -> bool:
        """``pending`` -> ``skipped``; False when it was not pending."""

    def run_ended(
        self, run_id: str, status: NodeStatus, *, ended_ms: int | None = None, run: WorkflowRun | None = None
    ) -> bool:
        """``running`` -> ``status``; False when the run had ended or was cancelled. ``run``: the
        run as read (a failed run is listed by its tenant and creation time: without it, the
        store reads them)."""

    def replace(self, before: WorkflowRun, after: WorkflowRun) -> bool:
        """``after`` over the run, only if nothing was written since ``before`` was read."""


class NodeStarter(Protocol):
    def start(self, run: WorkflowRun, node: str, item_id: str, kept: Mapping[str, NodeOutcome]) -> str:
        """Create the one-shot item that calls ``node``'s target (with its parents' outcomes, from
        ``kept``, in its body), written only if no item has that id; the id of its run (the
        existing item's on a repeat)."""


class NodeItems(Protocol):
    """The tasks' side of a node: its run (an extra run of the workflow) and its cancel."""

    def start_node(self, tenant: str, workflow_id: str, spec: TaskSpec, item_id: str, link: NodeLink) -> str: ...

    def cancel_node(self, tenant: str, item_id: str) -> None: ...

    def node_run(self, tenant: str, item_id: str) -> Run: ...


class Definitions(Protocol):
    def create(self, workflow: Workflow) -> None: ...

    def update(self, workflow: Workflow, *, was: int) -> None: ...

    def get(self, tenant: str, workflow_id: str) -> Workflow: ...

    def version(self, workflow_id: str, version: int) -> Workflow: ...

    def delete(self, tenant: str, workflow_id: str, now_ms: int) -> None: ...

    def list(self, tenant: str, limit: int, cursor: str | None) -> Page[Workflow]: ...


class RunPages(WorkflowRunStore, Protocol):
    def list(self, workflow_id: str, limit: int, cursor: str | None) -> Page[WorkflowRun]: ...

    def by_status(self, tenant: str, status: NodeStatus, limit: int, cursor: str | None) -> Page[WorkflowRun]:
        """The tenant's runs of every workflow in ``status``, newest first, through the status index
        (``WATCHED_RUNS``: failed): full pages; ValueError for another status."""
        ...

    def count(self, tenant: str, status: NodeStatus) -> int:
        """How many of the tenant's runs are ``status`` (failed), exactly; ValueError for another."""
        ...


class DefinitionVersions(Protocol):
    """What starting a node reads of the definitions: the version a run follows."""

    def version(self, workflow_id: str, version: int) -> Workflow: ...


class ScheduleTasks(Protocol):
    """The tasks' side of a workflow's schedule."""

    def register(self, tenant: str, spec: TaskSpec, *, own_target: bool = False) -> Any: ...

    def cancel(self, tenant: str, task_id: str) -> Any: ...

    def check_targets(self, tenant: str, targets: Sequence[Target], multicast: bool) -> None: ...


class RunCounts(Protocol):
    def count_runs(self, tenant: str, status: NodeStatus) -> int: ...
