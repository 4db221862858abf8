"""The registration API: a REST API that proxies every path under /v1 to one Lambda function.

Callers authenticate with API keys: every route but ``/v1/openapi.json`` and ``/v1/docs`` takes
``Authorization: Bearer <key>``, checked by the Lambda REQUEST authorizer of ``infra/auth.py``
before the function runs. The key decides the tenant (or the admin, for ``/v1/tenants...``); the
function reads it from the authorizer's context and answers a key on a route it may not call
with ``403 forbidden``. No key, an unknown or a revoked one: API Gateway answers ``401`` in the
API's error format (:data:`GATEWAY_ERRORS`).

Beside ``/v1``, the registration routes' IAM twins, ``POST /iam/v1/tasks`` and ``POST
/iam/v1/tasks:batch``, are ``AWS_IAM`` methods on the same function: API Gateway verifies the
caller's SigV4 signature and its ``execute-api:Invoke`` permission, and the function maps the
verified role to the tenant :meth:`Api.add_iam_caller` recorded (``Sundial.grant_register``;
docs/construct.md, section 1a).

The OpenAPI document and Swagger UI are resources of their own, public, on the same function;
so is the web console, ``/console/`` and the files under it (``functions/api/assets.py``), from
the same origin as the API it calls. Answers over 1 KiB are gzipped for a client that asks.

With ``sundial:schedulerFunctionUrl`` the EventBridge Scheduler API is also served from a Lambda
function URL, by a function of its own (:class:`SchedulerFunctionUrl`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import jsii
from aws_cdk import Duration, IResolveContext, IStringProducer, Lazy, RemovalPolicy, Size, Stack, Token
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from shared.domain.errors import Forbidden, RateLimited, SundialError, Unauthorized
from shared.domain.iam_callers import IAM_REGISTER_PATHS, grant_entry, role_key
from shared.settings.environment import env_name
from shared.store.models import LIST_INDEX_NAME, STATUS_INDEX_NAME
from shared.topology import (
    API_FUNCTION_MEMORY_MB,
    API_FUNCTION_TIMEOUT_S,
    FUNCTION_FAILED,
    INTEGRATION_TIMED_OUT,
    GatewayAnswer,
)

from . import names
from .auth import ApiKeys
from .bundling import LambdaBundle
from .function import ServiceFunction, function_environment
from .job_runner import JobRunner
from .nag import acknowledge
from .pipeline import Queues
from .settings import DeploymentSettings
from .signing import Signing
from .storage import Storage

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

API_MEMORY_MB = API_FUNCTION_MEMORY_MB
API_TIMEOUT = Duration.seconds(API_FUNCTION_TIMEOUT_S)
"""Below API Gateway's integration timeout (shared/topology.py): a slow request is the function's
502, in the API's error format (the DEFAULT_5XX gateway response below)."""

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
            "principalId": _F.context_authorizer_principal_id(),
            "tenant": _F.context_authorizer("tenant"),
            "role": _F.context_authorizer("role"),
            "authorizerStatus": _F.context_authorizer_status(),
            "authorizerLatency": _F.context_authorizer_latency(),
            "authorizerError": _F.context_authorizer_error(),
            "userAgent": _F.context_identity_user_agent(),
            "xrayTraceId": _F.context_xray_trace_id(),
            "error": _F.context_error_message(),
            "integrationError": _F.context_integration_error_message(),
        }
    )
)
"""One JSON object per request; ``tenant`` and ``role`` are the caller as the authorizer named it
(its context; ``principalId`` its principal), empty on the public routes and on a ``401``. Keys
never appear: the access log has no header, and the authorizer's principal is never the key."""


ERROR_TYPE_HEADER = "x-amzn-ErrorType"
"""Where a rest-json AWS service names an error, and where botocore reads its code first (its
``RestJSONParser``: the header, then the body's ``code``/``__type``): the EventBridge Scheduler
API's clients (docs/eventbridge.md, section 4) see API Gateway's own throttling and 5xx answers as
that service's errors, :data:`THROTTLING` and :data:`INTERNAL` (shapes of botocore's ``scheduler``
model, with statuses 429 and 500; tests/infrastructure/test_api.py holds them to it)."""
THROTTLING = "ThrottlingException"
INTERNAL = "InternalServerException"


