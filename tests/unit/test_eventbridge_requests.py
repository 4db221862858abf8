"""What the EventBridge Scheduler API takes and refuses of a schedule's expression, held to AWS's
own answers (tests/data/aws/scheduler-*.json, from LocalStack's AWS-validated recordings): each
refused expression answers AWS's code and message first, Sundial's reason after it; an ``at()``
long past is taken, as AWS took one, and fires once, at once (docs/eventbridge.md, section 2),
while the native API keeps its own bound (24 hours back)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.domain.errors import SchedulerApiError, ValidationFailed
from shared.domain.patches import TaskPatch
from shared.domain.registration import new_task
from shared.domain.schedules import At, scheduled_time
from shared.domain.tasks import SqsTarget, TaskSpec
from shared.services.scheduler_api import CreateSchedule, spec_of
from shared.services.tasks import TaskService
from tests.support.fakes import InMemoryTaskRepository
from tests.support.recordings import names, recording, source

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
ARN = "arn:aws:scheduler:us-east-1:123456789012:schedule/default/once"
QUEUE = "arn:aws:sqs:us-east-1:123456789012:orders"
REFUSED = names("scheduler-invalid-expression-")


def _params(expression: str, **extra: Any) -> dict[str, Any]:
    return {
        "Name": "once",
        "ScheduleExpression": expression,
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": {"Arn": QUEUE, "RoleArn": "arn:aws:iam::123456789012:role/r"},
        **extra,
    }


def test_every_refused_expression_aws_recorded_is_here() -> None:
    assert len(REFUSED) == 17


@pytest.mark.parametrize("name", REFUSED, ids=[source(r)["request"]["ScheduleExpression"] for r in REFUSED])
def test_a_refused_expression_answers_aws_s_code_and_message_then_sundial_s_reason(name: str) -> None:
    sent, recorded = source(name)["request"], recording(name)
    expression = sent["ScheduleExpression"]
    with pytest.raises(SchedulerApiError) as refused:
        spec_of(CreateSchedule.from_wire(_params(expression, FlexibleTimeWindow=sent["FlexibleTimeWindow"])), NOW, ARN)
    assert refused.value.code == recorded["Error"]["Code"]
    service_message = recorded["Error"]["Message"]  # "Invalid Schedule Expression cron(0 1 * * * *)."
    assert refused.value.message.startswith(service_message + " ")
    assert len(refused.value.message) > len(service_message) + 10  # and why, after it


def test_an_at_long_past_is_taken_as_aws_took_it_and_fires_once_at_once() -> None:
    recorded = source("scheduler-create-schedule-past-at")["request"]
    params = _params(recorded["ScheduleExpression"], FlexibleTimeWindow=recorded["FlexibleTimeWindow"])
    task = new_task(spec_of(CreateSchedule.from_wire(params), NOW, ARN), tenant="acme", now=NOW, shard=0)
    assert task.due_at == NOW  # at once: the one occurrence, as a native one-shot whose time has passed
    written = datetime(2022, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert scheduled_time(task.schedule, task.due_at) == written  # <aws.scheduler.scheduled-time>: the time written
    assert not task.recurring


def test_the_native_api_keeps_its_own_bound_on_an_at_already_past() -> None:
    long_ago = TaskSpec(At(NOW - timedelta(days=2)), (SqsTarget("https://sqs.us-east-1.amazonaws.com/1/q"),))
    with pytest.raises(ValidationFailed) as refused:
        new_task(long_ago, tenant="acme", now=NOW, shard=0)
    assert "more than 24 hours in the past" in refused.value.details[0].message
    recent = TaskSpec(At(NOW - timedelta(hours=23)), long_ago.targets)
    assert new_task(recent, tenant="acme", now=NOW, shard=0).due_at == NOW


def test_a_change_takes_the_bound_of_the_api_that_makes_it() -> None:
    tasks = TaskService(InMemoryTaskRepository(), bucket_shards=4, retention=timedelta(days=30), clock=lambda: NOW)
    spec = spec_of(CreateSchedule.from_wire(_params("at(2026-12-24T18:30:00)")), NOW, ARN)
    task = tasks.register("acme", spec)
    # UpdateSchedule to an at() two years back: taken (it gives the schedule's eventbridge member)
    past = spec_of(CreateSchedule.from_wire(_params("at(2024-12-24T18:30:00)")), NOW, ARN)
    patch = TaskPatch(schedule=past.schedule, targets=past.targets, eventbridge=past.eventbridge)
    assert tasks.update("acme", task.id, patch).due_at == NOW
    # the native API's PATCH of the same task to the same time: its own 24 hours
    with pytest.raises(ValidationFailed) as refused:
        tasks.update("acme", task.id, TaskPatch(schedule=past.schedule))
    assert "more than 24 hours in the past" in refused.value.details[0].message
