"""Workflow runs in memory: the run store with the conditional writes DynamoDB's has
(shared/store/workflows.py; tests/integration/test_workflow_run_store_contract.py holds both to
one contract), and a node starter that creates each item id once."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from shared.domain.tasks import Page
from shared.domain.workflows import (
    WATCHED_RUNS,
    Edge,
    Graph,
    NodeOutcome,
    NodeStart,
    NodeStatus,
    WorkflowRun,
    validated,
)
from shared.services.ports.workflows import WorkflowRunStore
from shared.services.workflows import WorkflowRuns
from shared.store.keys import decode_cursor, encode_cursor, list_sk

RunStore = WorkflowRunStore
"""The run store the scenarios are held to: in memory here, on DynamoDB in the contract test."""


@dataclass
class InMemoryWorkflowRuns:
    """The runs' items by run id, each write conditional as DynamoDB's is (and bumping its
    revision); the failed ones listed tenant-wide and counted, as the status index does."""

    runs: dict[str, WorkflowRun] = field(default_factory=dict)
    kept: dict[tuple[str, str, int], NodeOutcome] = field(default_factory=dict)

    def create(self, run: WorkflowRun) -> bool:
        if run.run_id in self.runs:
            return False
        self.runs[run.run_id] = run
        return True

    def get(self, run_id: str) -> WorkflowRun | None:
        return self.runs.get(run_id)

    def by_status(self, tenant: str, status: NodeStatus, limit: int, cursor: str | None) -> Page[WorkflowRun]:
        self._check_watched(status)
        after = decode_cursor(cursor) if cursor else None
        listed = sorted(
            ((list_sk(run.created_ms, run.run_id), run) for run in self.runs.values() if run.tenant == tenant),
            key=lambda entry: entry[0],
            reverse=True,
        )
        matching = [(p, run) for p, run in listed if run.status is status and (after is None or p < after)]
        page = matching[:limit]
        more = len(matching) > limit
        return Page([run for _, run in page], encode_cursor(page[-1][0]) if more else None,
                    tuple(encode_cursor(p) for p, _ in page))  # fmt: skip

    def count(self, tenant: str, status: NodeStatus) -> int:
        self._check_watched(status)
        return sum(1 for run in self.runs.values() if run.tenant == tenant and run.status is status)

    @staticmethod
    def _check_watched(status: NodeStatus) -> None:
        if status not in WATCHED_RUNS:
            raise ValueError(f"{status.value} runs are not listed by status: the status index holds no such run")

    def keep_outcome(self, run_id: str, attempt: int, outcome: NodeOutcome) -> None:
        self.kept.setdefault((run_id, outcome.node, attempt), outcome)

    def outcomes(self, run_id: str, keys: Sequence[tuple[str, int]]) -> dict[str, NodeOutcome]:
        found = ((node, self.kept.get((run_id, node, attempt))) for node, attempt in keys)
        return {node: outcome for node, outcome in found if outcome is not None}

    def _set(self, of: str, node: str, status: NodeStatus, /, **info: object) -> WorkflowRun:
        """Run ``of``'s ``node`` set to ``status`` with ``info`` (the node's run fields)."""
        run = self.runs[of]
        nodes = dict(run.nodes)
        nodes[node] = replace(run.node(node), **info)  # type: ignore[arg-type]
        self.runs[of] = replace(run, statuses={**run.statuses, node: status}, nodes=nodes, revision=run.revision + 1)
        return self.runs[of]

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
        run = self.runs.get(run_id)
        if run is None or run.status is not NodeStatus.RUNNING:
            return None
        if run.status_of(node) not in (NodeStatus.PENDING, NodeStatus.RUNNING, status):
            return None
        if run.attempts.get(node, 1) != attempt:
            return None
        info: dict[str, object] = {"ended_ms": ended_ms, "error": error}
        if item_id is not None:
            info |= {"item_id": item_id, "run_id": node_run_id}
        return self._set(run_id, node, status, **info)

    def node_started(
        self, run_id: str, node: str, item_id: str, *, node_run_id: str | None = None, started_ms: int | None = None
    ) -> bool:
        run = self.runs.get(run_id)
        if run is None or run.status is not NodeStatus.RUNNING:
            return False
        if run.status_of(node) is not NodeStatus.PENDING:
            return False
        self._set(run_id, node, NodeStatus.RUNNING, item_id=item_id, run_id=node_run_id, started_ms=started_ms)
        return True

    def nodes_started(self, run_id: str, starts: Sequence[NodeStart], *, started_ms: int) -> bool:
        run = self.runs.get(run_id)
        if run is None or run.status is not NodeStatus.RUNNING:
            return False
        if any(run.status_of(start.node) is not NodeStatus.PENDING for start in starts):
            return False
        for start in starts:
            self._set(
                run_id,
                start.node,
                NodeStatus.RUNNING,
                item_id=start.item_id,
                run_id=start.run_id,
                started_ms=started_ms,
            )
        return True

    def node_skipped(self, run_id: str, node: str) -> bool:
        run = self.runs.get(run_id)
        if run is None or run.status_of(node) is not NodeStatus.PENDING:
            return False
        self._set(run_id, node, NodeStatus.SKIPPED)
        return True

    def run_ended(
        self, run_id: str, status: NodeStatus, *, ended_ms: int | None = None, run: WorkflowRun | None = None
    ) -> bool:
        current = self.runs.get(run_id)
        if current is None or current.status is not NodeStatus.RUNNING:
            return False
        self.runs[run_id] = replace(current, status=status, ended_ms=ended_ms, revision=current.revision + 1)
        return True

    def replace(self, before: WorkflowRun, after: WorkflowRun) -> bool:
        current = self.runs.get(before.run_id)
        if current is None or current.revision != before.revision:
            return False
        self.runs[before.run_id] = replace(after, revision=before.revision + 1)
        return True


@dataclass
class InMemoryStarter:
    """Items by id: a second create of one id is refused (``attribute_not_exists``)."""

    items: dict[str, str] = field(default_factory=dict)
    crash_after_create: set[str] = field(default_factory=set)

    def start(self, run: WorkflowRun, node: str, item_id: str, kept: Mapping[str, NodeOutcome]) -> str:
        """The node's run id: here its item's id (a repeat finds the item and answers the same)."""
        if item_id in self.items:
            return item_id
        self.items[item_id] = node
        if node in self.crash_after_create:
            self.crash_after_create.discard(node)
            raise RuntimeError(f"the function died after creating {node}")
        return item_id

    def created(self) -> list[str]:
        return sorted(self.items.values())


# --- scenarios, held on every store (the unit tests: in memory; the contract: DynamoDB too) ------

S, F = NodeStatus.SUCCEEDED, NodeStatus.FAILED
RUN = "01KA0000000000000000000000"
SHARDS = 16
DIAMOND = validated(["a", "b", "c", "d"], [Edge("a", "b"), Edge("a", "c"), Edge("b", "d"), Edge("c", "d")])


def new_run(store: RunStore, graph: Graph) -> tuple[WorkflowRuns, InMemoryStarter]:
    run = WorkflowRun(RUN, "wf", "acme", graph, dict.fromkeys(graph.nodes, NodeStatus.PENDING))
    assert store.create(run)
    assert not store.create(run)  # a duplicate start starts nothing
    starter = InMemoryStarter()
    runs = WorkflowRuns(store, starter, SHARDS)
    runs.started(run)
    return runs, starter


def current(store: RunStore) -> WorkflowRun:
    run = store.get(RUN)
    assert run is not None
    return run


def diamond_race(store: RunStore) -> None:
    """B and C end on two triggers at once: both writes land, then each moves on from what it
    read (both see both ended): D is created once."""
    runs, starter = new_run(store, DIAMOND)
    runs.node_ended(RUN, "a", S)
    assert starter.created() == ["a", "b", "c"]
    seen_by_b = store.node_ended(RUN, "b", S)
    seen_by_c = store.node_ended(RUN, "c", S)
    assert seen_by_b is not None
    assert seen_by_c is not None
    assert seen_by_b.statuses["c"] is NodeStatus.RUNNING  # B's write came first: it read C running
    runs.advance(seen_by_c)
    runs.advance(current(store))
    assert starter.created() == ["a", "b", "c", "d"]
    runs.node_ended(RUN, "d", S)
    assert current(store).status is S


def crash_between_creation_and_mark(store: RunStore) -> None:
    runs, starter = new_run(store, DIAMOND)
    starter.crash_after_create.add("b")
    try:
        runs.node_ended(RUN, "a", S)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the crash did not happen")
    assert current(store).statuses["b"] is NodeStatus.PENDING  # created, not marked
    runs.node_ended(RUN, "a", S)  # the message comes back: the same end again
    assert current(store).statuses["b"] is NodeStatus.RUNNING
    assert starter.created() == ["a", "b", "c"]


def cancelled_run(store: RunStore) -> None:
    runs, starter = new_run(store, DIAMOND)
    assert store.run_ended(RUN, NodeStatus.CANCELLED)
    runs.node_ended(RUN, "a", S)
    assert starter.created() == ["a"]
    assert current(store).status is NodeStatus.CANCELLED


def random_run(
    store: RunStore, graph: Graph, ends: dict[str, NodeStatus], chance: random.Random
) -> dict[str, NodeStatus]:
    """Nodes end in a random order, some delivered twice; the statuses at the end (each node's
    item created once is checked here)."""
    runs, starter = new_run(store, graph)
    while running := [n for n, s in current(store).statuses.items() if s is NodeStatus.RUNNING]:
        node = chance.choice(running)
        runs.node_ended(RUN, node, ends[node])
        if chance.random() < 0.3:
            runs.node_ended(RUN, node, ends[node])  # delivered twice
    final = dict(current(store).statuses)
    assert starter.created() == sorted(n for n, s in final.items() if s is not NodeStatus.SKIPPED)
    assert current(store).status is (F if F in final.values() else S)
    return final
