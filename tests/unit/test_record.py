"""Step 4, record (shared/services/firing/record.py), field by field: what an occurrence that
failed for good leaves (its dead letter in the table and in the DLQ, its alerts, its task's count
of failures in a row and a pause), what a recurring task's re-arm stages and arms, what an extra
run tells its parent, and which ends reach the chains, workflows and EventBridge schedules.
Written for the survivors of `make mutation`: every expected value is worked out here from the
rule's words (docs/receivers.md, section 4; docs/design.md, 2.4), not read back from the code."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.delivery import AlertEnvelope, Outcome
from shared.domain.alerts import AlertType, Notice
from shared.domain.claims import Claimed, Result
from shared.domain.firing import Staged, Timing, staged_for
from shared.domain.registration import new_task
from shared.domain.retry import Backoff, RetryPolicy
from shared.domain.schedules import At, Every
from shared.domain.signing import Signer, secret_text
from shared.domain.states import RunStatus, TaskStatus
from shared.domain.tasks import Alert, EventBridgeSchedule, HttpTarget, Priority, Task, TaskSpec
from shared.domain.times import from_ms, to_ms
from shared.domain.workflows import NodeLink, NodeRef, NodeStatus
from shared.services.firing.claim import Claim
from shared.services.firing.settle import Ended, ended_run
from tests.support.firing import FiringCore, firing_core

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
URL, ALERTS = "https://example.com/hook", "https://example.com/alerts"
ONCE_ONLY = RetryPolicy(max_attempts=1, backoff=Backoff.FIXED, interval_seconds=1)
LEAD = Timing().lead_ms
EXHAUSTED = "retries exhausted after 1 attempt(s): HTTP 500"


def due(core: FiringCore, task: Task) -> Staged:
    """The task's armed occurrence, read back, with the clock a lead before it."""
    read = core.repository.get("acme", task.id)
    staged = staged_for(task.id, to_ms(read.due_at), one_shot=not read.recurring, priority=read.priority)
    core.clock.now = staged.due_ms - LEAD
    return staged


def failing_minutely(core: FiringCore, **spec: Any) -> Task:
    """Every minute from NOW + 1 min, each occurrence answered 500 and never retried."""
    core.receiver.scripts[URL] = [Outcome.retry("HTTP 500", status=500)]
    every = Every(60, start=NOW + timedelta(minutes=1))
    return core.register(NOW, TaskSpec(every, (HttpTarget(URL),), retry=ONCE_ONLY, **spec))


def test_an_occurrence_that_fails_for_good_is_dead_lettered_alerted_and_counted_and_the_second_pauses_it() -> None:
    core = firing_core(to_ms(NOW))
    signers = {"acme": Signer.of([secret_text(bytes(32))])}
    core.trigger.alerts.signer = signers.__getitem__  # another tenant's (or none) would not be found
    alert = Alert(HttpTarget(ALERTS), after_consecutive_failures=2)
    task = failing_minutely(core, name="nightly", payload={"order": 7}, alert=alert, pause_after_failures=2)

    first = due(core, task)
    fired = core.deliver(first)
    assert (fired.result, fired.reason, fired.lateness_ms, fired.attempts, fired.staged) == (
        Result.DEAD_LETTERED,
        EXHAUSTED,
        0,
        1,
        first,
    )
    assert fired.alerts == (
        Notice(HttpTarget(ALERTS), AlertType.DEAD_LETTERED, "acme", task.id, first.run_id, EXHAUSTED, core.clock.now),
    )
    assert core.queues.dead == [(first, EXHAUSTED, task.id)]  # the DLQ's copy names the task
    letter = core.dead_letters.letters[first.run_id]
    assert (letter.name, letter.payload, letter.workflow) == ("nightly", {"order": 7}, None)
    read = core.repository.get("acme", task.id)
    assert (read.status, read.consecutive_failures, read.paused_reason) == (TaskStatus.SCHEDULED, 1, None)
    second = staged_for(task.id, first.due_ms + 60_000, one_shot=False)
    assert to_ms(read.due_at) == second.due_ms
    assert core.queues.staged == [second]  # a minute ahead: within the look-ahead, its writer stages it

    (sent_at, envelope), *_ = core.receiver.calls[ALERTS]
    assert isinstance(envelope, AlertEnvelope)
    assert (envelope.task_id, envelope.run_id, envelope.attempt, envelope.tenant) == (
        task.id,
        f"sundial.run.dead_lettered:{first.run_id}",
        1,
        "acme",
    )
    assert envelope.scheduled_for == envelope.fired_at == from_ms(sent_at)  # the alert's own time
    assert envelope.signer is signers["acme"]
    assert envelope.to_dict() == {
        "type": "sundial.run.dead_lettered",
        "task_id": task.id,
        "run_id": first.run_id,
        "reason": EXHAUSTED,
        "at": envelope.to_dict()["at"],
    }
    assert envelope.to_dict()["at"].startswith(from_ms(sent_at).strftime("%Y-%m-%dT%H:%M:%S"))

    core.queues.staged.clear()
    again = core.deliver(due(core, task))
    assert [notice.type for notice in again.alerts] == [AlertType.DEAD_LETTERED, AlertType.FAILING]
    assert again.alerts[1].reason == f"2 occurrences in a row failed; the last: {EXHAUSTED}"
    read = core.repository.get("acme", task.id)
    assert (read.status, read.consecutive_failures) == (TaskStatus.PAUSED, 2)
    assert read.paused_reason == "paused after 2 failed occurrences in a row (pause_after_failures: 2)"
    assert core.queues.staged == []  # a paused task's next occurrence is not staged
    assert len(core.receiver.calls[ALERTS]) == 3


