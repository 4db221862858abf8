"""Alarms and the dashboard watch the metrics the pipeline really publishes; the stack has its alarms
with ``sundial:alarms`` or an alarm topic, its dashboard with ``sundial:dashboard``, neither by
default (tests/infrastructure/test_observability_settings.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from functions.trigger.handler import observe
from infra import names
from infra.settings import DeploymentSettings
from shared import observability
from shared.domain.claims import Handled, Result
from shared.domain.firing import Staged
from tests.infrastructure.conftest import ALTERNATE_ALARM_TOPIC, Built, Synthesized, logical_id

Deployment = Synthesized | Built

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
            observe(Handled(Staged("01TASK", 1_000, "01RUN"), result, lateness_ms=12))
        yield metrics.serialize_metric_set()
    finally:
        metrics.clear_metrics()


def _alarm(built: Deployment, name: str) -> dict[str, Any]:
    [alarm] = [
        alarm["Properties"]
        for alarm in built.resources("AWS::CloudWatch::Alarm").values()
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


def test_dead_letters_alarm_on_the_first_message(alarmed: Built) -> None:
    stack = alarmed.stack
    alarm = _alarm(alarmed, "dead-letters")
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


def test_the_job_ends_dead_letters_alarm_on_the_first_message(alarmed: Built) -> None:
    """The execution-status rule's undelivered events (infra/job_runner.py), as the pipeline's dead
    letters are alarmed."""
    stack = alarmed.stack
    alarm = _alarm(alarmed, "job-ends-dead-letters")
    stat = _metric_stat(alarm)
    queue = logical_id(stack, stack.jobs.execution_ends_dead_letters.node.default_child)
    assert stat["Metric"] == {
        "Namespace": "AWS/SQS",
        "MetricName": "ApproximateNumberOfMessagesVisible",
        "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}],
    }
    assert (stat["Stat"], stat["Period"]) == ("Maximum", 60)
    assert (alarm["ComparisonOperator"], alarm["Threshold"], alarm["EvaluationPeriods"]) == (
        "GreaterThanThreshold",
        0,
        1,
    )
    assert alarm["TreatMissingData"] == "notBreaching"


def test_lateness_alarms_on_the_p99_over_five_minutes(alarmed: Built) -> None:
    alarm = _alarm(alarmed, "lateness-p99")
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
def test_pipeline_function_errors_alarm(alarmed: Built, function: str) -> None:
    stack = alarmed.stack
    alarm = _alarm(alarmed, f"{function}-errors")
    function_id = logical_id(stack, stack.pipeline.functions[function].function.node.default_child)
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("AWS/Lambda", "Errors", "Sum")
    assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)


def test_api_5xx_alarm_on_the_stage(alarmed: Built) -> None:
    """A failing API function or an authorizer that cannot check keys (API Gateway's 500s)."""
    stack = alarmed.stack
    alarm = _alarm(alarmed, "api-5xx")
    [rest_api] = alarmed.resources("AWS::ApiGateway::RestApi").values()
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


def test_without_a_topic_alarms_notify_nobody(alarmed: Built) -> None:
    alarms = alarmed.resources("AWS::CloudWatch::Alarm").values()
    # dead letters, the job ends' dead letters, stranded messages, lateness, the API's 5xx, one per
    # pipeline function and the canary's two (docs/deploy.md says 12)
    assert len(alarms) == 5 + len(alarmed.stack.pipeline.functions) + 2 == 12
    for alarm in alarms:
        assert "AlarmActions" not in alarm["Properties"]
        assert "OKActions" not in alarm["Properties"]


def test_with_a_topic_every_alarm_notifies_it_and_says_when_it_recovers(alternate: Built) -> None:
    """The topic alone creates the alarms (``sundial:alarms`` is left false there)."""
    assert not alternate.stack.settings.alarms
    alarms = alternate.resources("AWS::CloudWatch::Alarm").values()
    assert len(alarms) == 12
    for alarm in alarms:
        assert alarm["Properties"]["AlarmActions"] == [ALTERNATE_ALARM_TOPIC]
        assert alarm["Properties"]["OKActions"] == [ALTERNATE_ALARM_TOPIC]


def _dashboard_widgets(built: Deployment) -> list[dict[str, Any]]:
    """The dashboard's widgets, its body's tokens (references to the stack's resources) put back
    as JSON of their CloudFormation form."""
    [dashboard] = built.resources("AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    text = "".join(part if isinstance(part, str) else json.dumps(json.dumps(part))[1:-1] for part in parts)
    widgets: list[dict[str, Any]] = json.loads(text)["widgets"]
    return widgets


def _dashboard_body(built: Deployment) -> str:
    return json.dumps(_dashboard_widgets(built))


@pytest.mark.parametrize("fixture", ["alternate", "unalarmed"])
def test_the_dashboard_shows_fires_lateness_and_dead_letters(request: pytest.FixtureRequest, fixture: str) -> None:
    body = _dashboard_body(request.getfixturevalue(fixture))
    for metric in (observability.runs_metric(r) for r in FIRED):
        assert f'"{observability.NAMESPACE}", "{metric}", "service", "{observability.SERVICE}"' in body, metric
    assert f'"{observability.LATENESS_METRIC}"' in body
    assert '"stat": "p50"' in body
    assert '"stat": "p99"' in body
    assert '"ApproximateNumberOfMessagesVisible"' in body


def test_the_dashboard_shows_the_alarms_states_when_there_are_alarms(alternate: Built) -> None:
    widgets = _dashboard_widgets(alternate)
    [status] = [widget for widget in widgets if widget["type"] == "alarm"]
    assert len(status["properties"]["alarms"]) == 12
    [lateness] = [widget for widget in widgets if widget["properties"].get("title") == "Lateness (ms)"]
    assert lateness["properties"]["annotations"]["horizontal"][0]["value"] == DeploymentSettings().lateness_alarm_ms


def test_without_alarms_the_dashboard_has_no_alarm_widget_nor_threshold(unalarmed: Built) -> None:
    """An alarm status widget needs at least one alarm; the lateness graph marks no threshold that no
    alarm watches."""
    assert unalarmed.resources("AWS::CloudWatch::Alarm") == {}
    widgets = _dashboard_widgets(unalarmed)
    assert [widget["type"] for widget in widgets] == ["metric", "metric", "metric"]
    assert all("annotations" not in widget["properties"] for widget in widgets)
    # the dead letters' graph takes the row the alarms' widget would have shared
    assert [widget["width"] for widget in widgets] == [12, 12, 24]


def test_stranded_messages_are_an_alarm(alarmed: Built) -> None:
    """A message SQS moves to the stranded queue is not counted as sent there: the alarm counts the
    receives of the recovering trigger's drain, which the tick invokes when the queue holds
    messages (the tick's look, GetQueueAttributes, receives nothing), and says so."""
    alarm = _alarm(alarmed, "stranded")
    assert "the tick invokes when they wait, received them" in alarm["AlarmDescription"]
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == (
        "AWS/SQS",
        "NumberOfMessagesReceived",
        "Sum",
    )
    [dimension] = alarm["Dimensions"]
    assert dimension["Name"] == "QueueName"
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)
