"""The EventBridge Scheduler API from a Lambda function URL (``sundial:schedulerFunctionUrl``,
infra/api.py ``SchedulerFunctionUrl``): on by default, a function of its own with the API
function's code, only what the scheduler routes need of its role and environment, a URL of auth type
NONE (the function verifies SigV4 itself) and the ``SchedulerFunctionUrl`` output; none when
``sundial:schedulerFunctionUrl`` is false."""

from __future__ import annotations

from typing import Any

import pytest

from infra import names
from shared.settings.environment import env_name
from tests.infrastructure.conftest import Built, Synthesized, logical_id

pytestmark = pytest.mark.infrastructure

HANDLER = "functions.scheduler.handler.handler"
SCHEDULER_ENV = ("table_name", "delay_queue_urls", "high_priority_queue_url", "own_prefix", "account_id")


def _function(built: Synthesized, construct: Any) -> dict[str, Any]:
    return built.resources("AWS::Lambda::Function")[logical_id(built.stack, construct.node.default_child)]["Properties"]


def _statements(built: Synthesized, policy: Any) -> list[dict[str, Any]]:
    document = built.resources("AWS::IAM::Policy")[logical_id(built.stack, policy.node.default_child)]
    statements: list[dict[str, Any]] = document["Properties"]["PolicyDocument"]["Statement"]
    return statements


def test_on_by_default_and_none_when_turned_off(synthesized: Synthesized, unalarmed: Built) -> None:
    assert synthesized.stack.scheduler_url is not None
    assert len(synthesized.resources("AWS::Lambda::Url")) == 1
    assert names.OUTPUT_SCHEDULER_FUNCTION_URL in synthesized.template.to_json()["Outputs"]
    assert unalarmed.stack.scheduler_url is None  # sundial:schedulerFunctionUrl false
    assert unalarmed.resources("AWS::Lambda::Url") == {}
    assert names.OUTPUT_SCHEDULER_FUNCTION_URL not in unalarmed.template.to_json()["Outputs"]


def test_a_function_of_its_own_with_the_api_functions_code(everything: Synthesized) -> None:
    stack = everything.stack
    assert stack.scheduler_url is not None
    url = _function(everything, stack.scheduler_url.handler.function)
    api = _function(everything, stack.api.handler.function)
    assert url["Handler"] == names.SCHEDULER_URL_HANDLER == HANDLER
    assert api["Handler"] == names.API_HANDLER  # the API function keeps its own: its routes need the authorizer
    for member in ("Code", "Layers", "Runtime", "Architectures", "MemorySize", "Timeout", "TracingConfig"):
        assert url[member] == api[member], member


def test_its_environment_is_the_api_functions_for_the_scheduler_routes(everything: Synthesized) -> None:
    stack = everything.stack
    assert stack.scheduler_url is not None
    url = _function(everything, stack.scheduler_url.handler.function)["Environment"]["Variables"]
    api = _function(everything, stack.api.handler.function)["Environment"]["Variables"]
    for field in SCHEDULER_ENV:
        assert url[env_name(field)] == api[env_name(field)], field
    assert url[env_name("signing_root_parameter")] == api[env_name("signing_root_parameter")]
    assert set(url) <= set(api)  # nothing the API function does not have
    for unused in ("jobs_bucket", "job_state_machine_arn", "job_function", "idempotency_table"):
        assert env_name(unused) not in url


def test_its_role_may_do_what_the_scheduler_routes_do_and_no_more_than_the_api_function(
    everything: Synthesized,
) -> None:
    stack = everything.stack
    assert stack.scheduler_url is not None
    url = _statements(everything, stack.scheduler_url.handler.policy)
    api = _statements(everything, stack.api.handler.policy)
    own_logs = url[0]
    assert own_logs["Action"] == ["logs:CreateLogStream", "logs:PutLogEvents"]
    allowed = _grants(api[1:])
    for statement in url[1:]:
        assert _grants([statement]) <= allowed, statement  # each action on each resource, the API's too
    actions = {action for statement in url for action in _list(statement["Action"])}
    assert {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "sqs:SendMessage", "ssm:GetParameter"} <= actions
    assert not {"states:StartExecution", "s3:PutObject", "s3:GetObject", "lambda:InvokeFunction"} & actions


def test_the_url_is_public_and_the_function_verifies_every_request(everything: Synthesized) -> None:
    """Auth type NONE with the resource policy Lambda asks of such a URL: anyone may call the URL,
    and (since October 2025) invoke the function through it ("Control access to Lambda function
    URLs"); nothing else may invoke it."""
    stack = everything.stack
    assert stack.scheduler_url is not None
    function = logical_id(stack, stack.scheduler_url.handler.function.node.default_child)
    [url] = everything.resources("AWS::Lambda::Url").values()
    assert url["Properties"] == {"AuthType": "NONE", "TargetFunctionArn": {"Fn::GetAtt": [function, "Arn"]}}
    permissions = sorted(
        (permission["Properties"] for permission in everything.resources("AWS::Lambda::Permission").values()),
        key=lambda permission: permission["Action"],
    )
    mine = [p for p in permissions if p["FunctionName"] == {"Fn::GetAtt": [function, "Arn"]}]
    assert mine == [
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Fn::GetAtt": [function, "Arn"]},
            "InvokedViaFunctionUrl": True,
            "Principal": "*",
        },
        {
            "Action": "lambda:InvokeFunctionUrl",
            "FunctionName": {"Fn::GetAtt": [function, "Arn"]},
            "FunctionUrlAuthType": "NONE",
            "Principal": "*",
        },
    ]


def test_the_stack_outputs_the_url(everything: Synthesized) -> None:
    stack = everything.stack
    assert stack.scheduler_url is not None
    url = logical_id(stack, stack.scheduler_url.function_url.node.default_child)
    output = everything.template.find_outputs(names.OUTPUT_SCHEDULER_FUNCTION_URL)[names.OUTPUT_SCHEDULER_FUNCTION_URL]
    assert output["Value"] == {"Fn::GetAtt": [url, "FunctionUrl"]}
    assert "EventBridge Scheduler" in output["Description"]


def _grants(statements: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(effect, action, resource) of each statement, its lists spread (the resource as JSON text),
    conditions along: what a role may do, however its statements group it."""
    import json

    return {
        (statement["Effect"], action, json.dumps([resource, statement.get("Condition")], sort_keys=True))
        for statement in statements
        for action in _list(statement["Action"])
        for resource in _list(statement["Resource"])
    }


def _list(value: Any) -> list[str]:
    return value if isinstance(value, list) else [value]
