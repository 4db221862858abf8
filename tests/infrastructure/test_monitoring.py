"""Alarms and the dashboard watch the metrics the pipeline really publishes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from functions.trigger.handler import observe
from infra import names
from infra.settings import DeploymentSettings
from shared import observability
from shared.domain.claims import Fired, Result
from shared.domain.firing import Staged
from tests.infrastructure.conftest import ALTERNATE_ALARM_TOPIC, Built, Synthesized, logical_id

pytestmark = pytest.mark.infrastructure

FIRED = (Result.SUCCEEDED, Result.RETRYING, Result.DEAD_LETTERED, Result.FAILED)
"""The results the dashboard counts (each a ``Runs_<result>`` metric)."""


@pytest.fixture
def emitted() -> Iterator[dict[str, Any]]:
    """The EMF document the trigger's handler writes for one occurrence of every result."""
    metrics = observability.metrics
    metrics.clear_metrics()
    try:
        for result in Result:
            observe(Fired(Staged("01TASK", 1_000, "01RUN"), result, lateness_ms=12))
        yield metrics.serialize_metric_set()
    finally:
        metrics.clear_metrics()


def _alarm(synthesized: Synthesized, name: str) -> dict[str, Any]:
    [alarm] = [
        alarm["Properties"]
        for alarm in synthesized.resources("AWS::CloudWatch::Alarm").values()
        if alarm["Properties"]["AlarmName"] == f"{names.STACK_NAME}-{name}"
    ]
    return alarm


def _metric_stat(alarm: dict[str, Any]) -> dict[str, Any]:
    [query] = alarm["Metrics"]
    return query["MetricStat"]


def test_the_trigger_publishes_what_the_alarms_and_the_dashboard_read(emitted: dict[str, Any]) -> None:
    [directive] = emitted["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == names.POWERTOOLS_METRICS_NAMESPACE
    assert directive["Dimensions"] == [["service"]]
    assert emitted["service"] == names.POWERTOOLS_SERVICE_NAME
    published = {metric["Name"] for metric in directive["Metrics"]}
    assert {observability.LATENESS_METRIC, *(observability.runs_metric(r) for r in FIRED)} <= published


def test_dead_letters_alarm_on_the_first_message(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    alarm = _alarm(synthesized, "dead-letters")
    stat = _metric_stat(alarm)
    assert stat["Metric"] == {
        "Namespace": "AWS/SQS",
        "MetricName": "ApproximateNumberOfMessagesVisible",
        "Dimensions": [
            {
                "Name": "QueueName",
                "Value": {
                    "Fn::GetAtt": [
                        logical_id(stack, stack.pipeline.queues.dead_letters.node.default_child),
                        "QueueName",
                    ]
                },
            }
        ],
    }
    assert stat["Stat"] == "Maximum"
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)
    assert alarm["TreatMissingData"] == "notBreaching"


def test_lateness_alarms_on_the_p99_over_five_minutes(synthesized: Synthesized) -> None:
    alarm = _alarm(synthesized, "lateness-p99")
    stat = _metric_stat(alarm)
    assert stat["Metric"] == {
        "Namespace": observability.NAMESPACE,
        "MetricName": observability.LATENESS_METRIC,
        "Dimensions": [{"Name": "service", "Value": observability.SERVICE}],
    }
    assert (stat["Stat"], stat["Period"]) == ("p99", 300)
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 1000)
    assert DeploymentSettings().lateness_alarm_ms == 1000


@pytest.mark.parametrize(
    "function", [names.TICK, names.SCANNER, names.TRIGGER, names.HIGH_PRIORITY_TRIGGER, names.RECOVER]
)
def test_pipeline_function_errors_alarm(synthesized: Synthesized, function: str) -> None:
    stack = synthesized.stack
    alarm = _alarm(synthesized, f"{function}-errors")
    function_id = logical_id(stack, stack.pipeline.functions[function].function.node.default_child)
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("AWS/Lambda", "Errors", "Sum")
    assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)


def test_api_5xx_alarm_on_the_stage(synthesized: Synthesized) -> None:
    """A failing API function or an authorizer that cannot check keys (API Gateway's 500s)."""
    stack = synthesized.stack
    alarm = _alarm(synthesized, "api-5xx")
    [rest_api] = synthesized.resources("AWS::ApiGateway::RestApi").values()
    stage_id = logical_id(stack, stack.api.rest_api.deployment_stage.node.default_child)
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("AWS/ApiGateway", "5XXError", "Sum")
    # a REST API's metrics are named by the API's name and the stage's
    assert alarm["Dimensions"] == [
        {"Name": "ApiName", "Value": rest_api["Properties"]["Name"]},
        {"Name": "Stage", "Value": {"Ref": stage_id}},
    ]
    assert alarm["Period"] == 300
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)
    assert alarm["TreatMissingData"] == "notBreaching"


def test_without_a_topic_alarms_notify_nobody(synthesized: Synthesized) -> None:
    alarms = synthesized.resources("AWS::CloudWatch::Alarm").values()
    # dead letters, stranded messages, lateness, the API's 5xx, one per pipeline function and the
    # canary's two (docs/deploy.md says 11)
    assert len(alarms) == 4 + len(synthesized.stack.pipeline.functions) + 2 == 11
    for alarm in alarms:
        assert "AlarmActions" not in alarm["Properties"]
        assert "OKActions" not in alarm["Properties"]


def test_with_a_topic_every_alarm_notifies_it_and_says_when_it_recovers(alternate: Built) -> None:
    alarms = alternate.resources("AWS::CloudWatch::Alarm").values()
    assert len(alarms) == 11
    for alarm in alarms:
        assert alarm["Properties"]["AlarmActions"] == [ALTERNATE_ALARM_TOPIC]
        assert alarm["Properties"]["OKActions"] == [ALTERNATE_ALARM_TOPIC]


def _dashboard_body(synthesized: Synthesized) -> str:
    [dashboard] = synthesized.resources("AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    return "".join(part if isinstance(part, str) else json.dumps(part) for part in parts)


def test_the_dashboard_shows_fires_lateness_and_dead_letters(synthesized: Synthesized) -> None:
    body = _dashboard_body(synthesized)
    for metric in (observability.runs_metric(r) for r in FIRED):
        assert f'"{observability.NAMESPACE}","{metric}","service","{observability.SERVICE}"' in body, metric
    assert f'"{observability.LATENESS_METRIC}"' in body
    assert '"stat":"p50"' in body
    assert '"stat":"p99"' in body
    assert '"ApproximateNumberOfMessagesVisible"' in body


def test_stranded_messages_are_an_alarm(synthesized: Synthesized) -> None:
    """A message SQS moves to the stranded queue is not counted as sent there: the alarm counts the
    recovering trigger's receives."""
    alarm = _alarm(synthesized, "stranded")
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == (
        "AWS/SQS",
        "NumberOfMessagesReceived",
        "Sum",
    )
    [dimension] = alarm["Dimensions"]
    assert dimension["Name"] == "QueueName"
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)
