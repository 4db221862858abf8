"""A workflow run moving on (shared/services/workflows.py) over an in-memory run store with the
same conditional writes as planned for DynamoDB: a diamond whose middle nodes end at once, a
crash between a child's creation and its mark, duplicate deliveries, cancel, and random graphs
against the reference executor of tests/unit/test_workflows.py."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.workflows import Edge, Graph, NodeStatus, WorkflowRun, validated
from shared.services.workflows import WorkflowRuns
from tests.unit.test_workflows import reference, runs

pytestmark = pytest.mark.unit

S, F = NodeStatus.SUCCEEDED, NodeStatus.FAILED
RUN = "01KA0000000000000000000000"
SHARDS = 16


@dataclass
class Store:
    """The run's item, each write conditional as DynamoDB's would be."""

    run: WorkflowRun
    writes: list[str] = field(default_factory=list)

    def get(self, run_id: str) -> WorkflowRun | None:
        return self.run

    def _set(self, node: str, status: NodeStatus) -> None:
        self.run = replace(self.run, statuses={**self.run.statuses, node: status})

    def node_ended(self, run_id: str, node: str, status: NodeStatus) -> WorkflowRun | None:
        now = self.run.statuses.get(node, NodeStatus.PENDING)
        if self.run.status is not NodeStatus.RUNNING or now not in (NodeStatus.RUNNING, status):
            return None
        self._set(node, status)
        self.writes.append(f"ended {node}")
        return self.run

    def node_started(self, run_id: str, node: str, item_id: str) -> bool:
        if self.run.statuses.get(node, NodeStatus.PENDING) is not NodeStatus.PENDING:
            return False
        self._set(node, NodeStatus.RUNNING)
        return True

    def node_skipped(self, run_id: str, node: str) -> bool:
        if self.run.statuses.get(node, NodeStatus.PENDING) is not NodeStatus.PENDING:
            return False
        self._set(node, NodeStatus.SKIPPED)
        return True

    def run_ended(self, run_id: str, status: NodeStatus) -> bool:
        if self.run.status is not NodeStatus.RUNNING:
            return False
        self.run = replace(self.run, status=status)
        return True


@dataclass
class Starter:
    """Items by id: a second create of one id is refused (``attribute_not_exists``)."""

    items: dict[str, str] = field(default_factory=dict)
    crash_after_create: set[str] = field(default_factory=set)

    def start(self, run: WorkflowRun, node: str, item_id: str) -> bool:
        if item_id in self.items:
            return False
        self.items[item_id] = node
        if node in self.crash_after_create:
            self.crash_after_create.discard(node)
            raise RuntimeError(f"the function died after creating {node}")
        return True

    def created(self) -> list[str]:
        return sorted(self.items.values())


def new_run(graph: Graph) -> tuple[WorkflowRuns, Store, Starter]:
    store = Store(WorkflowRun(RUN, "wf", "acme", graph, dict.fromkeys(graph.nodes, NodeStatus.PENDING)))
    starter = Starter()
    runs_ = WorkflowRuns(store, starter, SHARDS)
    runs_.started(store.run)
    return runs_, store, starter


DIAMOND = validated(["a", "b", "c", "d"], [Edge("a", "b"), Edge("a", "c"), Edge("b", "d"), Edge("c", "d")])


def test_the_diamonds_last_node_starts_once_when_both_middles_end_at_once() -> None:
    runs_, store, starter = new_run(DIAMOND)
    runs_.node_ended(RUN, "a", S)
    assert starter.created() == ["a", "b", "c"]
    # B and C end on two triggers at once: both writes land, then each moves on from what it read
    seen_by_b = store.node_ended(RUN, "b", S)
    seen_by_c = store.node_ended(RUN, "c", S)
    assert seen_by_b is not None
    assert seen_by_c is not None
    runs_._advance(seen_by_c)
    runs_._advance(store.run)  # B's trigger read after C's write: it sees both ended too
    assert starter.created() == ["a", "b", "c", "d"]  # D created once
    runs_.node_ended(RUN, "d", S)
    assert store.run.status is S


def test_a_crash_between_a_childs_creation_and_its_mark_is_repeated_as_a_duplicate() -> None:
    runs_, store, starter = new_run(DIAMOND)
    starter.crash_after_create.add("b")
    with pytest.raises(RuntimeError):
        runs_.node_ended(RUN, "a", S)
    assert store.run.statuses["b"] is NodeStatus.PENDING  # created, not marked
    runs_.node_ended(RUN, "a", S)  # the message comes back: the same end again
    assert store.run.statuses["b"] is NodeStatus.RUNNING
    assert starter.created() == ["a", "b", "c"]


def test_a_cancelled_run_starts_nothing_more() -> None:
    runs_, store, starter = new_run(DIAMOND)
    store.run = replace(store.run, status=NodeStatus.CANCELLED)
    runs_.node_ended(RUN, "a", S)
    assert starter.created() == ["a"]


@settings(max_examples=200, deadline=None)
@given(runs(), st.randoms(use_true_random=False))
def test_random_graphs_with_duplicate_deliveries_end_as_the_reference_each_node_created_once(
    run: tuple[Graph, dict[str, NodeStatus]], chance: random.Random
) -> None:
    graph, ends = run
    runs_, store, starter = new_run(graph)
    while running := [n for n, s in store.run.statuses.items() if s is NodeStatus.RUNNING]:
        node = chance.choice(running)
        runs_.node_ended(RUN, node, ends[node])
        if chance.random() < 0.3:
            runs_.node_ended(RUN, node, ends[node])  # delivered twice
    expected = reference(graph, ends)
    assert dict(store.run.statuses) == expected
    assert starter.created() == sorted(n for n, s in expected.items() if s is not NodeStatus.SKIPPED)
    assert store.run.status is (F if F in expected.values() else S)
