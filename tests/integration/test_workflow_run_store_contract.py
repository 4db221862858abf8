"""The workflow run store on DynamoDB (shared/store/workflows.py) and in memory
(tests/support/workflows.py) held to the same scenarios: each write conditional, so a repeated
step or two triggers at once change nothing twice."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.domain.workflows import Graph, NodeStatus
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
        store.run = None
    else:
        from shared.store.models import WorkflowRunItem
        from shared.store.workflows import SK, run_pk

        WorkflowRunItem(run_pk(RUN), SK).delete()  # each example a new run
    graph, ends = run
    assert random_run(store, graph, ends, chance) == reference(graph, ends)
