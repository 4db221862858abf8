"""The EventBridge Scheduler API (docs/eventbridge.md), from either of its two front doors:
``/scheduler/{proxy+}`` of the REST API, a route of the API function with no authorizer (an
authorizer never sees the body SigV4 signs), whose proxy event :func:`handler` reads; and the
scheduler function's URL (auth type NONE: the function verifies), whose payload 2.0 event
functions/scheduler/handler.py reads (:func:`from_url`). Either way: the operation bound and
checked against botocore's model of the service (shared/api/scheduler_protocol.py) -> the
scheduler service over the task service -> the service's answer or error.

Who calls: the request's SigV4 signature names an access key (``POST
/v1/tenants/{id}/access-keys``), whose tenant it is, verified against the key's secret over the
path as the SDK sent it, for this deployment's Region (shared/domain/sigv4.py). `make run`, unless
told to verify (its ``scheduler_auth`` setting, local/settings.py), puts its default tenant in
``requestContext.authorizer`` instead, read as any signature's (neither API Gateway on a route
without an authorizer nor a function URL without authorization ever fills it, so no client can)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from functions.api.common import access_keys, scheduler
from shared.api import scheduler_protocol as protocol
from shared.domain.errors import SchedulerApiError
from shared.domain.sigv4 import SignatureRefused, verify
from shared.domain.times import utc_now
from shared.observability import logger


def place_of(context: Any) -> tuple[str, str]:
    """The region and account the function runs in, from its own ARN."""
    arn = str(getattr(context, "invoked_function_arn", "") or "arn:aws:lambda:us-east-1:123456789012:function:local")
    parts = arn.split(":")
    return parts[3], parts[4]


@dataclass(frozen=True)
class Signed:
    """A request as its signature covers it, whichever front door it came through."""

    method: str
    route_path: str
    """The path below :data:`~shared.api.scheduler_protocol.PREFIX` that names the operation."""
    query: list[tuple[str, str]]
    headers: list[tuple[str, str]]
    """Every header as (name, value), a header sent more than once once per value."""
    body: bytes | None
    authorizer: dict[str, Any]

    def wire_path(self, operation: str, members: dict[str, str]) -> str:
        return protocol.PREFIX + protocol.wire_path(operation, members)


@dataclass(frozen=True)
class ThroughGateway(Signed):
    """From API Gateway's proxy event: its path decoded, the stage (or a custom domain's base
    path) before it in ``requestContext.path``."""

    sent_prefix: str = ""

    def wire_path(self, operation: str, members: dict[str, str]) -> str:
        return self.sent_prefix + super().wire_path(operation, members)


@dataclass(frozen=True)
class ThroughUrl(Signed):
    """From a function URL's event: the path as the client sent it (``rawPath``)."""

    raw_path: str = ""

    def wire_path(self, operation: str, members: dict[str, str]) -> str:
        return self.raw_path


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


def _gateway_headers(event: dict[str, Any]) -> list[tuple[str, str]]:
    """A proxy event's headers, a repeated one once per value: ``multiValueHeaders`` holds them
    all, ``headers`` only each one's last value ("Working with multi-value headers")."""
    multi = event.get("multiValueHeaders") or {}
    if multi:
        return [(name, str(value)) for name, values in multi.items() for value in (values or ())]
    return [(name, str(value)) for name, value in (event.get("headers") or {}).items()]


def from_gateway(event: dict[str, Any]) -> ThroughGateway:
    multi = event.get("multiValueQueryStringParameters") or {}
    query = [(name, value) for name, values in multi.items() for value in values] or list(
        (event.get("queryStringParameters") or {}).items()
    )
    path = str(event.get("path") or "")
    return ThroughGateway(
        method=str(event.get("httpMethod") or "GET"),
        route_path=path.removeprefix(protocol.PREFIX) or "/",
        query=query,
        headers=_gateway_headers(event),
        body=_body(event),
        authorizer=(event.get("requestContext") or {}).get("authorizer") or {},
        sent_prefix=_sent_prefix(event),
    )


def from_url(event: dict[str, Any]) -> ThroughUrl:
    """A function URL's event: the client's endpoint is the URL itself or the URL and
    ``/scheduler`` (as on API Gateway), whichever it was given. Its headers come joined by commas
    and lowercased, as the canonical form of a signature wants them."""
    context = event.get("requestContext") or {}
    raw_path = str(event.get("rawPath") or "/")
    route_path = raw_path.removeprefix(protocol.PREFIX) if raw_path.startswith(protocol.PREFIX + "/") else raw_path
    return ThroughUrl(
        method=str((context.get("http") or {}).get("method") or "GET"),
        route_path=route_path or "/",
        query=parse_qsl(str(event.get("rawQueryString") or ""), keep_blank_values=True),
        headers=[(name, str(value)) for name, value in (event.get("headers") or {}).items()],
        body=_body(event),
        authorizer=context.get("authorizer") or {},
        raw_path=raw_path,
    )


def tenant_of(request: Signed, operation: str, members: dict[str, str], region: str) -> str:
    """The caller's tenant: the local runtime's, or the one whose access key signed the request."""
    if request.authorizer.get("tenant"):
        return str(request.authorizer["tenant"])
    tenants: dict[str, str] = {}

    def secret_of(key_id: str) -> str | None:
        found = access_keys().secret(key_id)
        if found is None:
            return None
        tenants[key_id] = found[0]
        return found[1]

    try:
        key_id, _ = verify(
            method=request.method,
            wire_path=request.wire_path(operation, members),
            query=request.query,
            headers=request.headers,
            body=request.body or b"",
            secret_of=secret_of,
            now=utc_now(),  # wall: a signature is dated by the client's clock, as AWS checks it
            service=protocol.SERVICE,
            region=region,
        )
    except SignatureRefused as refused:
        raise SchedulerApiError(refused.code, refused.message) from refused
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


def serve(request: Signed, context: Any) -> dict[str, Any]:
    region, account = place_of(context)
    try:
        operation, members = protocol.route(request.method, request.route_path)
        tenant = tenant_of(request, operation, members, region)
        query: dict[str, list[str]] = {}
        for name, value in request.query:
            query.setdefault(name, []).append(value)
        bound = protocol.bind(operation, members, query, request.body)
        result = scheduler(region, account).call(tenant, operation, bound.params)
        return _http(protocol.answer(operation, result))
    except SchedulerApiError as error:
        return _http(protocol.error_answer(error))
    except Exception:
        logger.exception("the scheduler API failed")
        return _http(protocol.error_answer(SchedulerApiError("InternalServerException", "Unexpected error.")))


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A request through API Gateway (the API function hands it every ``/scheduler`` path)."""
    return serve(from_gateway(event), context)