def test_a_one_shot_that_fails_for_good_counts_its_failure_and_frees_its_place() -> None:
    core = firing_core(to_ms(NOW))
    core.receiver.scripts[URL] = [Outcome.fail("HTTP 400", status=400)]
    task = core.register(NOW, TaskSpec(At(NOW + timedelta(seconds=5)), (HttpTarget(URL),), retry=ONCE_ONLY))
    assert task.id in core.repository.counted
    fired = core.deliver(due(core, task))
    assert (fired.result, fired.reason) == (Result.FAILED, "failed after 1 attempt(s): HTTP 400")
    read = core.repository.get("acme", task.id)
    assert (read.status, read.consecutive_failures) == (TaskStatus.FAILED, 1)
    assert task.id not in core.repository.counted  # its tenant's quota has its place back


def test_a_recurring_tasks_last_occurrence_completes_it_stages_nothing_and_frees_its_place() -> None:
    core = firing_core(to_ms(NOW))
    start = NOW + timedelta(minutes=1)
    task = core.register(NOW, TaskSpec(Every(60, start=start, end=start + timedelta(seconds=30)), (HttpTarget(URL),)))
    assert core.deliver(due(core, task)).result is Result.SUCCEEDED
    assert core.queues.staged == []
    read = core.repository.get("acme", task.id)
    assert (read.status, read.next_fire_at) == (TaskStatus.COMPLETED, None)
    assert task.id not in core.repository.counted


def test_a_high_priority_tasks_next_occurrence_is_staged_on_its_lane_and_marked_staged() -> None:
    core = firing_core(to_ms(NOW))
    every = Every(60, start=NOW + timedelta(minutes=1))
    task = core.register(NOW, TaskSpec(every, (HttpTarget(URL),), priority=Priority.HIGH))
    first = due(core, task)
    assert core.deliver(first).result is Result.SUCCEEDED
    following = staged_for(task.id, first.due_ms + 60_000, one_shot=False, priority=Priority.HIGH)
    assert core.queues.staged == [following]
    (occurrence,) = [o for o in core.repository.occurrences.values() if o.due_ms == following.due_ms]
    assert occurrence.staged_ms == following.due_ms  # a scanner passing it does not stage it again


def test_an_extra_run_that_fails_for_good_is_its_parents_latest_occurrence() -> None:
    core = firing_core(to_ms(NOW))
    core.receiver.scripts[URL] = [Outcome.retry("HTTP 500", status=500)]
    parent = core.register(NOW, TaskSpec(Every(3600, start=NOW + timedelta(hours=1)), (HttpTarget(URL),)))
    spec = TaskSpec(At(NOW), (HttpTarget(URL),), retry=ONCE_ONLY)
    extra = replace(new_task(spec, tenant="acme", now=NOW, shard=0), parent_id=parent.id)
    core.repository.create_run(extra, staged=True)
    staged = staged_for(extra.id, to_ms(extra.due_at), one_shot=True)
    fired = core.deliver(staged)
    assert fired.result is Result.DEAD_LETTERED
    assert fired.alerts == ()  # the parent has no alert
    last = core.repository.get("acme", parent.id).last_run
    assert last is not None
    assert (last.run_id, last.status) == (staged.run_id, RunStatus.DEAD_LETTERED)


@dataclass
class Ends:
    """The chains, workflows and EventBridge schedules an occurrence's end reaches: what each was told."""

    fail_chains: bool = False
    told: list[tuple[str, Any]] = field(default_factory=list)

    def start_chained(self, parent: Task, link: Any, child_id: str, branch: Any) -> Any:
        if self.fail_chains:
            raise RuntimeError("the chain's child could not be started")
        self.told.append(("chain", (child_id, link.response)))
        return type("Started", (), {"run_id": "c", "duplicate": False, "skipped": False})()

    def node_ended(self, run_id: str, node: str, status: NodeStatus, **kwargs: Any) -> None:
        self.told.append(("node", (run_id, node, status, kwargs)))

    def dead_letter(self, task: Task, staged: Staged, error: str | None, exhausted: Any) -> None:
        self.told.append(("schedule dead letter", (task.id, staged.run_id, error)))

    def completed(self, task: Task) -> None:
        self.told.append(("schedule completed", task.id))


