"""The REST API and its function: a proxy under /v1 behind the API-key authorizer (the OpenAPI
document and Swagger UI public), wired to the table; API Gateway's own errors in the error format."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra import names
from infra.bundling import RUNTIME
from infra.settings import DeploymentSettings
from shared import observability
from shared.api.errors import InternalError, RouteNotFound
from shared.api.responses import ErrorOut
from shared.domain.errors import Forbidden, RateLimited, Unauthorized
from shared.domain.iam_callers import IAM_REGISTER_PATHS
from shared.settings.environment import env_name
from shared.topology import (
    API_FUNCTION_MEMORY_MB,
    API_FUNCTION_TIMEOUT_S,
    API_INTEGRATION_TIMEOUT_S,
    FUNCTION_FAILED,
    INTEGRATION_TIMED_OUT,
)
from tests.infrastructure.conftest import Synthesized, logical_id, settings_environment

pytestmark = pytest.mark.infrastructure


@pytest.fixture(scope="module")
def api_function(synthesized: Synthesized) -> dict[str, Any]:
    functions = synthesized.resources("AWS::Lambda::Function")
    key = logical_id(synthesized.stack, synthesized.stack.api.handler.function.node.default_child)
    return functions[key]


def _full_paths(synthesized: Synthesized) -> dict[str, str]:
    """Resource logical id -> its whole path (``/v1/{proxy+}``)."""
    resources = synthesized.resources("AWS::ApiGateway::Resource")

    def full(key: str) -> str:
        properties = resources[key]["Properties"]
        parent = properties["ParentId"].get("Ref")
        return (full(parent) if parent in resources else "") + "/" + properties["PathPart"]

    return {key: full(key) for key in resources}


def test_every_method_but_the_api_description_the_console_and_sigv4_takes_an_api_key(
    synthesized: Synthesized,
) -> None:
    """The EventBridge Scheduler API has no authorizer either: its requests are signed with SigV4,
    which the API function verifies (an authorizer never sees the body the signature covers)."""
    stack = synthesized.stack
    authorizer_id = logical_id(stack, stack.keys.authorizer.node.default_child)
    paths = _full_paths(synthesized)
    methods = synthesized.resources("AWS::ApiGateway::Method")
    assert methods, "the API has methods"
    by_path = {paths[method["Properties"]["ResourceId"]["Ref"]]: method["Properties"] for method in methods.values()}
    assert len(by_path) == len(methods), "one method (ANY) per resource"
    public_paths = {
        *(f"/{names.API_VERSION_PATH}/{path}" for path in names.API_PUBLIC_PATHS),
        f"/{names.CONSOLE_PATH}",
        f"/{names.CONSOLE_PATH}/{{proxy+}}",
        f"/{names.SCHEDULER_PATH}/{{proxy+}}",
    }
    public = {path: by_path.pop(path) for path in public_paths}
    signed = {path: by_path.pop(path) for path in IAM_REGISTER_PATHS}
    assert set(by_path) == {f"/{names.API_VERSION_PATH}/{{proxy+}}"}
    for method in by_path.values():
        assert method["AuthorizationType"] == "CUSTOM"
        assert method["AuthorizerId"] == {"Ref": authorizer_id}
    for method in public.values():
        assert method["AuthorizationType"] == "NONE"
        assert "AuthorizerId" not in method
    for method in signed.values():  # grant_register's routes (docs/construct.md, section 1a)
        assert (method["HttpMethod"], method["AuthorizationType"]) == ("POST", "AWS_IAM")
        assert "AuthorizerId" not in method


def test_every_path_under_v1_the_console_and_scheduler_is_proxied_to_the_api_function(
    synthesized: Synthesized,
) -> None:
    stack = synthesized.stack
    paths = _full_paths(synthesized)
    assert sorted(paths.values()) == [
        "/console",
        "/console/{proxy+}",
        "/iam",
        "/iam/v1",
        *IAM_REGISTER_PATHS,
        "/scheduler",
        "/scheduler/{proxy+}",
        "/v1",
        "/v1/docs",
        "/v1/openapi.json",
        "/v1/{proxy+}",
    ]
    function_id = logical_id(stack, stack.api.handler.function.node.default_child)
    for resource_id, path in paths.items():
        if path in ("/v1", "/scheduler", "/iam", "/iam/v1"):
            continue
        synthesized.template.has_resource_properties(
            "AWS::ApiGateway::Method",
            {
                "HttpMethod": "POST" if path in IAM_REGISTER_PATHS else "ANY",
                "ResourceId": {"Ref": resource_id},
                "Integration": {
                    "Type": "AWS_PROXY",
                    "IntegrationHttpMethod": "POST",
                    "Uri": {
                        "Fn::Join": ["", Match.array_with([{"Fn::GetAtt": [function_id, "Arn"]}])],
                    },
                },
            },
        )


def test_api_gateway_may_invoke_the_function_only_from_the_stage_under_v1_console_and_scheduler(
    synthesized: Synthesized,
) -> None:
    stack = synthesized.stack
    function_id = logical_id(stack, stack.api.handler.function.node.default_child)
    stage_id = logical_id(stack, stack.api.rest_api.deployment_stage.node.default_child)
    permissions = [
        permission["Properties"]
        for permission in synthesized.resources("AWS::Lambda::Permission").values()
        if permission["Properties"]["FunctionName"] == {"Fn::GetAtt": [function_id, "Arn"]}
    ]
    # no test-invoke permission: one for the live stage per resource
    suffixes = set()
    for permission in permissions:
        assert permission["Principal"] == "apigateway.amazonaws.com"
        source_arn_parts = permission["SourceArn"]["Fn::Join"][1]
        assert {"Ref": stage_id} in source_arn_parts
        suffixes.add(source_arn_parts[-1])
    version = f"/*/{names.API_VERSION_PATH}"
    console = f"/*/{names.CONSOLE_PATH}"
    scheduler = f"/*/{names.SCHEDULER_PATH}/*"
    expected = {
        f"{version}/*",
        *(f"{version}/{path}" for path in names.API_PUBLIC_PATHS),
        console,
        f"{console}/*",
        scheduler,
        *(f"/POST{path}" for path in IAM_REGISTER_PATHS),  # after the stage: the stage only
    }
    assert len(permissions) == len(suffixes) == len(expected)
    assert suffixes == expected


GATEWAY_ANSWERS = {
    "UNAUTHORIZED": (Unauthorized.status, Unauthorized.code),
    "ACCESS_DENIED": (Forbidden.status, Forbidden.code),
    "MISSING_AUTHENTICATION_TOKEN": (RouteNotFound.status, RouteNotFound.code),
    "AUTHORIZER_FAILURE": (InternalError.status, InternalError.code),
    "AUTHORIZER_CONFIGURATION_ERROR": (InternalError.status, InternalError.code),
    "THROTTLED": (RateLimited.status, RateLimited.code),
    # a function error (timeout, crash, an answer over 6 MB): API Gateway's own 502, this body
    "DEFAULT_5XX": (None, FUNCTION_FAILED.code),
    "INTEGRATION_TIMEOUT": (INTEGRATION_TIMED_OUT.status, INTEGRATION_TIMED_OUT.code),
}
"""What API Gateway answers itself, as the API function would: status and error code."""


def test_api_gateways_own_errors_are_in_the_error_format(synthesized: Synthesized) -> None:
    rest_api_id = logical_id(synthesized.stack, synthesized.stack.api.rest_api.node.default_child)
    responses = {
        response["Properties"]["ResponseType"]: response["Properties"]
        for response in synthesized.resources("AWS::ApiGateway::GatewayResponse").values()
    }
    assert set(responses) == set(GATEWAY_ANSWERS)
    for response_type, (status, code) in GATEWAY_ANSWERS.items():
        response = responses[response_type]
        assert response["RestApiId"] == {"Ref": rest_api_id}
        assert response.get("StatusCode") == (str(status) if status is not None else None), response_type
        assert response["ResponseParameters"]["gatewayresponse.header.Content-Type"] == "'application/json'"
        assert set(response["ResponseTemplates"]) == {"application/json"}
        body = response["ResponseTemplates"]["application/json"]
        assert "$" not in body, "a static body: nothing for API Gateway to substitute"
        error = ErrorOut.model_validate(json.loads(body)).error
        assert error.code == code, response_type
        assert error.message
    assert responses["THROTTLED"]["ResponseParameters"]["gatewayresponse.header.Retry-After"] == "'1'"


SCHEDULER_ERROR_TYPES = {
    "AUTHORIZER_FAILURE": ("InternalServerException", 500),
    "AUTHORIZER_CONFIGURATION_ERROR": ("InternalServerException", 500),
    "THROTTLED": ("ThrottlingException", 429),
    "DEFAULT_5XX": ("InternalServerException", 502),  # API Gateway's own status: a failed function's
    "INTEGRATION_TIMEOUT": ("InternalServerException", 504),
}
"""API Gateway's own throttle and 5xx answers, as the EventBridge Scheduler API's errors (and the
status each comes with)."""


def _gateway_responses(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    return {
        response["Properties"]["ResponseType"]: response["Properties"]
        for response in synthesized.resources("AWS::ApiGateway::GatewayResponse").values()
    }


def test_api_gateways_own_throttle_and_5xx_name_the_eventbridge_scheduler_error(synthesized: Synthesized) -> None:
    """``x-amzn-ErrorType`` on the gateway responses of a 429 or a 5xx, the service's own error
    types; none on the 4xx the native API alone meets (401, 403, the 404 of a path with no route:
    every path under /scheduler reaches the function)."""
    responses = _gateway_responses(synthesized)
    for response_type, response in responses.items():
        header = response["ResponseParameters"].get("gatewayresponse.header.x-amzn-ErrorType")
        expected = SCHEDULER_ERROR_TYPES.get(response_type)
        assert header == (f"'{expected[0]}'" if expected else None), response_type


def test_botocore_reads_the_eventbridge_scheduler_error_from_api_gateways_own_answers(
    synthesized: Synthesized,
) -> None:
    """botocore's rest-json parser, on each such answer as API Gateway sends it (its status, the
    gateway response's headers and body), finds an error of botocore's own ``scheduler`` model: its
    clients raise ``ThrottlingException`` (retried as a throttle) or ``InternalServerException``,
    as from the service. The body stays the native API's error format."""
    import botocore.session
    from botocore.awsrequest import HeadersDict
    from botocore.parsers import create_parser

    model = botocore.session.get_session().get_service_model("scheduler")
    operation = model.operation_model("CreateSchedule")
    parser = create_parser(model.metadata["protocol"])
    modelled = {shape.name: shape.metadata["error"]["httpStatusCode"] for shape in operation.error_shapes}
    for response_type, response in _gateway_responses(synthesized).items():
        if response_type not in SCHEDULER_ERROR_TYPES:
            continue
        error_type, status = SCHEDULER_ERROR_TYPES[response_type]
        headers = HeadersDict(
            {
                key.removeprefix("gatewayresponse.header."): value.strip("'")
                for key, value in response["ResponseParameters"].items()
            }
        )
        parsed = parser.parse(
            {
                "status_code": status,
                "headers": headers,
                "body": response["ResponseTemplates"]["application/json"].encode(),
            },
            operation.output_shape,
        )
        assert parsed["Error"]["Code"] == error_type, response_type
        assert error_type in modelled
        assert ErrorOut.model_validate_json(response["ResponseTemplates"]["application/json"]).error.code
    assert (modelled["ThrottlingException"], modelled["InternalServerException"]) == (429, 500)