@dataclass(frozen=True)
class GatewayError:
    """An answer API Gateway gives itself, rewritten to the API's error format
    (``{"error": {"code", "message"}}``, as ``shared.api.responses.ErrorOut``), with the
    EventBridge Scheduler API's error type in :data:`ERROR_TYPE_HEADER` when it is a throttle or
    a 5xx (a gateway response is the whole API's, ``/v1`` and ``/scheduler`` alike: the native
    API's clients read the body and ignore the header)."""

    type: apigw.ResponseType
    status: int | None
    """None: API Gateway's own status for the case (DEFAULT_5XX covers several)."""
    code: str
    message: str
    headers: tuple[tuple[str, str], ...] = ()
    error_type: str | None = None
    """The EventBridge Scheduler API's name for the case (:data:`ERROR_TYPE_HEADER`); None: none."""

    def body(self) -> str:
        return json.dumps({"error": {"code": self.code, "message": self.message}})

    def response_headers(self) -> dict[str, str]:
        """Each header as it is sent (a gateway response's values are quoted literals)."""
        headers = {"Content-Type": "application/json", **dict(self.headers)}
        if self.error_type is not None:
            headers[ERROR_TYPE_HEADER] = self.error_type
        return headers

    @classmethod
    def of(
        cls,
        type: apigw.ResponseType,
        answer: GatewayAnswer,
        *,
        keep_status: bool = False,
        error_type: str | None = None,
    ) -> GatewayError:
        return cls(type, None if keep_status else answer.status, answer.code, answer.message, error_type=error_type)


GATEWAY_ERRORS = (
    GatewayError(
        apigw.ResponseType.UNAUTHORIZED,
        Unauthorized.status,
        Unauthorized.code,
        "Send Authorization: Bearer <key> with a key that exists and is not revoked.",
    ),
    GatewayError(
        apigw.ResponseType.ACCESS_DENIED,
        Forbidden.status,
        Forbidden.code,
        "This key, or this IAM identity (on /iam/v1/), may not call this route.",
    ),
    # API Gateway answers this for a method or path it has no resource for (/, /v1 itself, GET
    # /iam/v1/tasks): under /v1 every other path reaches the function. It is also its answer to an
    # unsigned request to an AWS_IAM method (/iam/v1/tasks), which it cannot tell apart here
    # ("Gateway response types": MISSING_AUTHENTICATION_TOKEN; docs/construct.md, section 1a).
    GatewayError(
        apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN,
        404,
        "route_not_found",
        "No route for this method and path: every route is under /v1/ (see /v1/openapi.json); the console is "
        "at /console/; POST /iam/v1/tasks and /iam/v1/tasks:batch want a SigV4 signature.",
    ),
    # /v1 only (the authorizer's routes), but a 5xx: named as every 5xx is
    GatewayError(
        apigw.ResponseType.AUTHORIZER_FAILURE,
        SundialError.status,
        SundialError.code,
        "Sundial failed to check this request's key; retry later.",
        error_type=INTERNAL,
    ),
    GatewayError(
        apigw.ResponseType.AUTHORIZER_CONFIGURATION_ERROR,
        SundialError.status,
        SundialError.code,
        "Sundial failed to check this request's key; retry later.",
        error_type=INTERNAL,
    ),
    # The stage's own throttle (sundial:apiThrottleRate / apiThrottleBurst), before any tenant's
    GatewayError(
        apigw.ResponseType.THROTTLED,
        RateLimited.status,
        RateLimited.code,
        "Over the API's request rate: retry after a second.",
        headers=(("Retry-After", "1"),),
        error_type=THROTTLING,
    ),
    # The function failed (its timeout, a crash, an answer over Lambda's 6 MB): API Gateway answers
    # 502 ("Handling Lambda errors with an API Gateway API"), under the default 5xx response, whose
    # status stays API Gateway's. The local API Gateway answers the same (local/apigw.py).
    GatewayError.of(apigw.ResponseType.DEFAULT_5_XX, FUNCTION_FAILED, keep_status=True, error_type=INTERNAL),
    # Past API Gateway's 29 s (only when the function's timeout were longer): 504
    GatewayError.of(apigw.ResponseType.INTEGRATION_TIMEOUT, INTEGRATION_TIMED_OUT, error_type=INTERNAL),
)
"""API Gateway's own 4xx and 5xx answers that a caller of this API can meet, in the error format."""


