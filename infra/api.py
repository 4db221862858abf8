"""The registration API: a REST API that proxies every path under /v1 to one Lambda function.

Callers authenticate with IAM: every request is signed with SigV4 and API Gateway rejects
unsigned or unauthorized ones before the function runs. That is the deployment's
authentication until a tenant-aware authorizer lands; to let a service call the API, allow it
``execute-api:Invoke`` on this API's ARN.
"""

from __future__ import annotations

import json

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra import names
from infra.bundling import LambdaBundle
from infra.function import ServiceFunction, function_environment
from infra.job_runner import JobRunner
from infra.nag import acknowledge
from infra.pipeline import Queues
from infra.settings import DeploymentSettings
from infra.signing import SigningKey
from infra.storage import Storage
from shared.store.models import LIST_INDEX_NAME

API_TABLE_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:Query",
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
)
"""What the API function does to the table (register, get, update, cancel, list, batches)."""

API_MEMORY_MB = 256
API_TIMEOUT = Duration.seconds(10)

_F = apigw.AccessLogField
ACCESS_LOG_FORMAT = apigw.AccessLogFormat.custom(
    json.dumps(
        {
            "requestId": _F.context_request_id(),
            "extendedRequestId": _F.context_extended_request_id(),
            "requestTime": _F.context_request_time(),
            "httpMethod": _F.context_http_method(),
            "resourcePath": _F.context_resource_path(),
            "path": _F.context_path(),
            "protocol": _F.context_protocol(),
            "status": _F.context_status(),
            "responseLength": _F.context_response_length(),
            "responseLatency": _F.context_response_latency(),
            "integrationLatency": _F.context_integration_latency(),
            "sourceIp": _F.context_identity_source_ip(),
            "callerAccountId": _F.context_identity_account_id(),
            "userArn": _F.context_identity_user_arn(),
            "userAgent": _F.context_identity_user_agent(),
            "xrayTraceId": _F.context_xray_trace_id(),
            "error": _F.context_error_message(),
            "integrationError": _F.context_integration_error_message(),
        }
    )
)
"""One JSON object per request; ``userArn`` is the signed caller (the future tenant)."""