def test_the_deployment_comes_after_the_gateway_responses_and_the_authorizer(synthesized: Synthesized) -> None:
    """A stage serves what its deployment saw: both must exist before it is made."""
    stack = synthesized.stack
    [deployment] = synthesized.resources("AWS::ApiGateway::Deployment").values()
    depends_on = set(deployment["DependsOn"])
    assert set(synthesized.resources("AWS::ApiGateway::GatewayResponse")) <= depends_on
    assert logical_id(stack, stack.keys.authorizer.node.default_child) in depends_on


def test_stage_logs_traces_and_throttles(synthesized: Synthesized) -> None:
    defaults = DeploymentSettings()
    stages = synthesized.resources("AWS::ApiGateway::Stage")
    assert len(stages) == 1
    stage = next(iter(stages.values()))["Properties"]
    assert stage["StageName"] == names.API_STAGE_NAME
    assert stage["TracingEnabled"] is True
    assert "DestinationArn" in stage["AccessLogSetting"]
    access_log = json.loads(stage["AccessLogSetting"]["Format"])
    # the caller as the authorizer named it; no IAM caller any more
    assert access_log["tenant"] == "$context.authorizer.tenant"
    assert access_log["role"] == "$context.authorizer.role"
    assert access_log["principalId"] == "$context.authorizer.principalId"
    assert access_log["authorizerError"] == "$context.authorizer.error"
    assert not [value for value in access_log.values() if "userArn" in value or "accountId" in value]
    assert stage["MethodSettings"] == [
        {
            "DataTraceEnabled": False,
            "HttpMethod": "*",
            "ResourcePath": "/*",
            "ThrottlingBurstLimit": defaults.api_throttle_burst,
            "ThrottlingRateLimit": defaults.api_throttle_rate,
        }
    ]


