"""API Gateway proxy events and a fake LambdaContext: the one place tests build them."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass
class FakeLambdaContext:
    function_name: str = "sundial-test"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:sundial-test"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 10_000


def api_event(
    method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """A REST API (v1) Lambda proxy event for ``METHOD /path?query``."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True)) or None
    if body is not None and not isinstance(body, str):
        body = json.dumps(body)
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return {
        "resource": "/v1/{proxy+}",
        "path": parts.path,
        "httpMethod": method.upper(),
        "headers": all_headers,
        "multiValueHeaders": {k: [v] for k, v in all_headers.items()},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": {"proxy": parts.path.removeprefix("/v1/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/v1/{proxy+}",
            "httpMethod": method.upper(),
            "path": "/prod" + parts.path,
            "stage": "prod",
            "requestId": str(uuid.uuid4()),
            "identity": {"sourceIp": "127.0.0.1", "userAgent": "pytest"},
            "accountId": "123456789012",
            "apiId": "local",
        },
        "body": body,
        "isBase64Encoded": False,
    }
