"""API Gateway's side of a Lambda proxy integration (REST API, payload 1.0), for the local runtime
and the tests: an HTTP request becomes the event API Gateway would send, and the function's
answer becomes the HTTP response."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STAGE = "prod"


@dataclass
class LocalContext:
    """The parts of a LambdaContext the handlers and Powertools read."""

    function_name: str = "sundial-local"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:sundial-local"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 10_000


def proxy_event(
    method: str,
    path: str,
    query: dict[str, list[str]] | None = None,
    headers: dict[str, str] | None = None,
    body: str | None = None,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    headers = dict(headers or {})
    query = query or {}
    return {
        "resource": "/v1/{proxy+}",
        "path": path,
        "httpMethod": method.upper(),
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": {"proxy": path.removeprefix("/v1/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/v1/{proxy+}",
            "httpMethod": method.upper(),
            # as behind a custom domain: the stage is not part of the path the API answers on
            "path": path,
            "stage": STAGE,
            "requestId": str(uuid.uuid4()),
            "identity": {"sourceIp": source_ip, "userAgent": headers.get("User-Agent", "")},
            "accountId": "123456789012",
            "apiId": "local",
        },
        "body": body,
        "isBase64Encoded": False,
    }


def http_answer(result: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    """The proxy result as (status, headers, body bytes)."""
    headers = [(k, v) for k, v in (result.get("headers") or {}).items()]
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers += [(name, value) for value in values]
    body = result.get("body") or ""
    raw = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
    return int(result["statusCode"]), headers, raw


def authorizer_event(event: dict[str, Any]) -> dict[str, Any]:
    """The REQUEST authorizer event API Gateway sends for a proxy event."""
    context = event["requestContext"]
    method_arn = (
        f"arn:aws:execute-api:us-east-1:{context['accountId']}:{context['apiId']}/{context['stage']}"
        f"/{event['httpMethod']}{event['path']}"
    )
    return {
        "type": "REQUEST",
        "methodArn": method_arn,
        "resource": event["resource"],
        "path": event["path"],
        "httpMethod": event["httpMethod"],
        "headers": event["headers"],
        "multiValueHeaders": event["multiValueHeaders"],
        "queryStringParameters": event["queryStringParameters"],
        "pathParameters": event["pathParameters"],
        "stageVariables": event["stageVariables"],
        "requestContext": context,
    }


UNAUTHORIZED = {"error": {"code": "unauthorized", "message": "a valid API key is needed: Authorization: Bearer <key>"}}
"""API Gateway's answer when the authorizer refuses (the stack's gateway response says the same)."""

Authorize = Callable[[dict[str, Any], str | None], dict[str, Any]]


def with_authorizer(
    api: Callable[[dict[str, Any], Any], dict[str, Any]],
    authorize: Authorize,
    public: Callable[[str], bool],
    anonymous: str | None,
) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The API as API Gateway runs it: the authorizer first on every path but the ``public`` ones,
    its context handed to the function; refused: ``401``. Not cached (a revoked key stops at
    once). Its one difference from AWS: no ``Authorization`` header acts as ``anonymous``."""

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if not public(event["path"]):
            try:
                policy = authorize(authorizer_event(event), anonymous)
            except Exception as exc:
                if str(exc) != "Unauthorized":
                    raise
                return {
                    "statusCode": 401,
                    "headers": {"Content-Type": "application/json", "WWW-Authenticate": "Bearer"},
                    "body": json.dumps(UNAUTHORIZED),
                }
            event = {
                **event,
                "requestContext": {
                    **event["requestContext"],
                    "authorizer": {**policy["context"], "principalId": policy["principalId"]},
                },
            }
        return api(event, context)

    return handle
