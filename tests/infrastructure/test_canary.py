"""The canary in the stack (infra/canary.py): registered by a custom resource whose function is also
its target, timed, and alarmed when a minute is late or missing; on with ``sundial:canary`` (off by
default: tests/infrastructure/test_observability_settings.py), its alarms with the stack's."""

from __future__ import annotations

import pytest

from infra import names
from infra.canary import CANARY_PARTITIONS
from shared.domain.canary import LATE_MS
from tests.infrastructure.conftest import Built, logical_id

pytestmark = pytest.mark.infrastructure


def test_a_custom_resource_registers_the_canary_with_the_canary_function_as_its_target(alarmed: Built) -> None:
    stack = alarmed.stack
    assert stack.canary is not None
    function = logical_id(stack, stack.canary.function.function.node.default_child)
    [resource] = alarmed.resources("Custom::SundialCanary").values()
    assert resource["Properties"]["ServiceToken"] == {"Fn::GetAtt": [function, "Arn"]}
    assert resource["Properties"]["FunctionArn"] == {"Fn::GetAtt": [function, "Arn"]}
    assert function in resource["DependsOn"]
    handler = alarmed.resources("AWS::Lambda::Function")[function]["Properties"]["Handler"]
    assert handler == names.handler(names.CANARY)


def test_the_canary_alarms_on_a_late_minute_and_on_missing_minutes(alarmed: Built) -> None:
    alarms = {
        alarm["Properties"]["AlarmName"]: alarm["Properties"]
        for alarm in alarmed.resources("AWS::CloudWatch::Alarm").values()
    }
    late, missing = alarms["Sundial-canary-late"], alarms["Sundial-canary-missing"]
    for alarm in (late, missing):
        assert (alarm["Namespace"], alarm["MetricName"], alarm["Period"]) == ("Sundial", "CanaryLatenessMs", 60)
    assert (late["Statistic"], late["ComparisonOperator"], late["Threshold"]) == (
        "Maximum",
        "GreaterThanThreshold",
        LATE_MS,
    )
    assert late["EvaluationPeriods"] == 1
    assert (missing["Statistic"], missing["ComparisonOperator"], missing["Threshold"]) == (
        "SampleCount",
        "LessThanThreshold",
        1,
    )
    assert missing["TreatMissingData"] == "breaching"  # no canary at all is the alarm


def test_without_the_stacks_alarms_the_canary_fires_unalarmed(unalarmed: Built) -> None:
    """``sundial:canary`` without ``sundial:alarms`` or a topic: the task and its function, no alarm."""
    assert unalarmed.stack.canary is not None
    assert unalarmed.stack.canary.alarms == ()
    assert len(unalarmed.resources("Custom::SundialCanary")) == 1
    assert unalarmed.resources("AWS::CloudWatch::Alarm") == {}


def test_cloudformation_waits_at_most_five_minutes_for_the_custom_resources_answer(alarmed: Built) -> None:
    """``ServiceTimeout`` ("AWS::CloudFormation::CustomResource": 3,600 s when not set, which held
    a stack an hour when no answer came, and as long again for its rollback); the function answers
    within its own 30 s in every case (shared/adapters/custom_resource.py)."""
    [resource] = alarmed.resources("Custom::SundialCanary").values()
    timeout = int(resource["Properties"]["ServiceTimeout"])
    assert timeout == 300
    assert timeout <= 900


def test_lambda_does_not_retry_the_canary_functions_asynchronous_invocations(alarmed: Built) -> None:
    """CloudFormation invokes the service token asynchronously; Lambda would retry a failed
    invocation twice, each a request of its own ("How Lambda handles errors and retries with
    asynchronous invocation"). An invocation older than CloudFormation's wait is dropped."""
    stack = alarmed.stack
    assert stack.canary is not None
    function = logical_id(stack, stack.canary.function.function.node.default_child)
    [config] = [
        config["Properties"]
        for config in alarmed.resources("AWS::Lambda::EventInvokeConfig").values()
        if config["Properties"]["FunctionName"] == {"Ref": function}
    ]
    assert config["MaximumRetryAttempts"] == 0
    assert config["MaximumEventAgeInSeconds"] == 300
    [resource] = alarmed.resources("Custom::SundialCanary").values()
    config_id = next(
        key
        for key, value in alarmed.resources("AWS::Lambda::EventInvokeConfig").items()
        if value["Properties"]["FunctionName"] == {"Ref": function}
    )
    assert config_id in resource["DependsOn"]  # set before the first request


def test_the_canary_function_may_delete_only_its_resources_items(alarmed: Built) -> None:
    """DeleteItem on the ``CANARY#`` partitions alone (the item naming a resource's canary goes
    with the resource)."""
    stack = alarmed.stack
    assert stack.canary is not None
    policy = logical_id(stack, stack.canary.function.policy.node.default_child)
    statements = alarmed.resources("AWS::IAM::Policy")[policy]["Properties"]["PolicyDocument"]["Statement"]
    deletes = [statement for statement in statements if "dynamodb:DeleteItem" in str(statement["Action"])]
    assert len(deletes) == 1
    assert deletes[0]["Action"] == "dynamodb:DeleteItem"
    assert deletes[0]["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": CANARY_PARTITIONS}}
    assert CANARY_PARTITIONS == ["CANARY#*"]
