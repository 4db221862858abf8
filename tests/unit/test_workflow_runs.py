"""A workflow run moving on (shared/services/workflows.py) over the in-memory run store
(tests/support/workflows.py): a diamond whose middle nodes end at once, a crash between a child's
creation and its mark, duplicate deliveries, cancel, and random graphs against the reference
executor of tests/unit/test_workflows.py. The same scenarios hold on DynamoDB:
tests/integration/test_workflow_run_store_contract.py."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.workflows import Graph, NodeStatus
from tests.support.workflows import (
    InMemoryWorkflowRuns,
    cancelled_run,
    crash_between_creation_and_mark,
    diamond_race,
    random_run,
)
from tests.unit.test_workflows import reference, runs

pytestmark = pytest.mark.unit


def test_the_diamonds_last_node_starts_once_when_both_middles_end_at_once() -> None:
    diamond_race(InMemoryWorkflowRuns())


def test_a_crash_between_a_childs_creation_and_its_mark_is_repeated_as_a_duplicate() -> None:
    crash_between_creation_and_mark(InMemoryWorkflowRuns())


def test_a_cancelled_run_starts_nothing_more() -> None:
    cancelled_run(InMemoryWorkflowRuns())


@settings(max_examples=200, deadline=None)
@given(runs(), st.randoms(use_true_random=False))
def test_random_graphs_with_duplicate_deliveries_end_as_the_reference_each_node_created_once(
    run: tuple[Graph, dict[str, NodeStatus]], chance: random.Random
) -> None:
    graph, ends = run
    assert random_run(InMemoryWorkflowRuns(), graph, ends, chance) == reference(graph, ends)
