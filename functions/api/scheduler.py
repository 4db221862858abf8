"""The EventBridge Scheduler API (docs/eventbridge.md): ``/scheduler/{proxy+}``, a route of the API
function with no authorizer (an authorizer never sees the body SigV4 signs) -> the operation
bound and checked against botocore's model of the service (shared/api/scheduler_protocol.py) ->
the scheduler service over the task service -> the service's answer or error (the API function's
handler hands it every ``/scheduler`` request: functions/api/handler.py).

Who calls: the request's SigV4 signature names an access key (``POST
/v1/tenants/{id}/access-keys``), whose tenant it is, verified against the key's secret over the
path as the SDK sent it (shared/domain/sigv4.py). The local runtime puts its default tenant in
``requestContext.authorizer`` instead, as `make run` reads any signature (API Gateway never fills
it on a route without an authorizer, so no client can)."""

from __future__ import annotations

import base64
from typing import Any

from functions.api.common import access_keys, scheduler
from shared.api import scheduler_protocol as protocol
from shared.domain.eventbridge import ServiceError
from shared.domain.sigv4 import SignatureRefused, verify
from shared.domain.times import utc_now
from shared.observability import logger


def place_of(context: Any) -> tuple[str, str]:
    """The region and account the function runs in, from its own ARN."""
    arn = str(getattr(context, "invoked_function_arn", "") or "arn:aws:lambda:us-east-1:123456789012:function:local")
    parts = arn.split(":")
    return parts[3], parts[4]


def _query_pairs(event: dict[str, Any]) -> list[tuple[str, str]]:
    multi = event.get("multiValueQueryStringParameters") or {}
    if multi:
        return [(name, value) for name, values in multi.items() for value in values]
    return list((event.get("queryStringParameters") or {}).items())


def _sent_prefix(event: dict[str, Any]) -> str:
    """What precedes the API's own path in the URL the client signed: the stage (``/prod``) on API
    Gateway's own URL, nothing behind a custom domain. API Gateway's proxy event gives the
    resource path in ``path`` and the path the client called, stage included, in
    ``requestContext.path`` ("Input format of a Lambda function for proxy integration",
    https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html).
    :func:`~shared.api.scheduler_protocol.wire_path` rebuilds the encoding the SDK signed from the
    operation's members, so the path may come decoded or as sent. Not checked on AWS: whether API
    Gateway hands on an encoded ``/`` (``%2F``, only in the tag operations' schedule group ARNs)
    decoded or as sent, in either field. Any of the four combinations is read alike
    (tests/integration/test_scheduler_sigv4.py); when the two fields differ in their encoding, the
    prefix is what precedes the API's own ``/scheduler/``."""
    context = event.get("requestContext") or {}
    full, path = str(context.get("path") or ""), str(event.get("path") or "")
    if path and full.endswith(path):
        return full[: -len(path)]
    at = full.find(protocol.PREFIX + "/")
    return full[:at] if at > 0 else ""


def tenant_of(event: dict[str, Any], operation: str, members: dict[str, str], body: bytes | None) -> str:
    """The caller's tenant: the local runtime's, or the one whose access key signed the request."""
    context = (event.get("requestContext") or {}).get("authorizer") or {}
    if context.get("tenant"):
        return str(context["tenant"])
    tenants: dict[str, str] = {}

    def secret_of(key_id: str) -> str | None:
        found = access_keys().secret(key_id)
        if found is None:
            return None
        tenants[key_id] = found[0]
        return found[1]

    try:
        key_id, _ = verify(
            method=str(event.get("httpMethod") or "GET"),
            wire_path=_sent_prefix(event) + protocol.PREFIX + protocol.wire_path(operation, members),
            query=_query_pairs(event),
            headers=event.get("headers") or {},
            body=body or b"",
            secret_of=secret_of,
            now=utc_now(),  # wall: a signature is dated by the client's clock, as AWS checks it
            service=protocol.SERVICE,
        )
    except SignatureRefused as refused:
        raise ServiceError(refused.code, refused.message) from refused
    return tenants[key_id]


def serves(event: dict[str, Any]) -> bool:
    """Whether the request is the EventBridge Scheduler API's (``/scheduler`` and below)."""
    path = str(event.get("path") or "")
    return path == protocol.PREFIX or path.startswith(f"{protocol.PREFIX}/")


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
        operation, members = protocol.route(str(event.get("httpMethod") or "GET"), path)
        body = _body(event)
        tenant = tenant_of(event, operation, members, body)
        query = event.get("multiValueQueryStringParameters") or {
            k: [v] for k, v in (event.get("queryStringParameters") or {}).items()
        }
        request = protocol.bind(operation, members, query, body)
        result = scheduler(*place_of(context)).call(tenant, operation, request.params)
        return _http(protocol.answer(operation, result))
    except ServiceError as error:
        return _http(protocol.error_answer(error))
    except Exception:
        logger.exception("the scheduler API failed")
        return _http(protocol.error_answer(ServiceError("InternalServerException", "Unexpected error.")))
