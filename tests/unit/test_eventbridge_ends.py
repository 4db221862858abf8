"""What the EventBridge Scheduler API's schedules ask of an occurrence's end (docs/eventbridge.md,
section 7), through the trigger's four steps on the in-memory ports under a fake clock: retries
bounded by attempts and by the event's age, the dead-letter event sent to the schedule's own
queue with the attributes the service documents, and the name removed after completion."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.delivery import Envelope, Outcome
from shared.domain.arns import queue_url
from shared.domain.claims import Result
from shared.domain.firing import Staged, Timing, staged_for
from shared.domain.ids import ALPHABET
from shared.domain.registration import new_task
from shared.domain.states import RunStatus
from shared.domain.tasks import Target, Task
from shared.domain.times import from_ms, to_ms
from shared.services.scheduler_api import CreateSchedule, ScheduleEnds, spec_of
from shared.services.tasks import TaskService
from shared.store.dead_letters import from_item, to_item
from tests.support.firing import FiringCore, firing_core

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
LEAD = Timing().lead_ms
ARN = "arn:aws:scheduler:us-east-1:123456789012:schedule/default/nightly"
QUEUE = "arn:aws:sqs:us-east-1:123456789012:orders"
DLQ = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
THROTTLED = Outcome.retry("sqs SendMessage failed: ThrottlingException: Rate exceeded", status=400)


@dataclass
class Scripted:
    """The targets: answers in turn (the last repeats); keeps what each call was sent."""

    answers: list[Outcome]
    sent: list[Envelope] = field(default_factory=list)

    def deliver(self, target: Target, envelope: Envelope) -> Outcome:
        self.sent.append(envelope)
        return self.answers[min(len(self.sent), len(self.answers)) - 1]


@dataclass
class Queue:
    messages: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def send_to_queue(self, queue_arn: str, body: str, attributes: dict[str, dict[str, str]]) -> Outcome:
        self.messages.append((queue_arn, body, {k: v["StringValue"] for k, v in attributes.items()}))
        return Outcome.success(200)


@dataclass
class Names:
    dropped: list[tuple[str, str, str, str]] = field(default_factory=list)

    def drop_completed(self, tenant: str, group: str, name: str, task_id: str) -> bool:
        self.dropped.append((tenant, group, name, task_id))
        return True


def core_for(answers: list[Outcome]) -> tuple[FiringCore, Scripted, Queue, Names]:
    core = firing_core(to_ms(NOW))
    targets, queue, names = Scripted(answers), Queue(), Names()
    core.trigger.caller.deliverer = targets
    core.trigger.recorder.schedules = ScheduleEnds(queue, names)  # type: ignore[arg-type]
    return core, targets, queue, names


def schedule(
    core: FiringCore, action: str = "NONE", randbytes: Callable[[int], bytes] = os.urandom, **target: Any
) -> Task:
    params = {
        "Name": "nightly",
        "ScheduleExpression": "at(2026-11-27T09:00:03)",
        "Target": {"Arn": QUEUE, "RoleArn": "arn:aws:iam::123456789012:role/r", "Input": '{"n": 1}', **target},
        "ActionAfterCompletion": action,
    }
    spec = spec_of(CreateSchedule.from_wire(params), NOW, ARN)
    return core.repository.create(new_task(spec, tenant="acme", now=NOW, shard=0, randbytes=randbytes))


def another_id(task_id: str) -> str:
    """An id in the same bucket and shard as ``task_id`` and never equal to it: its last
    character (random bits) replaced by the next one of the alphabet."""
    return task_id[:-1] + ALPHABET[(ALPHABET.index(task_id[-1]) + 1) % len(ALPHABET)]


def fire_until_ended(core: FiringCore, task: Task) -> list[Result]:
    """Deliver the occurrence's messages, each when it becomes visible, until the run ends."""
    message: Staged = staged_for(task.id, to_ms(task.due_at), one_shot=True)
    results: list[Result] = []
    while True:
        core.clock.now = max(core.clock.now, (message.start_ms or message.due_ms) - LEAD)
        sent_before = len(core.queues.sent)
        batch = core.trigger.new_batch()
        batch.take_turns([("m", message)])
        results.append(batch.fire(message, "m").result)
        batch.close()
        if results[-1] is not Result.RETRYING:
            return results
        message = core.queues.sent[sent_before][0]