def test_answers_over_a_kibibyte_travel_gzipped(synthesized: Synthesized) -> None:
    """The console's files and long lists, for a client that sends Accept-Encoding: gzip."""
    [api] = synthesized.resources("AWS::ApiGateway::RestApi").values()
    assert api["Properties"]["MinimumCompressionSize"] == 1024


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
    assert properties["MemorySize"] == API_FUNCTION_MEMORY_MB == 256
    assert properties["Timeout"] == API_FUNCTION_TIMEOUT_S == 10
    assert API_FUNCTION_TIMEOUT_S < API_INTEGRATION_TIMEOUT_S, "a slow request is the function's 502, not a 504"
    assert properties["TracingConfig"] == {"Mode": "PassThrough"}  # sundial:tracing's default
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
        env_name("high_priority_queue_url"): {
            "Ref": logical_id(stack, stack.pipeline.queues.high_priority.node.default_child)
        },
        env_name("jobs_bucket"): {"Ref": logical_id(stack, stack.jobs.bucket.node.default_child)},
        env_name("job_state_machine_arn"): {"Ref": logical_id(stack, stack.jobs.jobs.state_machine.node.default_child)},
        env_name("job_function"): {"Ref": logical_id(stack, stack.jobs.function.function.node.default_child)},
        # the deployment's own resources, which no task may target
        env_name("own_prefix"): f"{stack.stack_name}-",
        env_name("account_id"): {"Ref": "AWS::AccountId"},
        # the signing secrets' root key (sundial:signingKey "parameter"): its name, made after the stack's
        env_name("signing_root_parameter"): "/Sundial/signing-root",
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
        names.OUTPUT_HIGH_PRIORITY_TRIGGER_ROLE_ARN,
        names.OUTPUT_RECOVER_ROLE_ARN,
        names.OUTPUT_TRIGGER_ROLE_ARN,
        names.OUTPUT_SCHEDULER_FUNCTION_URL,
    }  # and DashboardName with sundial:dashboard (test_observability_settings.py)
    url_parts = outputs[names.OUTPUT_API_URL]["Value"]["Fn::Join"][1]
    assert url_parts[-1] == f"/{names.API_VERSION_PATH}"
