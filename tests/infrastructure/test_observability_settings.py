"""What a deployment pays for while idle, by setting: at the defaults no dashboard, no alarms, no
canary and no trace Lambda starts by itself (PassThrough); ``sundial:dashboard``,
``sundial:alarms`` (or an alarm topic), ``sundial:canary`` and ``sundial:tracing`` turn each on
(docs/deploy.md, sections 3 and 11)."""

from __future__ import annotations

from typing import Any

import pytest

from infra import names
from infra.function import XRAY_WRITE_ACTIONS
from infra.settings import DeploymentSettings
from tests.infrastructure.conftest import Built, Synthesized

pytestmark = pytest.mark.infrastructure

Deployment = Synthesized | Built


def _sundial_functions(built: Deployment) -> dict[str, dict[str, Any]]:
    """Sundial's own functions (a throw-away stack also has CDK's auto-delete provider)."""
    return {
        key: function["Properties"]
        for key, function in built.resources("AWS::Lambda::Function").items()
        if function["Properties"].get("Handler", "").startswith("functions.")
    }


def test_the_defaults_are_passthrough_tracing_and_no_dashboard_alarms_or_canary() -> None:
    defaults = DeploymentSettings()
    assert defaults.tracing == "passthrough"
    assert (defaults.dashboard, defaults.alarms, defaults.canary) == (False, False, False)
    assert not defaults.alarmed


def test_alarms_come_with_the_setting_or_with_a_topic() -> None:
    assert DeploymentSettings(alarms=True).alarmed
    assert DeploymentSettings(alarm_topic_arn="arn:aws:sns:us-east-1:123456789012:ops").alarmed


# --- the default template: nothing that costs while idle ---------------------------------------


def test_the_default_stack_has_no_dashboard_and_no_dashboard_output(synthesized: Synthesized) -> None:
    assert synthesized.resources("AWS::CloudWatch::Dashboard") == {}
    assert names.OUTPUT_DASHBOARD_NAME not in synthesized.template.find_outputs("*")
    assert synthesized.stack.monitoring.dashboard is None


def test_the_default_stack_has_no_alarm(synthesized: Synthesized) -> None:
    assert synthesized.resources("AWS::CloudWatch::Alarm") == {}
    assert synthesized.stack.monitoring.alarms == []


def test_the_default_stack_has_no_canary(synthesized: Synthesized) -> None:
    assert synthesized.stack.canary is None
    assert synthesized.resources("Custom::SundialCanary") == {}
    handlers = {function["Handler"] for function in _sundial_functions(synthesized).values()}
    assert names.handler(names.CANARY) not in handlers


def test_every_function_of_the_default_stack_traces_passthrough(synthesized: Synthesized) -> None:
    """No function asks X-Ray for a decision itself: the tick, woken by EventBridge every minute, and
    the scanners it wakes are never traced; an API request that API Gateway's stage sampled is."""
    functions = synthesized.resources("AWS::Lambda::Function")
    assert len(functions) == 9  # the scheduler's function URL's among them
    for key, function in functions.items():
        assert function["Properties"]["TracingConfig"] == {"Mode": "PassThrough"}, key
    [stage] = synthesized.resources("AWS::ApiGateway::Stage").values()
    assert stage["Properties"]["TracingEnabled"] is True


def test_every_function_keeps_its_x_ray_write_permissions_in_passthrough(synthesized: Synthesized) -> None:
    """PassThrough still writes the traces of the invocations its upstream sampled."""
    policies = synthesized.resources("AWS::IAM::Policy")
    for key, function in _sundial_functions(synthesized).items():
        role = function["Role"]["Fn::GetAtt"][0]
        writes = [
            statement
            for policy in policies.values()
            if {"Ref": role} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
            if set(statement["Action"]) == set(XRAY_WRITE_ACTIONS)
        ]
        assert [(write["Effect"], write["Resource"]) for write in writes] == [("Allow", "*")], key


def test_the_state_machine_keeps_its_tracing(synthesized: Synthesized) -> None:
    """It only runs when a job does: its traces cost nothing while idle."""
    [machine] = synthesized.resources("AWS::StepFunctions::StateMachine").values()
    assert machine["Properties"]["TracingConfiguration"] == {"Enabled": True}


# --- each setting turns its part on ------------------------------------------------------------


def test_active_tracing_puts_every_function_on_active(alternate: Built) -> None:
    assert alternate.stack.settings.tracing == "active"
    functions = _sundial_functions(alternate)
    assert len(functions) == 10  # the canary's and the scheduler URL's too
    for key, function in functions.items():
        assert function["TracingConfig"] == {"Mode": "Active"}, key


@pytest.mark.parametrize(("fixture", "alarms"), [("alternate", 12), ("unalarmed", 0)])
def test_the_dashboard_setting_makes_the_dashboard_and_its_output(
    request: pytest.FixtureRequest, fixture: str, alarms: int
) -> None:
    built: Built = request.getfixturevalue(fixture)
    assert built.stack.settings.dashboard
    [dashboard] = built.resources("AWS::CloudWatch::Dashboard").values()
    assert dashboard["Properties"]["DashboardName"] == names.STACK_NAME
    output = built.template.find_outputs(names.OUTPUT_DASHBOARD_NAME)[names.OUTPUT_DASHBOARD_NAME]
    assert output["Value"] == {"Ref": next(iter(built.resources("AWS::CloudWatch::Dashboard")))}
    assert len(built.resources("AWS::CloudWatch::Alarm")) == alarms


def test_the_alarms_setting_makes_the_alarms_without_a_dashboard(alarmed: Built) -> None:
    assert alarmed.stack.settings.alarms
    assert not alarmed.stack.settings.alarm_topic_arn
    assert len(alarmed.resources("AWS::CloudWatch::Alarm")) == 12
    assert alarmed.resources("AWS::CloudWatch::Dashboard") == {}
    for function in _sundial_functions(alarmed).values():
        assert function["TracingConfig"] == {"Mode": "PassThrough"}


@pytest.mark.parametrize("fixture", ["alternate", "alarmed", "unalarmed"])
def test_the_canary_setting_makes_the_canary(request: pytest.FixtureRequest, fixture: str) -> None:
    built: Built = request.getfixturevalue(fixture)
    assert built.stack.settings.canary
    assert built.stack.canary is not None
    assert len(built.resources("Custom::SundialCanary")) == 1
