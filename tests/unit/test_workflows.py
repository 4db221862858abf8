"""A workflow's graph and the rules of its runs (shared/domain/workflows.py), held against a small
reference executor written here: nodes decided in topological order, once each."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.errors import ValidationFailed
from shared.domain.workflows import (
    MAX_NODES,
    Edge,
    Graph,
    Join,
    NodeStatus,
    On,
    decide,
    run_status,
    settle_skips,
    validated,
)

pytestmark = pytest.mark.unit

S, F = NodeStatus.SUCCEEDED, NodeStatus.FAILED


def fields(refused: pytest.ExceptionInfo[ValidationFailed]) -> list[str]:
    return [problem.field for problem in refused.value.details]


def test_a_diamond_is_valid_and_starts_at_its_root() -> None:
    graph = validated(["a", "b", "c", "d"], [Edge("a", "b"), Edge("a", "c"), Edge("b", "d"), Edge("c", "d")])
    assert graph.roots() == ["a"]
    assert decide(graph, {}).ready == {"a"}
    assert decide(graph, {"a": S}).ready == {"b", "c"}
    assert decide(graph, {"a": S, "b": S, "c": NodeStatus.RUNNING}).ready == set()  # D waits for both
    assert decide(graph, {"a": S, "b": S, "c": S}).ready == {"d"}
    assert decide(graph, {"a": S, "b": S, "c": F}).skipped == {"d"}  # join all: one dead edge


@pytest.mark.parametrize(
    ("nodes", "edges", "named", "says"),
    [
        (["a", "a"], [], "nodes[1].id", "another node"),
        (["a", "B"], [], "nodes[1].id", "a-z"),
        (["a"], [Edge("a", "z")], "edges[0].to", "'z' names no node"),
        (["a"], [Edge("a", "a")], "edges[0]", "to itself"),
        (["a", "b", "c"], [Edge("a", "b"), Edge("b", "c"), Edge("c", "b")], "edges", "b -> c -> b"),
        ([f"n{i}" for i in range(MAX_NODES + 1)], [], "nodes", "at most 100"),
        ([], [], "nodes", "at least one"),
    ],
)
def test_a_bad_graph_is_refused_naming_the_member(nodes: list[str], edges: list[Edge], named: str, says: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        validated(nodes, edges)
    assert named in fields(refused)
    assert any(says in problem.message for problem in refused.value.details), refused.value.details


def test_failure_paths_always_and_join_any() -> None:
    graph = validated(
        ["a", "on_fail", "cleanup", "either"],
        [
            Edge("a", "on_fail", On.FAILURE),
            Edge("a", "cleanup", On.ALWAYS),
            Edge("on_fail", "either"),
            Edge("cleanup", "either"),
        ],
        {"either": Join.ANY},
    )
    after_success, ready = settle_skips(graph, {"a": S})
    assert after_success["on_fail"] is NodeStatus.SKIPPED
    assert ready == {"cleanup"}
    assert decide(graph, {**after_success, "cleanup": S}).ready == {"either"}  # one met edge is enough
    assert decide(graph, {**after_success, "cleanup": F}).skipped == {"either"}  # every edge dead
    assert run_status(graph, {**after_success, "cleanup": F, "either": NodeStatus.SKIPPED}) is F


# --- random graphs against the reference -------------------------------------------------------


@st.composite
def runs(draw: st.DrawFn, max_nodes: int = 9) -> tuple[Graph, dict[str, NodeStatus]]:
    """A random DAG (edges from a lower node to a higher one), its joins, and the end each node
    would have if it ran."""
    count = draw(st.integers(1, max_nodes))
    nodes = [f"n{i}" for i in range(count)]
    pairs = [(i, j) for i in range(count) for j in range(i + 1, count)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs))) if pairs else []
    edges = [Edge(nodes[i], nodes[j], draw(st.sampled_from(list(On)))) for i, j in chosen]
    joins = {node: draw(st.sampled_from(list(Join))) for node in nodes}
    ends = {node: draw(st.sampled_from([S, F])) for node in nodes}
    return validated(nodes, edges, joins), ends


def reference(graph: Graph, ends: dict[str, NodeStatus]) -> dict[str, NodeStatus]:
    """Each node in topological order (the nodes' order here), decided once its parents are."""
    final: dict[str, NodeStatus] = {}
    for node in graph.nodes:
        met = []
        for edge in graph.incoming(node):
            parent = final[edge.parent]
            met.append(
                parent is not NodeStatus.SKIPPED and (edge.on is On.ALWAYS or (edge.on is On.SUCCESS) == (parent is S))
            )
        runs = not met or (all(met) if graph.join_of(node) is Join.ALL else any(met))
        final[node] = ends[node] if runs else NodeStatus.SKIPPED
    return final


@settings(max_examples=300, deadline=None)
@given(runs(), st.randoms(use_true_random=False))
def test_any_order_of_ends_and_any_stale_view_agree_with_the_reference(
    run: tuple[Graph, dict[str, NodeStatus]], chance: object
) -> None:
    """Nodes end in a random order; after each end a trigger decides from a view that may miss
    other recent ends (a stale read). Whatever it decides is what the reference decides, and no
    node starts twice: a start of a node already started is refused, as the derived id is."""
    import random

    assert isinstance(chance, random.Random)
    graph, ends = run
    expected = reference(graph, ends)
    statuses: dict[str, NodeStatus] = {}
    started: set[str] = set()
    starts: list[str] = []

    def apply(view: dict[str, NodeStatus]) -> None:
        settled, ready = settle_skips(graph, view)
        for node, status in settled.items():
            if status is NodeStatus.SKIPPED:
                assert expected[node] is NodeStatus.SKIPPED, (node, view)
                statuses.setdefault(node, NodeStatus.SKIPPED)
        for node in ready:
            assert expected[node] is not NodeStatus.SKIPPED, (node, view)
            starts.append(node)
            if node not in started:  # the derived id: one create succeeds
                started.add(node)
                statuses[node] = NodeStatus.RUNNING

    apply(statuses)
    while running := [node for node, status in statuses.items() if status is NodeStatus.RUNNING]:
        node = chance.choice(running)
        statuses[node] = ends[node]
        ended = [n for n, status in statuses.items() if status in (S, F)]
        stale = {n: s for n, s in statuses.items() if n not in chance.sample(ended, chance.randint(0, len(ended)))}
        stale[node] = ends[node]  # the trigger that ended it sees its own write
        apply(stale)
        apply(dict(statuses))  # and some later trigger sees everything
    assert statuses == expected
    assert started == {node for node, status in expected.items() if status is not NodeStatus.SKIPPED}
    assert run_status(graph, statuses) is (F if F in expected.values() else S)


def test_a_cancel_ends_what_did_not_end_and_a_retry_counts_an_attempt_only_where_one_was_made() -> None:
    from shared.domain.workflows import NodeRun, WorkflowRun, cancelled, retried

    graph = validated(["a", "b", "c", "d"], [Edge("a", "b"), Edge("b", "c"), Edge("a", "d", On.FAILURE)])
    run = WorkflowRun(
        "01KA0000000000000000000000",
        "wf",
        "acme",
        graph,
        {"a": S, "b": NodeStatus.RUNNING, "c": NodeStatus.PENDING, "d": NodeStatus.SKIPPED},
        nodes={"a": NodeRun("ITEM-A", "RUN-A", 1, 2), "b": NodeRun("ITEM-B", "RUN-B", 3)},
    )
    stopped, items = cancelled(run, 9)
    assert items == ["ITEM-B"]  # what was running has an item to cancel
    assert dict(stopped.statuses) == {
        "a": S,
        "b": NodeStatus.CANCELLED,
        "c": NodeStatus.CANCELLED,
        "d": NodeStatus.SKIPPED,
    }
    assert stopped.node("b").ended_ms == stopped.node("c").ended_ms == stopped.ended_ms == 9
    assert stopped.node("a").ended_ms == 2  # what had ended keeps its end
    again = retried(stopped)
    assert dict(again.statuses) == {"a": S, "b": NodeStatus.PENDING, "c": NodeStatus.PENDING, "d": NodeStatus.PENDING}
    assert again.attempts == {"b": 2}  # b's first attempt was made (its item exists); c never started
    assert again.status is NodeStatus.RUNNING
    assert again.ended_ms is None
    assert again.node("b") == NodeRun()