def ended(core: FiringCore, task: Task, body: bytes = b'{"why": "full"}') -> tuple[Claim, Ended]:
    """A claim of the task's occurrence and its end: dead-lettered, its one failed call answered ``body``."""
    staged = staged_for(task.id, to_ms(task.due_at), one_shot=not task.recurring)
    outcome = Outcome.retry("HTTP 500", status=500, body=body)
    run = replace(task_run(staged, task), status=RunStatus.DEAD_LETTERED, attempts=1, last_error="HTTP 500")
    claim = Claim(staged, Claimed(task, 0, "log"), core.clock.now)
    return claim, Ended(run, 0, "retries exhausted after 1 attempt(s): HTTP 500", 0, (outcome,))


def task_run(staged: Staged, task: Task) -> Any:
    return ended_run(staged, task.id, RunStatus.DEAD_LETTERED, attempts=1)


def test_a_chain_that_cannot_start_fails_the_record_but_never_an_occurrence_given_up() -> None:
    core = firing_core(to_ms(NOW))
    child = core.register(NOW, TaskSpec(At(NOW + timedelta(days=1)), (HttpTarget(URL),)))
    task = core.register(NOW, TaskSpec(At(NOW + timedelta(seconds=5)), (HttpTarget(URL),), on_failure=(child.id,)))
    ends = Ends(fail_chains=True)
    core.trigger.recorder.chains = ends
    claim, end = ended(core, task)
    with pytest.raises(RuntimeError):
        core.trigger.recorder.record(claim, end)  # its message comes back: the chain is tried again
    assert core.dead_letters.letters == {}
    fired = core.trigger.recorder.give_up(claim, end)  # its last delivery: given up all the same
    assert fired.result is Result.DEAD_LETTERED
    assert list(core.dead_letters.letters) == [claim.staged.run_id]
    ends.fail_chains = False
    core.trigger.recorder.record(claim, end)
    assert ends.told == [("chain", (child.id, {"why": "full"}))]  # the failed call's answer


def test_a_workflow_nodes_end_moves_its_run_on_with_the_answer_and_a_native_task_tells_no_schedule() -> None:
    core = firing_core(to_ms(NOW))
    ends = Ends()
    core.trigger.recorder.workflows = ends
    core.trigger.recorder.schedules = ends
    task = core.register(NOW, TaskSpec(At(NOW + timedelta(seconds=5)), (HttpTarget(URL),)))
    node = replace(task, workflow=NodeLink("wf", "wr-1", "b", attempt=2))
    claim, end = ended(core, node)
    fired = core.trigger.recorder.record(claim, end)
    assert fired.result is Result.DEAD_LETTERED
    ((kind, (run_id, name, status, kwargs)),) = ends.told  # no schedule was told: a native task's
    assert (kind, run_id, name, status, kwargs["attempt"], kwargs["item_id"]) == (
        "node",
        "wr-1",
        "b",
        NodeStatus.FAILED,
        2,
        task.id,
    )
    outcome = kwargs["outcome"]
    assert (outcome.node, outcome.run_id, outcome.response, outcome.error) == (
        "b",
        claim.staged.run_id,
        {"why": "full"},
        "HTTP 500",
    )
    assert outcome.ended_ms == core.clock.now
    letter = core.dead_letters.letters[claim.staged.run_id]  # a redrive moves the same node on
    assert letter.workflow == NodeRef("wf", "wr-1", "b", 2)


def test_an_eventbridge_schedule_hears_of_its_dead_letters_and_only_its_last_occurrence() -> None:
    core = firing_core(to_ms(NOW))
    ends = Ends()
    core.trigger.recorder.schedules = ends
    start = NOW + timedelta(minutes=1)
    schedule = EventBridgeSchedule("arn:aws:scheduler:eu-west-1:123456789012:schedule/default/s")
    every = Every(60, start=start, end=start + timedelta(seconds=90))  # two occurrences
    task = core.register(NOW, TaskSpec(every, (HttpTarget(URL),), eventbridge=schedule))
    first = due(core, task)
    assert core.deliver(first).result is Result.SUCCEEDED
    assert ends.told == []  # not its last: its name stays
    assert core.deliver(due(core, task)).result is Result.SUCCEEDED
    assert ends.told == [("schedule completed", task.id)]
    claim, end = ended(core, core.repository.get("acme", task.id))
    core.trigger.recorder.record(claim, end)
    assert ends.told[1] == ("schedule dead letter", (task.id, claim.staged.run_id, "HTTP 500"))
