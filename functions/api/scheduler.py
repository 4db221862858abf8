"""The EventBridge Scheduler API (docs/eventbridge.md): ``/scheduler/{proxy+}``, a route of the API
function with no authorizer (an authorizer never sees the body SigV4 signs) -> the operation
bound and checked against botocore's model of the service (shared/api/scheduler_protocol.py) ->
the scheduler service over the task service -> the service's answer or error. The stack routes
nothing here until SigV4 is verified (docs/eventbridge.md, section 5); the local runtime does.

Who calls: the local runtime puts its default tenant in ``requestContext.authorizer``, as `make
run` reads any signature (API Gateway never fills it on a route without an authorizer, so a
client cannot). Verifying SigV4 against tenants' access keys is not built yet (docs/eventbridge.md,
section 5): without that context the request is refused as the service refuses an unknown key."""

from __future__ import annotations

import base64
from functools import cache
from typing import Any

from shared.api import scheduler_protocol as protocol
from shared.domain.eventbridge import ServiceError
from shared.observability import logger
from shared.services.eventbridge import Place, SchedulerService
from shared.services.factory import build_task_service
from shared.settings import Settings, from_env
from shared.store.eventbridge import DynamoSchedules


@cache
def settings() -> Settings:
    return from_env()


@cache
def service(region: str, account: str) -> SchedulerService:
    tasks = build_task_service(settings())
    return SchedulerService(tasks, DynamoSchedules(), Place(region, account), tasks.clock)


def place_of(context: Any) -> tuple[str, str]:
    """The region and account the function runs in, from its own ARN."""
    arn = str(getattr(context, "invoked_function_arn", "") or "arn:aws:lambda:us-east-1:123456789012:function:local")
    parts = arn.split(":")
    return parts[3], parts[4]


def tenant_of(event: dict[str, Any]) -> str:
    context = (event.get("requestContext") or {}).get("authorizer") or {}
    tenant = context.get("tenant")
    if not tenant:
        raise ServiceError(
            "UnrecognizedClientException",
            "The security token included in the request is invalid (access keys are not verified yet).",
        )
    return str(tenant)


def _body(event: dict[str, Any]) -> bytes | None:
    body = event.get("body")
    if body is None:
        return None
    return base64.b64decode(body) if event.get("isBase64Encoded") else str(body).encode()


def _http(answer: tuple[int, dict[str, str], bytes]) -> dict[str, Any]:
    status, headers, body = answer
    return {"statusCode": status, "headers": headers, "body": body.decode()}


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    path = event.get("path") or ""
    if path.startswith(protocol.PREFIX):
        path = path[len(protocol.PREFIX) :] or "/"
    try:
        tenant = tenant_of(event)
        operation, members = protocol.route(str(event.get("httpMethod") or "GET"), path)
        query = event.get("multiValueQueryStringParameters") or {
            k: [v] for k, v in (event.get("queryStringParameters") or {}).items()
        }
        request = protocol.bind(operation, members, query, _body(event))
        result = service(*place_of(context)).call(tenant, operation, request.params)
        return _http(protocol.answer(operation, result))
    except ServiceError as error:
        return _http(protocol.error_answer(error))
    except Exception:
        logger.exception("the scheduler API failed")
        return _http(protocol.error_answer(ServiceError("InternalServerException", "Unexpected error.")))