class Api(Construct):
    """API Gateway (REST, regional, API keys through a Lambda authorizer) in front of the API function."""

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
        signing: Signing,
        keys: ApiKeys,
    ) -> None:
        super().__init__(scope, construct_id)
        self.handler = self._handler(
            settings=settings, bundle=bundle, storage=storage, queues=queues, jobs=jobs, signing=signing
        )
        jobs.acknowledge_object_access(self.handler.policy)
        jobs.grant_stop(self.handler)  # POST /v1/jobs/{job_id}/cancel
        self.rest_api = self._rest_api(settings)
        self._iam_grants: list[str] = []
        self._routes(keys)
        self._gateway_responses()
        self.url = self.rest_api.url_for_path(f"/{names.API_VERSION_PATH}")
        self._acknowledge_open_routes()
        self._acknowledge_gateway_findings()

    def _handler(
        self,
        *,
        settings: DeploymentSettings,
        bundle: LambdaBundle,
        storage: Storage,
        queues: Queues,
        jobs: JobRunner,
        signing: Signing,
    ) -> ServiceFunction:
        """The API function: every route, with what each of them does to the table, the queues,
        the jobs and the signing secrets."""
        return ServiceFunction(
            self,
            names.API_FUNCTION_ID,
            bundle=bundle,
            settings=settings,
            handler=names.API_HANDLER,
            description="Sundial REST API: registers, lists and manages tasks and jobs",
            statements=[
                *storage.access_statements(
                    actions=API_TABLE_ACTIONS, query_indexes=[LIST_INDEX_NAME, STATUS_INDEX_NAME]
                ),
                # The Idempotency-Key header: Powertools' records, in a table of their own.
                *storage.idempotency_statements(),
                # A task due before the scanners' next pass is staged by the API itself.
                queues.sends_of(names.API),
                *jobs.starter_statements(),
                # POST /v1/jobs/{id}/progress: a notify threshold crossed, sent by the job function
                *jobs.notifier_statements(),
                # GET /v1/jobs/{id}: a link to a result too large for the job's item
                *jobs.result_reader_statements(),
                # POST /v1/signing-secrets:rotate makes the new secret (encrypted, or derived from the root)
                *signing.rotator_statements(),
                # /scheduler: an access key's secret, read back to verify a request's SigV4
                *signing.access_key_statements(),
            ],
            environment=function_environment(
                settings,
                table_name=storage.table.table_name,
                **storage.idempotency_resources(),
                **queues.staging_resources(),
                **jobs.starter_resources(),
                **jobs.notifier_resources(),
                # no task may target the deployment's own functions, queues and topics (their
                # names start with the stack's)
                own_prefix=f"{Stack.of(self).stack_name}-",
                account_id=Stack.of(self).account,
                **signing.resources(),
            ),
            memory_size=API_MEMORY_MB,
            timeout=API_TIMEOUT,
        )

    def _rest_api(self, settings: DeploymentSettings) -> apigw.RestApi:
        """The REST API and its stage, which writes its access log to a group of its own."""
        access_logs = logs.LogGroup(
            self,
            names.ACCESS_LOGS_ID,
            retention=settings.log_retention,
            removal_policy=settings.cdk_removal_policy,
        )
        rest_api = apigw.RestApi(
            self,
            names.REST_API_ID,
            rest_api_name=f"{Stack.of(self).stack_name}-api",
            description="Sundial task registration API (bearer API keys, checked by a Lambda authorizer)",
            endpoint_configuration=apigw.EndpointConfiguration(types=[apigw.EndpointType.REGIONAL]),
            # the console's files and long lists travel gzipped (Accept-Encoding: gzip)
            min_compression_size=Size.kibibytes(1),
            # The region-wide role API Gateway needs to write the access logs (see settings).
            cloud_watch_role=settings.api_gateway_cloudwatch_role,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN if settings.api_gateway_cloudwatch_role else None,
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
        rest_api.node.try_remove_child("Endpoint")
        return rest_api

    def _routes(self, keys: ApiKeys) -> None:
        """Every route, to the API function: the public ones (the API's description, the console's
        files), the EventBridge Scheduler API's (SigV4, verified by the function), and the rest of
        /v1 behind the API keys' authorizer."""
        integration = apigw.LambdaIntegration(self.handler.function, proxy=True, allow_test_invoke=False)
        version = self.rest_api.root.add_resource(names.API_VERSION_PATH)
        # Public: the API's description. ANY, so a wrong method is the function's 405, as locally.
        self.public_methods = [
            version.add_resource(path).add_method("ANY", integration, authorization_type=apigw.AuthorizationType.NONE)
            for path in names.API_PUBLIC_PATHS
        ]
        # Public: the console's files (the same function answers them; ANY, as above).
        console = self.rest_api.root.add_resource(names.CONSOLE_PATH)
        no_key = apigw.MethodOptions(authorization_type=apigw.AuthorizationType.NONE)
        console_files = console.add_proxy(
            default_integration=integration, default_method_options=no_key, any_method=True
        )
        assert console_files.any_method is not None
        self.console_methods = [
            console.add_method("ANY", integration, authorization_type=apigw.AuthorizationType.NONE),
            console_files.any_method,
        ]
        # The EventBridge Scheduler API: no authorizer (it never sees the body SigV4 signs); the
        # function verifies each request's signature against the tenant's access key.
        scheduler = self.rest_api.root.add_resource(names.SCHEDULER_PATH)
        scheduler_proxy = scheduler.add_proxy(
            default_integration=integration, default_method_options=no_key, any_method=True
        )
        assert scheduler_proxy.any_method is not None
        self.scheduler_methods = [scheduler_proxy.any_method]
        self.proxy = version.add_proxy(
            default_integration=integration,
            default_method_options=apigw.MethodOptions(
                authorization_type=apigw.AuthorizationType.CUSTOM, authorizer=keys.authorizer
            ),
            any_method=True,
        )
        # The registration routes' IAM twins (/iam/v1/tasks, /iam/v1/tasks:batch): API Gateway
        # checks the caller's SigV4 signature and IAM policy, the function maps the role to a tenant.
        self.iam_methods = [
            self.rest_api.root.resource_for_path(path).add_method(
                "POST", integration, authorization_type=apigw.AuthorizationType.IAM
            )
            for path in IAM_REGISTER_PATHS
        ]

    def add_iam_caller(self, tenant: str, role_arn: str) -> None:
        """Let the role ``role_arn`` (a token or an ARN) register tasks as ``tenant`` on the IAM
        routes: an entry of the API function's ``iam_roles`` setting, written when the template is
        (so every grant made before synthesis is in it), and only once there is a grant."""
        entry = grant_entry(tenant, role_arn)
        if not Token.is_unresolved(role_arn):
            role_key(role_arn)  # a ValueError naming a bad ARN now, not at the function's cold start
        granted = {e.partition("=")[2]: e.partition("=")[0] for e in self._iam_grants}
        if granted.get(role_arn, tenant) != tenant:
            raise ValueError(
                f"{role_arn} is granted tenant {granted[role_arn]!r} already: a role registers as one tenant"
            )
        if entry in self._iam_grants:
            return
        if not self._iam_grants:
            joined = Lazy.uncached_string(_Joined(self._iam_grants))
            self.handler.function.add_environment(env_name("iam_roles"), joined)
        self._iam_grants.append(entry)

    def _gateway_responses(self) -> None:
        """API Gateway's own answers (:data:`GATEWAY_ERRORS`) in the error format."""
        for error in GATEWAY_ERRORS:
            self.rest_api.add_gateway_response(
                error.type.response_type,
                type=error.type,
                status_code=str(error.status) if error.status is not None else None,
                response_headers={name: f"'{value}'" for name, value in error.response_headers().items()},
                templates={"application/json": error.body()},
            )

    def _acknowledge_open_routes(self) -> None:
        """cdk-nag's findings on the methods: the /v1 proxy's authorizer is no Cognito user pool,
        and the public and EventBridge Scheduler routes have no authorizer at all."""
        method = self.proxy.any_method
        assert method is not None
        acknowledge(
            method,
            "AwsSolutions-COG4",
            "Callers are services, not users: every route under /v1/{proxy+} uses CUSTOM "
            "authorization, a Lambda REQUEST authorizer that maps the bearer API key of the "
            "Authorization header to its tenant (or to the admin) before the function runs, and "
            "answers 401 for no key, an unknown or a revoked one. Keys are items of the task "
            "table, created and revoked through the admin routes; a Cognito user pool would be a "
            "second identity system for machine callers.",
        )
        for public in self.public_methods:
            reason = (
                "Public by design: the OpenAPI document and Swagger UI describe the API to anyone "
                "who may call it, hold no tenant data and touch no storage (the function builds "
                "them from its own code). Every other route needs an API key (the {proxy+} "
                "method's CUSTOM authorizer)."
            )
            acknowledge(public, "AwsSolutions-APIG4", reason)
            acknowledge(public, "AwsSolutions-COG4", reason)
        for signed in self.scheduler_methods:
            reason = (
                "SigV4 by design: the EventBridge Scheduler API's requests are signed with a tenant's "
                "access key, and the API function verifies every signature (shared/domain/sigv4.py) "
                "before anything is read or written; an API Gateway authorizer could not, as it never "
                "sees the body the signature covers. IAM authorization would need the callers to be "
                "IAM principals of this account, which tenants are not."
            )
            acknowledge(signed, "AwsSolutions-APIG4", reason)
            acknowledge(signed, "AwsSolutions-COG4", reason)
        for signed in self.iam_methods:
            acknowledge(
                signed,
                "AwsSolutions-COG4",
                "AWS_IAM authorization by design: these routes are for AWS roles of the deployment's own "
                "account, granted execute-api:Invoke on exactly these methods by grant_register; API "
                "Gateway verifies each request's SigV4 signature and the caller's IAM policy, and the "
                "function maps the verified role to the tenant the grant named. A Cognito user pool would "
                "be a second identity system for machine callers that have IAM credentials already.",
            )
        for public in self.console_methods:
            reason = (
                "Public by design: the web console's static files (HTML, JavaScript, CSS and their "
                "licences, built into the function) hold no data; the console signs its user in "
                "with an API key and calls the /v1 routes with it, each checked by the authorizer."
            )
            acknowledge(public, "AwsSolutions-APIG4", reason)
            acknowledge(public, "AwsSolutions-COG4", reason)

    def _acknowledge_gateway_findings(self) -> None:
        """cdk-nag's findings on the REST API, its stage and API Gateway's CloudWatch role."""
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
            "No WAF: every route but the OpenAPI document and Swagger UI needs an API key, "
            "checked by the Lambda authorizer before the function runs (a request without the "
            "Authorization header is refused by API Gateway without invoking anything), or, on "
            "/iam/v1, a SigV4 signature and IAM policy API Gateway verifies itself; each "
            "tenant is rate limited by the API function and the stage is throttled. A web ACL "
            "costs a fixed monthly fee against Sundial's near-zero idle cost: add one in front "
            "of the stage for IP rules or bot control.",
        )
        acknowledge(
            stage,
            "AwsSolutions-APIG6",
            "No execution logging: API Gateway writes it to a log group it creates itself "
            "(API-Gateway-Execution-Logs_<api id>/<stage>), outside the stack and never expiring. "
            "The stage's JSON access log (APIG1) records every request with status, latencies, "
            "gateway, authorizer and integration errors and the caller's tenant; the authorizer "
            "and the API function log each request with Powertools; X-Ray traces both.",
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


@jsii.implements(IStringProducer)
class _Joined:
    """The grants as the ``iam_roles`` setting holds them, when the template is written."""

    def __init__(self, entries: list[str]) -> None:
        self.entries = entries

    def produce(self, context: IResolveContext) -> str:
        return " ".join(self.entries)


def scheduler_statements(storage: Storage, queues: Queues, signing: Signing) -> list[iam.PolicyStatement]:
    """What the EventBridge Scheduler API's routes do, as the API function does them: the table
    (tasks, schedule names and groups, access keys, the tenants' limits and rate), staging a task
    due soon, and reading an access key's secret back to verify a request's signature."""
    return [
        *storage.access_statements(actions=API_TABLE_ACTIONS, query_indexes=[LIST_INDEX_NAME]),
        queues.sends_of(names.API),
        *signing.verifier_statements(),
    ]


class SchedulerFunctionUrl(Construct):
    """The EventBridge Scheduler API from a Lambda function URL (``sundial:schedulerFunctionUrl``),
    for clients whose SigV4 ``Authorization`` header does not come through API Gateway's REST API
    as they signed it.

    A small function of its own, not the API function: the API's other routes rely on API
    Gateway's authorizer, which a function URL does not run. It has the API function's code (its
    handler :data:`names.SCHEDULER_URL_HANDLER`, for the function URL's events), the API function's
    memory and timeout, and of its role and environment only what the scheduler routes need
    (:func:`scheduler_statements`). The URL's auth type is NONE: Lambda checks nothing, and the
    function verifies each request's signature against the tenant's access key before it reads or
    writes anything ("Control access to Lambda function URLs",
    https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploymentSettings,
        bundle: LambdaBundle,
        storage: Storage,
        queues: Queues,
        signing: Signing,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.handler = ServiceFunction(
            self,
            names.SCHEDULER_URL_FUNCTION_ID,
            bundle=bundle,
            settings=settings,
            handler=names.SCHEDULER_URL_HANDLER,
            description="Sundial EventBridge Scheduler API on a function URL (SigV4 verified by the function)",
            statements=scheduler_statements(storage, queues, signing),
            environment=function_environment(
                settings,
                table_name=storage.table.table_name,
                **queues.staging_resources(),
                own_prefix=f"{stack.stack_name}-",
                account_id=stack.account,
                **signing.resources(),
            ),
            memory_size=API_MEMORY_MB,
            timeout=API_TIMEOUT,
        )
        self.function_url = self.handler.function.add_function_url(auth_type=lambda_.FunctionUrlAuthType.NONE)
        self.url = self.function_url.url
