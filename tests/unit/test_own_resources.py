"""Sundial's own resources (names starting with the deployment's prefix, in its account) are
never a task's target."""

from __future__ import annotations

import json

import pytest

from shared.domain.errors import ValidationFailed
from shared.domain.own import OwnResources
from shared.domain.tasks import EventBridgeTarget, HttpTarget, JobTarget, LambdaTarget, SnsTarget, SqsTarget

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