def test_retries_bounded_by_attempts_end_in_the_schedule_s_dead_letter_queue() -> None:
    core, targets, queue, _ = core_for([THROTTLED])
    task = schedule(
        core,
        Input='{"attempt": <aws.scheduler.attempt-number>}',
        RetryPolicy={"MaximumRetryAttempts": 2},
        DeadLetterConfig={"Arn": DLQ},
    )
    assert fire_until_ended(core, task) == [Result.RETRYING, Result.RETRYING, Result.DEAD_LETTERED]
    assert [e.attempt for e in targets.sent] == [1, 2, 3]  # MaximumRetryAttempts 2: three attempts in all
    ((arn, body, attributes),) = queue.messages
    run_id = targets.sent[0].run_id
    assert (arn, body) == (DLQ, '{"attempt": 3}')  # the Input the last attempt sent
    assert attributes == {
        "ERROR_CODE": "ThrottlingException",
        "ERROR_MESSAGE": "Rate exceeded",
        "EXECUTION_ID": run_id,
        "EXHAUSTED_RETRY_CONDITION": "MaximumRetryAttempts",
        "IS_PAYLOAD_TRUNCATED": "false",
        "RETRY_ATTEMPTS": "2",
        "SCHEDULED_TIME": "2026-11-27T09:00:03Z",
        "SCHEDULE_ARN": ARN,
        "TARGET_ARN": QUEUE,
    }
    assert [letter.run_id for letter in core.dead_letters.letters.values()] == [run_id]  # redrivable too


def test_retries_bounded_by_the_event_s_age_stop_before_an_attempt_would_start_too_late() -> None:
    core, targets, queue, _ = core_for([THROTTLED])
    task = schedule(core, RetryPolicy={"MaximumEventAgeInSeconds": 60}, DeadLetterConfig={"Arn": DLQ})
    results = fire_until_ended(core, task)
    due = to_ms(task.due_at)
    starts = [to_ms(e.fired_at) - due for e in targets.sent]
    # Sundial's backoff from 2 s, doubling: attempts start 0, 2, 6, 14 and 30 s after the time;
    # the sixth would start at 62 s, past the 60 s the policy allows
    assert starts == [0, 2_000, 6_000, 14_000, 30_000]
    assert results[-1] is Result.DEAD_LETTERED
    ((_, _, attributes),) = queue.messages
    assert (attributes["EXHAUSTED_RETRY_CONDITION"], attributes["RETRY_ATTEMPTS"]) == ("MaximumEventAgeInSeconds", "4")
    run = core.repository.get("acme", task.id).run
    assert run is not None
    assert (run.status, run.attempts) == (RunStatus.DEAD_LETTERED, 5)


def test_a_final_failure_is_dead_lettered_at_once_without_a_retry_condition() -> None:
    missing = Outcome.fail("sqs SendMessage failed: AWS.SimpleQueueService.NonExistentQueue: no queue", status=400)
    core, _, queue, _ = core_for([missing])
    task = schedule(core, DeadLetterConfig={"Arn": DLQ})
    assert fire_until_ended(core, task) == [Result.FAILED]
    ((_, body, attributes),) = queue.messages
    assert body == '{"n": 1}'
    assert (attributes["ERROR_CODE"], attributes["RETRY_ATTEMPTS"]) == ("AWS.SimpleQueueService.NonExistentQueue", "0")
    assert "EXHAUSTED_RETRY_CONDITION" not in attributes


def test_without_a_dead_letter_config_nothing_is_sent_but_sundial_keeps_the_dead_letter() -> None:
    core, _, queue, _ = core_for([THROTTLED])
    task = schedule(core, RetryPolicy={"MaximumRetryAttempts": 0})
    assert fire_until_ended(core, task) == [Result.DEAD_LETTERED]
    assert queue.messages == []
    assert len(core.dead_letters.letters) == 1


def test_a_schedule_that_asks_is_deleted_once_it_has_fired_its_last() -> None:
    core, _, _, names = core_for([Outcome.success(200)])
    task = schedule(core, action="DELETE")
    assert task.eventbridge is not None
    assert task.eventbridge.delete_after_completion
    assert fire_until_ended(core, task) == [Result.SUCCEEDED]
    assert names.dropped == [("acme", "default", "nightly", task.id)]


@pytest.mark.parametrize("last", ["X", "0", None], ids=["id-ending-in-X", "id-ending-in-0", "random-id"])
def test_a_schedule_that_does_not_ask_is_kept_and_an_extra_run_never_deletes_one(last: str | None) -> None:
    core, _, _, names = core_for([Outcome.success(200)])
    kept = schedule(core)
    assert fire_until_ended(core, kept) == [Result.SUCCEEDED]
    core2, _, _, names2 = core_for([Outcome.success(200)])
    # the random bits' last five make the id's last character: the cases an extra id must differ from
    randbytes = os.urandom if last is None else (lambda n: bytes(n - 1) + bytes([ALPHABET.index(last)]))
    asking = schedule(core2, action="DELETE", randbytes=randbytes)
    assert last is None or asking.id.endswith(last)
    extra = core2.repository.create(replace(asking, id=another_id(asking.id), parent_id=asking.id))
    assert fire_until_ended(core2, extra) == [Result.SUCCEEDED]
    assert names.dropped == names2.dropped == []


