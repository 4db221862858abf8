"""make verify's explorer (verify/): the bounded run `make test` makes, one test per case, and the
explorer's own tests: it finds each seeded defect (a broken claim condition, a broken re-arm
condition, a chain hop whose id is not derived, a trigger that does not look at its task again
before its call), replays what it prints, and enumerates every schedule of a small tree."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from shared.domain.states import RunStatus, TaskStatus
from shared.domain.times import to_ms
from shared.observability import logger
from shared.services import tasks as task_service
from shared.services.firing.claim import Claimer
from tests.support.pipeline_store import InMemoryPipelineStore
from verify.__main__ import BOUNDED_LIMIT, compact, expand, world
from verify.cases import CASES
from verify.engine import Chooser, next_prefix
from verify.explorer import explore_case, replay

pytestmark = pytest.mark.unit


SLOWEST_FIRST = (
    "workflow-join",
    "patch-recurring",
    "three-copies",
    "retrying",
    "recurring-retrying",
    "fixed-delay-retrying",
    "cancel-recurring",
    "last-delivery",
)
"""The bounded run's slowest cases, slowest first (alone: 30, 8.1, 7.6, 7.3, 7.0, 6.8, 5.7 and 5.6
seconds; the others under 4): collected first, the run's scheduler hands them out first among the
single tests (tests/support/suites.py, LONG_FIRST), so that the slowest does not start last."""


def test_the_slowest_cases_named_are_cases() -> None:
    assert set(SLOWEST_FIRST) <= set(CASES)


@pytest.mark.exploration
@pytest.mark.parametrize("name", [*SLOWEST_FIRST, *sorted(set(CASES) - set(SLOWEST_FIRST))])
def test_every_schedule_of_the_case_within_its_bounds_keeps_every_invariant(name):
    explored = explore_case(CASES[name], world, BOUNDED_LIMIT)
    print(f"{name}: {explored.executions:,} interleavings, {len(explored.ends)} end states, {explored.seconds:.1f} s")
    first = explored.violations[0] if explored.violations else None
    assert first is None, (compact(first.schedule), first.violations, first.trace)
    assert explored.complete, f"more than {BOUNDED_LIMIT:,} schedules: the bounded run no longer covers {name}"
    assert len(explored.ends) > 1  # the orders lead to different (correct) ends: the crashes were explored


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_schedule_of_the_case_without_preemption_keeps_every_invariant(name):
    """The quick bounds (each actor runs until it waits or ends, one crash anywhere): what make
    mutation runs against every mutant of the firing core, as the bounded run is minutes."""
    explored = explore_case(replace(CASES[name], preemptions=0), world, BOUNDED_LIMIT)
    first = explored.violations[0] if explored.violations else None
    assert first is None, (compact(first.schedule), first.violations, first.trace)
    assert explored.complete


def _invariants(name: str, limit: int = 20_000, *, symmetry: bool = True, **bounds: int) -> set[str]:
    explored = explore_case(replace(CASES[name], **bounds), world, limit, symmetry=symmetry)
    return {v.invariant for execution in explored.violations for v in execution.violations}


@pytest.mark.parametrize("name", sorted(CASES))
def test_receiving_one_of_twin_copies_reaches_every_end_receiving_each_does(name):
    """The symmetry reduction (verify/explorer.py) against the exploration without it, which
    receives every copy: the same end states, in fewer executions where the case has twins."""
    case = replace(CASES[name], preemptions=0)
    reduced = explore_case(case, world, BOUNDED_LIMIT)
    whole = explore_case(case, world, BOUNDED_LIMIT, symmetry=False)
    assert reduced.complete
    assert whole.complete
    assert reduced.ends == whole.ends
    assert not reduced.violations
    assert not whole.violations
    assert reduced.executions <= whole.executions
    if name == "three-copies":
        assert reduced.executions < whole.executions


def test_twin_copies_received_once_still_find_what_each_copys_receive_finds(monkeypatch):
    """A broken claim (two copies each fire the occurrence) is found with the reduction as without."""

    def careless(self, task, staged):
        return task.status is TaskStatus.SCHEDULED and to_ms(task.due_at) == staged.due_ms

    monkeypatch.setattr(InMemoryPipelineStore, "_claimable", careless)
    for name in ("one-shot", "three-copies"):
        found = _invariants(name, preemptions=0)
        assert found == _invariants(name, preemptions=0, symmetry=False)
        assert "ended once" in found


def test_a_claim_whose_condition_lets_a_claimed_run_be_claimed_again_is_caught(monkeypatch):
    def careless(self, task, staged):  # a first attempt no longer checks the run is not taken yet
        return task.status is TaskStatus.SCHEDULED and to_ms(task.due_at) == staged.due_ms

    monkeypatch.setattr(InMemoryPipelineStore, "_claimable", careless)
    found = _invariants("one-shot", preemptions=1)
    assert "called again only after a cut call" in found
    assert "ended once" in found


def test_a_rearm_whose_condition_ignores_the_clients_change_is_caught(monkeypatch):
    rearm = InMemoryPipelineStore.rearm

    def careless(self, task, staged, run, **kwargs):  # re-arms even a task its client rescheduled
        current = self.repository._tasks[task.id]
        self.repository._tasks[task.id] = replace(current, due_at=task.due_at)
        return rearm(self, task, staged, run, **kwargs)

    monkeypatch.setattr(InMemoryPipelineStore, "rearm", careless)
    assert "the client's change kept" in _invariants("patch-recurring", preemptions=1)


def test_a_chain_hop_whose_id_is_not_derived_from_its_parent_run_is_caught(monkeypatch):
    derived = task_service.chained_item_id
    starts = itertools.count()

    def fresh(parent_run_id, child_id, branch, shards):  # a new id on every start of the hop
        return derived(f"{parent_run_id[:-4]}{next(starts):04d}", child_id, branch, shards)

    monkeypatch.setattr(task_service, "chained_item_id", fresh)
    assert "a hop runs once" in _invariants("chain", preemptions=0)


def test_a_trigger_that_does_not_look_at_its_task_before_its_call_is_caught(monkeypatch):
    monkeypatch.setattr(Claimer, "stopped", lambda self, claim: None)
    assert "nothing called after a cancel" in _invariants("cancel-one-shot", preemptions=1)


def test_a_resumes_message_dropped_when_it_overtakes_the_resumes_write_is_caught(monkeypatch):
    """Before writers' messages were looked at again: a resume's message claimed while the task
    was still paused was dropped, and the write then armed the task for an occurrence no message
    fires (found by this case)."""
    monkeypatch.setattr("tests.support.pipeline_store.writer_may_still_arm", lambda *args, **kwargs: False)
    assert "final state" in _invariants("pause-resume-recurring", preemptions=1)


def test_a_patchs_message_dropped_when_it_overtakes_the_patchs_write_is_caught(monkeypatch):
    """Before: a PATCH to an earlier time staged the new occurrence before its write, and a trigger
    that received it first found the task armed later and dropped it; the write then armed the task
    for an occurrence no message fires (found by the patch-earlier case)."""
    monkeypatch.setattr("shared.domain.claims.writer_may_still_arm", lambda *args, **kwargs: False)
    assert "final state" in _invariants("patch-earlier", preemptions=1)


def test_a_printed_schedule_replays_the_same_execution():
    explored = explore_case(CASES["retrying"], world, 500)
    again = explore_case(CASES["retrying"], world, 500)
    assert explored.ends == again.ends
    execution = replay(CASES["retrying"], [0, 0, 0, 1], world)
    assert execution.trace != replay(CASES["retrying"], [], world).trace  # the 1 chose something else
    twice = replay(CASES["retrying"], expand(compact(execution.schedule)), world)
    assert (twice.trace, twice.end_state) == (execution.trace, execution.end_state)


def test_the_depth_first_order_visits_every_schedule_of_a_tree_once():
    """A tree whose first decision has 3 options and each later one 2, three deep: 3*2*2 leaves."""
    seen: list[list[int]] = []
    prefix: list[int] | None = []
    while prefix is not None:
        chooser = Chooser(prefix)
        for options in (3, 2, 2):
            chooser.choose(options)
        seen.append(chooser.schedule())
        prefix = next_prefix(chooser.trail)
    assert len(seen) == 12
    assert sorted(map(tuple, seen)) == sorted(itertools.product(range(3), range(2), range(2)))


def test_a_dead_letter_the_explorer_ends_with_is_the_apis():
    """The last-delivery case ends in a dead letter in some orders: read through the API's store."""
    explored = explore_case(CASES["last-delivery"], world, 200)
    assert not explored.violations
    assert any(RunStatus.DEAD_LETTERED.value in str(end) for end in explored.ends)


def test_a_fixed_delay_re_armed_from_its_due_time_not_its_end_is_caught(monkeypatch):
    from shared.domain import firing

    def from_due(schedule, due_ms, now_ms, timing):  # a fixed rate's rule: the period after it was due
        return due_ms + 60_000

    monkeypatch.setattr(firing, "next_occurrence", from_due)
    monkeypatch.setattr("shared.services.firing.record.next_occurrence", from_due)
    assert "a fixed delay counts from the run's end" in _invariants("fixed-delay-retrying", preemptions=0)


def test_an_exploration_quiets_the_products_logger_only_while_it_runs():
    """The tests a worker runs after an exploration see the product's logs again."""
    before = logger.log_level
    explored = explore_case(replace(CASES["one-shot"], preemptions=0), world, BOUNDED_LIMIT)
    assert explored.complete
    assert logger.log_level == before
