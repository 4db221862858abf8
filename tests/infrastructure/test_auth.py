"""API keys: no admin key secret, the authorizer function and the REST API's REQUEST authorizer
(its role is checked with the others in test_iam.py)."""

from __future__ import annotations

from typing import Any

import pytest

from infra import names
from infra.auth import RESULTS_CACHE_TTL
from infra.settings import DeploymentSettings
from shared import observability
from shared.settings.environment import env_name
from tests.infrastructure.conftest import Built, Synthesized, logical_id, settings_environment

pytestmark = pytest.mark.infrastructure


def _function(built: Synthesized | Built) -> tuple[str, dict[str, Any]]:
    key = logical_id(built.stack, built.stack.keys.function.function.node.default_child)
    return key, built.resources("AWS::Lambda::Function")[key]["Properties"]


def test_one_request_authorizer_reads_the_authorization_header_and_caches_a_minute(
    synthesized: Synthesized,
) -> None:
    stack = synthesized.stack
    function_id, _ = _function(synthesized)
    [(authorizer_id, authorizer)] = synthesized.resources("AWS::ApiGateway::Authorizer").items()
    assert authorizer_id == logical_id(stack, stack.keys.authorizer.node.default_child)
    properties = authorizer["Properties"]
    assert properties["Type"] == "REQUEST"
    assert properties["IdentitySource"] == "method.request.header.Authorization"
    # the bound on how long a revoked key keeps working (docs/deploy.md, docs/tenancy.md)
    assert properties["AuthorizerResultTtlInSeconds"] == RESULTS_CACHE_TTL.to_seconds() == 60
    assert properties["RestApiId"] == {"Ref": logical_id(stack, stack.api.rest_api.node.default_child)}
    assert {"Fn::GetAtt": [function_id, "Arn"]} in properties["AuthorizerUri"]["Fn::Join"][1]
    assert "AuthorizerCredentials" not in properties, "API Gateway invokes it by the function's resource policy"


def test_only_this_apis_authorizer_may_invoke_the_authorizer_function(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    function_id, _ = _function(synthesized)
    authorizer_id = logical_id(stack, stack.keys.authorizer.node.default_child)
    rest_api_id = logical_id(stack, stack.api.rest_api.node.default_child)
    [permission] = [
        permission["Properties"]
        for permission in synthesized.resources("AWS::Lambda::Permission").values()
        if permission["Properties"]["FunctionName"] == {"Fn::GetAtt": [function_id, "Arn"]}
    ]
    assert permission["Principal"] == "apigateway.amazonaws.com"
    assert permission["SourceArn"]["Fn::Join"][1][-3:] == [
        {"Ref": rest_api_id},
        "/authorizers/",
        {"Ref": authorizer_id},
    ]


def test_the_authorizer_function_runs_small_with_the_table(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    _, properties = _function(synthesized)
    assert properties["Handler"] == names.AUTHORIZER_HANDLER == "functions.authorizer.handler.handler"
    assert properties["MemorySize"] == 256
    assert properties["Timeout"] <= 5
    assert properties["TracingConfig"] == {"Mode": "PassThrough"}  # sundial:tracing's default
    assert properties["Environment"]["Variables"] == {
        **settings_environment(DeploymentSettings()),
        env_name("table_name"): {"Ref": logical_id(stack, stack.storage.table.node.default_child)},
        "POWERTOOLS_SERVICE_NAME": observability.SERVICE,
        "POWERTOOLS_METRICS_NAMESPACE": observability.NAMESPACE,
    }
    log_group_id = properties["LoggingConfig"]["LogGroup"]["Ref"]
    log_group = synthesized.resources("AWS::Logs::LogGroup")[log_group_id]
    assert log_group["Properties"]["RetentionInDays"] == DeploymentSettings().log_retention_days


def test_the_admin_key_is_no_resource_of_the_stack(synthesized: Synthesized, alternate: Built) -> None:
    """Its hash is an item of the task table (``sundial admin-key create``): no secret ($0.40 a
    month), no output naming one, and the table's output is what the command line reads."""
    for built in (synthesized, alternate):
        assert not built.resources("AWS::SecretsManager::Secret")
    assert not synthesized.template.find_outputs("AdminKeySecretArn")
    table = synthesized.template.find_outputs(names.OUTPUT_TABLE_NAME)[names.OUTPUT_TABLE_NAME]
    assert table["Value"] == {"Ref": logical_id(synthesized.stack, synthesized.stack.storage.table.node.default_child)}
    assert "admin-key" in table["Description"]


def test_the_command_line_finds_the_table_by_the_stacks_names() -> None:
    from sundial_cli.commands import admin_key

    assert (admin_key.STACK_NAME, admin_key.OUTPUT_TABLE_NAME) == (names.STACK_NAME, names.OUTPUT_TABLE_NAME)
    assert RESULTS_CACHE_TTL.to_seconds() == admin_key.CACHE_SECONDS