class Api(Construct):
    """API Gateway (REST, regional, IAM-authorized) in front of the API function."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploymentSettings,
        bundle: LambdaBundle,
        storage: Storage,
        queues: Queues,
        jobs: JobRunner,
        signing: SigningKey,
    ) -> None:
        super().__init__(scope, construct_id)
        self.handler = ServiceFunction(
            self,
            names.API_FUNCTION_ID,
            bundle=bundle,
            settings=settings,
            handler=names.API_HANDLER,
            description="Sundial REST API: registers, lists and manages tasks and jobs",
            statements=[
                *storage.access_statements(actions=API_TABLE_ACTIONS, query_indexes=[LIST_INDEX_NAME]),
                # The Idempotency-Key header: Powertools' records, in a table of their own.
                *storage.idempotency_statements(),
                # A task due before the scanners' next pass is staged by the API itself.
                *queues.staging_statements(),
                *jobs.starter_statements(),
                # POST /v1/signing-secrets:rotate encrypts the new secret
                *signing.rotator_statements(),
            ],
            environment=function_environment(
                settings,
                table_name=storage.table.table_name,
                **storage.idempotency_resources(),
                **queues.staging_resources(),
                **jobs.starter_resources(),
                # no task may target the deployment's own functions, queues and topics (their
                # names start with the stack's)
                own_prefix=f"{Stack.of(self).stack_name}-",
                account_id=Stack.of(self).account,
                **signing.resources(),
            ),
            memory_size=API_MEMORY_MB,
            timeout=API_TIMEOUT,
        )

        jobs.acknowledge_object_access(self.handler.policy)

        access_logs = logs.LogGroup(
            self,
            names.ACCESS_LOGS_ID,
            retention=settings.log_retention,
            removal_policy=settings.cdk_removal_policy,
        )
        self.rest_api = apigw.RestApi(
            self,
            names.REST_API_ID,
            rest_api_name=f"{Stack.of(self).stack_name}-api",
            description="Sundial task registration API (SigV4-signed callers only)",
            endpoint_configuration=apigw.EndpointConfiguration(types=[apigw.EndpointType.REGIONAL]),
            # The region-wide role API Gateway needs to write the access logs (see settings).
            cloud_watch_role=settings.api_gateway_cloudwatch_role,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN if settings.api_gateway_cloudwatch_role else None,
            default_method_options=apigw.MethodOptions(authorization_type=apigw.AuthorizationType.IAM),
            deploy_options=apigw.StageOptions(
                stage_name=names.API_STAGE_NAME,
                tracing_enabled=True,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=ACCESS_LOG_FORMAT,
                throttling_rate_limit=settings.api_throttle_rate,
                throttling_burst_limit=settings.api_throttle_burst,
            ),
        )
        # The stack has its own output for the URL (with the /v1 path); drop the L2's default one.
        self.rest_api.node.try_remove_child("Endpoint")

        version = self.rest_api.root.add_resource(names.API_VERSION_PATH)
        self.proxy = version.add_proxy(
            default_integration=apigw.LambdaIntegration(self.handler.function, proxy=True, allow_test_invoke=False),
            any_method=True,
        )
        self.url = self.rest_api.url_for_path(f"/{names.API_VERSION_PATH}")
        self._acknowledge_findings()

    def _acknowledge_findings(self) -> None:
        method = self.proxy.any_method
        assert method is not None
        acknowledge(
            method,
            "AwsSolutions-COG4",
            "Callers are services holding AWS credentials, not users: every method uses AWS_IAM "
            "authorization (SigV4), checked by API Gateway before the function runs, so only "
            "principals allowed execute-api:Invoke reach it. A Cognito user pool would add a "
            "second identity system for machine callers; the planned tenant-aware authorizer "
            "will map callers to tenants.",
        )
        acknowledge(
            self.rest_api,
            "AwsSolutions-APIG2",
            "The body of every route is validated by the API function (Powertools Event Handler "
            "with enable_validation=True and the pydantic API models), which answers each bad "
            "input with a stable error code; API Gateway models would duplicate that schema and "
            "drift from it. The proxy resource has no request parameters to validate.",
        )
        stage = self.rest_api.deployment_stage
        acknowledge(
            stage,
            "AwsSolutions-APIG3",
            "No WAF: only SigV4-signed requests from IAM principals of the account reach the "
            "integration (API Gateway rejects the rest), the stage is throttled, and a web ACL "
            "costs a fixed monthly fee against Sundial's near-zero idle cost. Add one in front "
            "of the stage if the API is ever opened to anonymous callers.",
        )
        acknowledge(
            stage,
            "AwsSolutions-APIG6",
            "No execution logging: API Gateway writes it to a log group it creates itself "
            "(API-Gateway-Execution-Logs_<api id>/<stage>), outside the stack and never expiring. "
            "The stage's JSON access log (APIG1) records every request with status, latencies, "
            "gateway and integration errors and the signed caller; the function logs each request "
            "with Powertools; X-Ray traces both.",
        )
        cloudwatch_role = self.rest_api.node.try_find_child("CloudWatchRole")
        if cloudwatch_role is not None:
            acknowledge(
                cloudwatch_role,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                "AmazonAPIGatewayPushToCloudWatchLogs]",
                "This is API Gateway's region-wide CloudWatch role (AWS::ApiGateway::Account), "
                "used by every REST API of the account in the region to write its logs, so it "
                "cannot be scoped to this stack's log groups; AmazonAPIGatewayPushToCloudWatchLogs "
                "is the policy AWS documents for it. Only apigateway.amazonaws.com can assume it.",
            )
