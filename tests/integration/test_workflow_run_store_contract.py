"""The workflow run store on DynamoDB (shared/store/workflows.py) and in memory
(tests/support/workflows.py) held to the same scenarios: each write conditional, so a repeated
step or two triggers at once change nothing twice."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.domain.times import now_ms
from shared.domain.workflows import Graph, NodeOutcome, NodeStart, NodeStatus, WorkflowRun, cancelled, retried
from tests.support.workflows import (
    InMemoryWorkflowRuns,
    RunStore,
    cancelled_run,
    crash_between_creation_and_mark,
    diamond_race,
    random_run,
)
from tests.unit.test_workflows import reference, runs

pytestmark = pytest.mark.integration

S, F = NodeStatus.SUCCEEDED, NodeStatus.FAILED


@pytest.fixture(params=["memory", "dynamo"])
def store(request: pytest.FixtureRequest) -> RunStore:
    if request.param == "memory":
        return InMemoryWorkflowRuns()
    request.getfixturevalue("aws")
    from shared.store.workflows import DynamoWorkflowRuns

    return DynamoWorkflowRuns()


def test_the_diamonds_last_node_starts_once(store: RunStore) -> None:
    diamond_race(store)


def test_a_crash_between_creation_and_mark_repeats_as_a_duplicate(store: RunStore) -> None:
    crash_between_creation_and_mark(store)


def test_a_cancelled_run_starts_nothing_more(store: RunStore) -> None:
    cancelled_run(store)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs(), st.randoms(use_true_random=False))
def test_random_graphs_end_as_the_reference(
    store: RunStore, run: tuple[Graph, dict[str, NodeStatus]], chance: random.Random
) -> None:
    from tests.support.workflows import RUN

    if isinstance(store, InMemoryWorkflowRuns):
        store.runs.clear()
    else:
        from shared.store.models import WorkflowRunItem
        from shared.store.workflows import SK, run_pk

        WorkflowRunItem(run_pk(RUN), SK).delete()  # each example a new run
    graph, ends = run
    assert random_run(store, graph, ends, chance) == reference(graph, ends)


def _diamond(store: RunStore) -> WorkflowRun:
    from tests.support.workflows import DIAMOND, RUN

    run = WorkflowRun(RUN, "wf", "acme", DIAMOND, dict.fromkeys(DIAMOND.nodes, NodeStatus.PENDING), created_ms=1)
    assert store.create(run)
    return run


def test_an_end_before_the_start_was_marked_is_taken_and_the_mark_then_refused(store: RunStore) -> None:
    from tests.support.workflows import RUN

    _diamond(store)
    after = store.node_ended(RUN, "a", S, ended_ms=5, item_id="ITEM-A", node_run_id="RUN-A")
    assert after is not None
    assert after.status_of("a") is S
    assert after.node("a").item_id == "ITEM-A"
    assert after.node("a").run_id == "RUN-A"
    assert after.node("a").ended_ms == 5
    assert not store.node_started(RUN, "a", "ITEM-A", node_run_id="RUN-A", started_ms=4)  # it ended already
    assert store.node_ended(RUN, "a", S) is not None  # a repeat of the same end
    assert store.node_ended(RUN, "a", F) is None  # another end is not


def test_an_end_of_an_earlier_attempt_is_refused(store: RunStore) -> None:
    from tests.support.workflows import RUN

    before = _diamond(store)
    assert store.node_ended(RUN, "a", F, error="503") is not None
    failed = store.get(RUN)
    assert failed is not None
    assert store.run_ended(RUN, F, ended_ms=9)
    ended = store.get(RUN)
    assert ended is not None
    again = retried(ended)
    assert again.attempts["a"] == 2
    assert not store.replace(before, again)  # written since `before` was read: refused
    assert store.replace(ended, again)
    now = store.get(RUN)
    assert now is not None
    assert now.status is NodeStatus.RUNNING
    assert now.status_of("a") is NodeStatus.PENDING
    assert now.node("a").error is None
    assert now.ended_ms is None
    assert store.node_ended(RUN, "a", S, attempt=1) is None  # the first attempt's late end
    assert store.node_ended(RUN, "a", S, attempt=2) is not None


def test_an_outcome_is_kept_once_per_attempt_and_read_back_by_node(store: RunStore) -> None:
    from tests.support.workflows import RUN

    _diamond(store)
    first = NodeOutcome("a", "RUN-A", S, {"rows": 7}, None, 5)
    store.keep_outcome(RUN, 1, first)
    store.keep_outcome(RUN, 1, NodeOutcome("a", "RUN-A", F, "late", "boom", 6))  # a repeat keeps the first
    store.keep_outcome(RUN, 2, NodeOutcome("a", "RUN-A2", F, None, "boom", 7))
    assert store.outcomes(RUN, [("a", 1), ("b", 1)]) == {"a": first}
    assert store.outcomes(RUN, [("a", 2)])["a"].run_id == "RUN-A2"
    assert store.outcomes(RUN, []) == {}


def test_a_cancel_is_written_only_over_the_run_it_read(store: RunStore) -> None:
    from tests.support.workflows import RUN

    before = _diamond(store)
    assert store.node_started(RUN, "a", "ITEM-A", node_run_id="RUN-A", started_ms=2)
    read = store.get(RUN)
    assert read is not None
    after, running = cancelled(read, 7)
    assert running == ["ITEM-A"]
    assert not store.replace(before, after)
    assert store.replace(read, after)
    now = store.get(RUN)
    assert now is not None
    assert now.status is NodeStatus.CANCELLED
    assert set(now.statuses.values()) == {NodeStatus.CANCELLED}
    assert now.node("a").item_id == "ITEM-A"
    assert now.node("b").ended_ms == now.ended_ms == 7
    assert store.node_ended(RUN, "a", S) is None  # nothing moves in a cancelled run
    assert not store.node_started(RUN, "b", "ITEM-B")


def test_children_are_marked_together_or_not_at_all(store: RunStore) -> None:
    """Up to MARKS_PER_WRITE children in one write (its expression within DynamoDB's 4 KB);
    refused whole when one of them is no longer pending."""
    from shared.domain.workflows import Edge, validated
    from shared.services.workflows import MARKS_PER_WRITE
    from tests.support.workflows import RUN

    children = [f"child-{i:02d}" for i in range(MARKS_PER_WRITE)]
    graph = validated(["root", *children], [Edge("root", child) for child in children])
    assert store.create(WorkflowRun(RUN, "wf", "acme", graph, dict.fromkeys(graph.nodes, NodeStatus.PENDING)))
    starts = [NodeStart(child, f"ITEM-{child}", f"RUN-{child}") for child in children]
    assert store.node_ended(RUN, children[0], S) is not None  # ended before its mark
    assert not store.nodes_started(RUN, starts, started_ms=3)
    assert store.nodes_started(RUN, starts[1:], started_ms=3)
    run = store.get(RUN)
    assert run is not None
    assert {run.status_of(child) for child in children[1:]} == {NodeStatus.RUNNING}
    assert run.status_of(children[0]) is S
    assert run.node(children[5]).run_id == f"RUN-{children[5]}"
    assert run.node(children[5]).started_ms == 3


# --- the status index: a failed run is listed tenant-wide until a retry takes it out ------------

CREATED_MS = now_ms()


def _new(store: RunStore, n: int, tenant: str = "acme") -> WorkflowRun:
    """Run ``n`` of a workflow (a higher one is newer), running, created within its retention."""
    from tests.support.workflows import DIAMOND

    run_id = f"01KA{n:022d}"
    statuses = dict.fromkeys(DIAMOND.nodes, NodeStatus.PENDING)
    run = WorkflowRun(run_id, "wf", tenant, DIAMOND, statuses, created_ms=CREATED_MS + n)
    assert store.create(run)
    return run


def _failed(store: RunStore, limit: int = 10) -> list[str]:
    return [run.run_id for run in store.by_status("acme", F, limit, None).items]  # type: ignore[attr-defined]


def test_failed_runs_list_full_pages_and_count_exactly_until_retried(store: RunStore) -> None:
    """Failed runs among more newer runs than a filtered read reaches (200) are on the first page
    of the tenant's failed runs, counted exactly (the run as read gives its keys, or its item
    does); a retry's write takes one off."""
    from tests.support.eventually import eventually

    first, second = _new(store, 1), _new(store, 2)
    assert store.run_ended(first.run_id, F, ended_ms=5, run=first)
    assert store.run_ended(second.run_id, F, ended_ms=6)  # without the run: its item is read
    for n in range(10, 220):
        newer = _new(store, n)
        assert store.run_ended(newer.run_id, S, ended_ms=n, run=newer)
    _new(store, 3)  # running
    other = _new(store, 4, tenant="globex")
    assert store.run_ended(other.run_id, F, run=other)
    counted: Any = store

    def settled() -> None:  # the index's lag (local/moto_patches/index_lag.py)
        assert _failed(store) == [second.run_id, first.run_id]
        assert [counted.count("acme", F), counted.count("globex", F)] == [2, 1]

    eventually(settled)
    with pytest.raises(ValueError, match="not listed by status"):
        counted.count("acme", S)

    before = store.get(second.run_id)
    assert before is not None
    assert store.replace(before, retried(before))

    def left() -> None:
        assert _failed(store) == [first.run_id]
        assert counted.count("acme", F) == 1

    eventually(left)


def test_a_page_of_failed_runs_goes_on_from_its_cursor_exactly_once(store: RunStore) -> None:
    from tests.support.eventually import eventually

    made = [_new(store, n) for n in range(1, 8)]
    for run in made:
        assert store.run_ended(run.run_id, F, run=run)
    _new(store, 50)
    paging: Any = store

    def paged() -> None:
        seen, sizes, cursor = [], [], None
        while True:
            page = paging.by_status("acme", F, 3, cursor)
            seen += [run.run_id for run in page.items]
            sizes.append(len(page.items))
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == [run.run_id for run in made[::-1]]
        assert sizes == [3, 3, 1]

    eventually(paged)
