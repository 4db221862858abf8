"""The REST API and its function: IAM-authorized proxy under /v1, wired to the table."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra import names
from infra.bundling import RUNTIME
from infra.settings import DeploymentSettings
from shared import observability
from shared.settings import env_name
from tests.infrastructure.conftest import Synthesized, logical_id, settings_environment

pytestmark = pytest.mark.infrastructure


@pytest.fixture(scope="module")
def api_function(synthesized: Synthesized) -> dict[str, Any]:
    functions = synthesized.resources("AWS::Lambda::Function")
    key = logical_id(synthesized.stack, synthesized.stack.api.handler.function.node.default_child)
    return functions[key]


def test_every_method_requires_iam_authorization(synthesized: Synthesized) -> None:
    methods = synthesized.resources("AWS::ApiGateway::Method")
    assert methods, "the API has methods"
    assert {method["Properties"]["AuthorizationType"] for method in methods.values()} == {"AWS_IAM"}


def test_every_path_under_v1_is_proxied_to_the_api_function(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    resources = synthesized.resources("AWS::ApiGateway::Resource")
    path_parts = {key: resource["Properties"]["PathPart"] for key, resource in resources.items()}
    assert sorted(path_parts.values()) == ["v1", "{proxy+}"]
    proxy_id = next(key for key, part in path_parts.items() if part == "{proxy+}")

    function_id = logical_id(stack, stack.api.handler.function.node.default_child)
    synthesized.template.has_resource_properties(
        "AWS::ApiGateway::Method",
        {
            "HttpMethod": "ANY",
            "ResourceId": {"Ref": proxy_id},
            "Integration": {
                "Type": "AWS_PROXY",
                "IntegrationHttpMethod": "POST",
                "Uri": {
                    "Fn::Join": ["", Match.array_with([{"Fn::GetAtt": [function_id, "Arn"]}])],
                },
            },
        },
    )


def test_api_gateway_may_invoke_the_function_only_from_the_stage_under_v1(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    function_id = logical_id(stack, stack.api.handler.function.node.default_child)
    permissions = [
        permission["Properties"]
        for permission in synthesized.resources("AWS::Lambda::Permission").values()
        if permission["Properties"]["FunctionName"] == {"Fn::GetAtt": [function_id, "Arn"]}
    ]
    assert len(permissions) == 1, "no test-invoke permission, one permission for the live stage"
    permission = permissions[0]
    assert permission["Principal"] == "apigateway.amazonaws.com"
    source_arn_parts = permission["SourceArn"]["Fn::Join"][1]
    assert source_arn_parts[-1] == f"/*/{names.API_VERSION_PATH}/*"


def test_stage_logs_traces_and_throttles(synthesized: Synthesized) -> None:
    defaults = DeploymentSettings()
    stages = synthesized.resources("AWS::ApiGateway::Stage")
    assert len(stages) == 1
    stage = next(iter(stages.values()))["Properties"]
    assert stage["StageName"] == names.API_STAGE_NAME
    assert stage["TracingEnabled"] is True
    assert "DestinationArn" in stage["AccessLogSetting"]
    assert "$context.identity.userArn" in stage["AccessLogSetting"]["Format"]
    assert stage["MethodSettings"] == [
        {
            "DataTraceEnabled": False,
            "HttpMethod": "*",
            "ResourcePath": "/*",
            "ThrottlingBurstLimit": defaults.api_throttle_burst,
            "ThrottlingRateLimit": defaults.api_throttle_rate,
        }
    ]


def test_api_gateway_can_write_access_logs_before_the_stage_exists(synthesized: Synthesized) -> None:
    """Access logging needs the region's API Gateway CloudWatch role set (AWS::ApiGateway::Account)."""
    accounts = synthesized.resources("AWS::ApiGateway::Account")
    assert len(accounts) == 1
    [(account_id, account)] = accounts.items()
    role_id = account["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0]
    role = synthesized.resources("AWS::IAM::Role")[role_id]
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "apigateway.amazonaws.com"}}
    ]
    # Every API in the region relies on it: deleting the stack must not pull it away.
    assert role["DeletionPolicy"] == account["DeletionPolicy"] == "Retain"
    [stage] = synthesized.resources("AWS::ApiGateway::Stage").values()
    assert account_id in stage["DependsOn"]


def test_the_api_is_regional(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::ApiGateway::RestApi", {"EndpointConfiguration": {"Types": ["REGIONAL"]}}
    )


def test_function_runs_the_api_handler_on_the_newest_python(api_function: dict[str, Any]) -> None:
    properties = api_function["Properties"]
    assert properties["Handler"] == names.API_HANDLER == "functions.api.handler.handler"
    assert properties["Runtime"] == RUNTIME.name
    assert properties["Architectures"] == [DeploymentSettings().architecture]
    assert properties["MemorySize"] == 256
    assert properties["Timeout"] == 10
    assert properties["TracingConfig"] == {"Mode": "Active"}
    assert len(properties["Layers"]) == 1


def test_function_environment_carries_the_tables_the_delay_queues_the_jobs_and_settings(
    synthesized: Synthesized, api_function: dict[str, Any]
) -> None:
    defaults = DeploymentSettings()
    stack = synthesized.stack
    table_id = logical_id(stack, stack.storage.table.node.default_child)
    [delay_queue] = stack.pipeline.queues.delay  # one by default: the URL list is a single Ref
    assert api_function["Properties"]["Environment"]["Variables"] == {
        **settings_environment(defaults),
        env_name("table_name"): {"Ref": table_id},
        env_name("idempotency_table"): {"Ref": logical_id(stack, stack.storage.idempotency_table.node.default_child)},
        env_name("delay_queue_urls"): {"Ref": logical_id(stack, delay_queue.node.default_child)},
        env_name("jobs_bucket"): {"Ref": logical_id(stack, stack.jobs.bucket.node.default_child)},
        env_name("job_state_machine_arn"): {"Ref": logical_id(stack, stack.jobs.jobs.state_machine.node.default_child)},
        # the deployment's own resources, which no task may target
        env_name("own_prefix"): f"{stack.stack_name}-",
        env_name("account_id"): {"Ref": "AWS::AccountId"},
        env_name("signing_key_arn"): {"Fn::GetAtt": [logical_id(stack, stack.signing.key.node.default_child), "Arn"]},
        "POWERTOOLS_SERVICE_NAME": observability.SERVICE,
        "POWERTOOLS_METRICS_NAMESPACE": observability.NAMESPACE,
    }


def test_function_logs_to_its_own_log_group_with_retention(
    synthesized: Synthesized, api_function: dict[str, Any]
) -> None:
    log_group_id = api_function["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    log_group = synthesized.resources("AWS::Logs::LogGroup")[log_group_id]
    assert log_group["Properties"]["RetentionInDays"] == DeploymentSettings().log_retention_days


def test_outputs_the_api_url_with_the_version_path(synthesized: Synthesized) -> None:
    outputs = synthesized.template.find_outputs("*")
    assert set(outputs) == {
        names.OUTPUT_API_URL,
        names.OUTPUT_TABLE_NAME,
        names.OUTPUT_IDEMPOTENCY_TABLE_NAME,
        names.OUTPUT_DEAD_LETTER_QUEUE_URL,
        names.OUTPUT_TRIGGER_ROLE_ARN,
        names.OUTPUT_DASHBOARD_NAME,
    }
    url_parts = outputs[names.OUTPUT_API_URL]["Value"]["Fn::Join"][1]
    assert url_parts[-1] == f"/{names.API_VERSION_PATH}"
