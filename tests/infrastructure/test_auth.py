"""API keys: the admin key secret, the authorizer function and the REST API's REQUEST authorizer
(its role is checked with the others in test_iam.py)."""

from __future__ import annotations

from typing import Any

import pytest

from infra import names
from infra.auth import RESULTS_CACHE_TTL
from infra.settings import DeploymentSettings
from shared import observability
from shared.settings import env_name
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


def test_the_authorizer_function_runs_small_with_the_table_and_the_admin_key(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    _, properties = _function(synthesized)
    assert properties["Handler"] == names.AUTHORIZER_HANDLER == "functions.authorizer.handler.handler"
    assert properties["MemorySize"] == 256
    assert properties["Timeout"] <= 5
    assert properties["TracingConfig"] == {"Mode": "PassThrough"}  # sundial:tracing's default
    assert properties["Environment"]["Variables"] == {
        **settings_environment(DeploymentSettings()),
        env_name("table_name"): {"Ref": logical_id(stack, stack.storage.table.node.default_child)},
        env_name("admin_key_secret_arn"): {"Ref": logical_id(stack, stack.keys.admin_key.node.default_child)},
        "POWERTOOLS_SERVICE_NAME": observability.SERVICE,
        "POWERTOOLS_METRICS_NAMESPACE": observability.NAMESPACE,
    }
    log_group_id = properties["LoggingConfig"]["LogGroup"]["Ref"]
    log_group = synthesized.resources("AWS::Logs::LogGroup")[log_group_id]
    assert log_group["Properties"]["RetentionInDays"] == DeploymentSettings().log_retention_days


def test_the_admin_key_is_a_generated_secret_named_in_an_output(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    [(secret_id, secret)] = synthesized.resources("AWS::SecretsManager::Secret").items()
    assert secret_id == logical_id(stack, stack.keys.admin_key.node.default_child)
    generated = secret["Properties"]["GenerateSecretString"]
    # pasted into a header as it is: letters and digits only, and long
    assert generated["ExcludePunctuation"] is True
    assert generated.get("IncludeSpace", False) is False
    assert generated["PasswordLength"] >= 48
    assert "SecretString" not in secret["Properties"], "the value is never in the template"
    assert "GenerateStringKey" not in generated, "the secret string is the key itself, not JSON"
    # kept when the stack is deleted, like the tables (removalPolicy "retain", the default)
    assert secret["DeletionPolicy"] == secret["UpdateReplacePolicy"] == "Retain"
    output = synthesized.template.find_outputs(names.OUTPUT_ADMIN_KEY_SECRET_ARN)[names.OUTPUT_ADMIN_KEY_SECRET_ARN]
    assert output["Value"] == {"Ref": secret_id}


def test_a_throwaway_stack_deletes_the_admin_key_with_it(alternate: Built) -> None:
    (secret,) = alternate.resources("AWS::SecretsManager::Secret").values()
    assert secret["DeletionPolicy"] == "Delete"
