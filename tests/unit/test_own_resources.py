"""Sundial's own resources (names starting with the deployment's prefix, in its account) are
never a task's target, nor an EventBridge-made schedule's target or dead-letter queue."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared.domain.errors import SchedulerApiError, ValidationFailed
from shared.domain.own import OwnResources
from shared.domain.patches import TaskPatch
from shared.domain.schedules import Every
from shared.domain.tasks import (
    EventBridgeSchedule,
    EventBridgeTarget,
    HttpTarget,
    JobTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
    StepFunctionsTarget,
    TaskSpec,
)
from shared.services.scheduler_api import CreateSchedule, spec_of
from shared.services.tasks import TaskService
from tests.support.fakes import InMemoryTaskRepository

pytestmark = pytest.mark.unit

OWN = OwnResources("Sundial-", "123456789012")
THEIRS = "arn:aws:lambda:us-east-1:123456789012:function:orders-close"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:"
QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/"


@pytest.mark.parametrize(
    ("target", "member"),
    [
        (
            LambdaTarget(FUNCTION + "Sundial-PipelineTrigger1A2B"),
            "lambda.function_arn",
        ),
        (LambdaTarget(FUNCTION + "Sundial-ApiHandler:live"), "lambda.function_arn"),
        (
            SqsTarget(QUEUE + "Sundial-PipelineQueuesdelay0ABC"),
            "sqs.queue_url",
        ),
        (SnsTarget("arn:aws:sns:us-east-1:123456789012:Sundial-MonitoringAlarmTopic9F"), "sns.topic_arn"),
        (
            StepFunctionsTarget("arn:aws:states:us-east-1:123456789012:stateMachine:Sundial-JobsStateMachine1A2B"),
            "stepfunctions.state_machine_arn",
        ),
        (
            JobTarget(
                json.dumps({"processor": {"lambda": {"function_arn": THEIRS.replace("orders-close", "Sundial-Jobs")}}})
            ),
            "job.processor.lambda.function_arn",
        ),
    ],
)
def test_a_target_named_with_the_deployments_prefix_in_its_account_is_refused(target, member):
    refused = OWN.refusal(target)
    assert refused is not None
    assert refused[0] == member


@pytest.mark.parametrize(
    "target",
    [
        LambdaTarget(THEIRS),
        LambdaTarget("arn:aws:lambda:us-east-1:210987654321:function:Sundial-Trigger"),  # another account's
        SqsTarget("https://sqs.us-east-1.amazonaws.com/123456789012/orders"),
        SnsTarget("arn:aws:sns:us-east-1:123456789012:SundialNews"),  # no dash: not the prefix
        HttpTarget("https://Sundial-example.com/hook"),
        EventBridgeTarget("default", "orders", "Closed"),
        JobTarget(json.dumps({"processor": {"http": {"url": "https://example.com/p"}}})),
    ],
)
def test_anything_else_is_not(target):
    assert OWN.refusal(target) is None


def test_without_a_prefix_nothing_is_refused():
    target = LambdaTarget("arn:aws:lambda:us-east-1:123456789012:function:Sundial-PipelineTrigger")
    assert OwnResources().refusal(target) is None


def test_check_names_every_refused_target_of_a_multicast():
    ours = SqsTarget("https://sqs.us-east-1.amazonaws.com/123456789012/Sundial-DeadLetters")
    with pytest.raises(ValidationFailed) as refused:
        OWN.check((LambdaTarget(THEIRS), ours, ours), multicast=True)
    assert [d.field for d in refused.value.details] == ["targets[1].sqs.queue_url", "targets[2].sqs.queue_url"]


def test_an_arn_of_ours_is_refused_and_says_why():
    assert OWN.arn_refusal("arn:aws:sqs:us-east-1:123456789012:Sundial-DeadLetters") is not None
    assert "Sundial-PipelineTrigger" in (OWN.arn_refusal(FUNCTION + "Sundial-PipelineTrigger") or "")
    assert OWN.arn_refusal("arn:aws:sqs:us-east-1:123456789012:orders-dlq") is None
    assert OWN.arn_refusal("arn:aws:sqs:us-east-1:210987654321:Sundial-DeadLetters") is None  # another account's


# An EventBridge-made schedule's dead-letter queue is written to by the trigger as a target is:
# one of Sundial's own queues there would let any tenant put messages into it.
SCHEDULE_ARN = "arn:aws:scheduler:us-east-1:123456789012:schedule/default/nightly"
DELAY_QUEUE = "arn:aws:sqs:us-east-1:123456789012:Sundial-PipelineQueuesdelay0ABC"
QUEUE_ARN_DLQ = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"


def _tasks() -> TaskService:
    now = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
    return TaskService(
        InMemoryTaskRepository(), bucket_shards=4, retention=timedelta(days=30), clock=lambda: now, own=OWN
    )


def test_a_task_whose_eventbridge_dead_letter_queue_is_ours_is_refused_registered_or_changed():
    theirs = SqsTarget(QUEUE + "orders")
    spec = TaskSpec(Every(60), (theirs,), eventbridge=EventBridgeSchedule(SCHEDULE_ARN, DELAY_QUEUE))
    tasks = _tasks()
    with pytest.raises(ValidationFailed) as refused:
        tasks.register("acme", spec)
    assert [d.field for d in refused.value.details] == ["eventbridge.dead_letter_arn"]
    kept = tasks.register("acme", replace(spec, eventbridge=EventBridgeSchedule(SCHEDULE_ARN, QUEUE_ARN_DLQ)))
    with pytest.raises(ValidationFailed) as changed:
        tasks.update("acme", kept.id, TaskPatch(eventbridge=EventBridgeSchedule(SCHEDULE_ARN, DELAY_QUEUE)))
    assert [d.field for d in changed.value.details] == ["eventbridge.dead_letter_arn"]


def _schedule(**target: Any) -> dict[str, Any]:
    return {
        "Name": "nightly",
        "ScheduleExpression": "rate(5 minutes)",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": {"Arn": "arn:aws:sqs:us-east-1:123456789012:orders", "RoleArn": "r", **target},
    }


@pytest.mark.parametrize(
    ("target", "member"),
    [
        (
            {"DeadLetterConfig": {"Arn": "arn:aws:sqs:us-east-1:123456789012:Sundial-DeadLetters"}},
            "Target.DeadLetterConfig.Arn",
        ),
        ({"DeadLetterConfig": {"Arn": DELAY_QUEUE}}, "Target.DeadLetterConfig.Arn"),
        ({"Arn": DELAY_QUEUE}, "Target.Arn"),
        ({"Arn": FUNCTION + "Sundial-PipelineTrigger1A2B"}, "Target.Arn"),
    ],
)
def test_an_eventbridge_schedule_naming_one_of_ours_is_a_validation_exception_naming_the_member(target, member):
    now = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
    with pytest.raises(SchedulerApiError) as refused:
        spec_of(CreateSchedule.from_wire(_schedule(**target)), now, SCHEDULE_ARN, OWN)
    assert refused.value.code == "ValidationException"
    assert refused.value.message.startswith(f"{member} ")
    assert "own resources" in refused.value.message
    assert spec_of(CreateSchedule.from_wire(_schedule(DeadLetterConfig={"Arn": QUEUE_ARN_DLQ})), now, SCHEDULE_ARN, OWN)
