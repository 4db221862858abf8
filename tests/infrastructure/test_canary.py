"""The canary in the stack (infra/canary.py): registered by a custom resource whose function is also
its target, timed, and alarmed when a minute is late or missing; on with ``sundial:canary`` (off by
default: tests/infrastructure/test_observability_settings.py), its alarms with the stack's."""

from __future__ import annotations

import pytest

from infra import names
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