def test_the_context_attribute_names_the_nominal_time_of_a_flexible_occurrence() -> None:
    core, targets, _, _ = core_for([Outcome.success(200)])
    params_window = {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 10}
    spec = spec_of(
        CreateSchedule.from_wire(
            {
                "Name": "nightly",
                "ScheduleExpression": "at(2026-11-27T09:00:03)",
                "FlexibleTimeWindow": params_window,
                "Target": {"Arn": QUEUE, "RoleArn": "r", "Input": '"<aws.scheduler.scheduled-time>"'},
            }
        ),
        NOW,
        ARN,
    )
    task = core.repository.create(new_task(spec, tenant="acme", now=NOW, shard=0))
    nominal = datetime(2026, 11, 27, 9, 0, 3, tzinfo=UTC)
    assert nominal <= task.due_at < nominal + timedelta(minutes=10)
    assert fire_until_ended(core, task) == [Result.SUCCEEDED]
    (envelope,) = targets.sent
    assert envelope.fired_at == task.due_at  # fired at its drawn moment
    assert envelope.scheduled_for == nominal


@pytest.mark.parametrize(
    "window", [{"Mode": "OFF"}, {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 4}], ids=["off", "flexible"]
)
def test_an_at_long_past_fires_once_at_once_saying_the_time_written(window: dict[str, Any]) -> None:
    """AWS takes an at() years past (tests/data/aws/scheduler-create-schedule-past-at.json): it
    fires at once, and <aws.scheduler.scheduled-time> is the time it was set for."""
    core, targets, _, _ = core_for([Outcome.success(200)])
    params = {
        "Name": "late",
        "ScheduleExpression": "at(2022-12-31T23:59:59)",
        "FlexibleTimeWindow": window,
        "Target": {"Arn": QUEUE, "RoleArn": "r", "Input": '"<aws.scheduler.scheduled-time>"'},
    }
    task = core.repository.create(
        new_task(spec_of(CreateSchedule.from_wire(params), NOW, ARN), tenant="acme", now=NOW, shard=0)
    )
    assert task.due_at == NOW
    assert fire_until_ended(core, task) == [Result.SUCCEEDED]
    (envelope,) = targets.sent
    assert envelope.fired_at == NOW
    assert envelope.scheduled_for == datetime(2022, 12, 31, 23, 59, 59, tzinfo=UTC)


def test_the_schedule_s_arn_is_the_task_s_and_a_redrive_of_its_dead_letter_sends_the_input_again() -> None:
    """The targets carry no copy of the schedule's ARN: the occurrence's envelope names it from the
    task's ``eventbridge``, and the dead letter keeps it, so that a redrive (an extra run made of
    the letter) sends the schedule's ``Input`` as the occurrence did."""
    core, targets, _, _ = core_for([THROTTLED, Outcome.success(200)])
    task = schedule(core, RetryPolicy={"MaximumRetryAttempts": 0})
    assert all(not hasattr(target, "schedule_arn") for target in task.targets)
    assert fire_until_ended(core, task) == [Result.DEAD_LETTERED]
    (letter,) = core.dead_letters.letters.values()
    assert letter.schedule_arn == ARN
    tasks = TaskService(
        core.repository,
        bucket_shards=1,
        retention=timedelta(days=30),
        clock=lambda: from_ms(core.clock.now),
        dead_letters_store=core.dead_letters,
    )
    ((_, run_id),) = tasks.redrive("acme", [letter.id]).runs
    (child,) = [r.child for r in core.repository.recorded_runs[task.id].values() if r.child]
    extra = core.repository.get_extra("acme", child)
    assert extra.eventbridge is not None
    assert extra.eventbridge.arn == ARN
    assert fire_until_ended(core, extra) == [Result.SUCCEEDED]
    assert [(e.run_id, e.schedule_arn) for e in targets.sent] == [(letter.run_id, ARN), (run_id, ARN)]


def test_a_dead_letter_keeps_the_schedule_s_arn_as_stored_and_reads_an_older_letter_s_from_its_targets() -> None:
    core, _, _, _ = core_for([THROTTLED])
    fire_until_ended(core, schedule(core, RetryPolicy={"MaximumRetryAttempts": 0}))
    (letter,) = core.dead_letters.letters.values()
    item = to_item(letter, to_ms(NOW))
    assert item.schedule_arn == ARN
    assert "schedule_arn" not in item.targets
    assert from_item(item) == letter
    # written when each target kept a copy: the letter's own member absent, the targets' copy read
    item.schedule_arn = None
    item.targets = json.dumps([{"sqs": {"queue_url": queue_url(QUEUE), "schedule_arn": ARN}}])
    assert from_item(item) == letter
