"""A Lambda function URL's side of an invocation, for the local runtime and the tests: an HTTP
request becomes the event a function URL hands its function (payload format 2.0), and the
function's answer the HTTP response ("Invoking Lambda function URLs", request and response payloads,
https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html).

The stack serves the EventBridge Scheduler API from a function URL with no authorization of its
own (infra/api.py): API Gateway (REST) keeps a SigV4 ``Authorization`` header from its function
(local/apigw.py, ``drops_authorization``), a function URL hands on every header, and the function
verifies the signature itself. `make run` serves ``/scheduler`` the same way."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from local.apigw import Headers, header_pairs, trace_id

URL_ID = "sundiallocalscheduler"
"""The function URL's id (a real one is 32 characters of the URL's host, before ``.lambda-url.``)."""

TEXT_TYPES = (
    "text/",
    "application/json",
    "application/javascript",
    "application/xml",
    "application/x-www-form-urlencoded",
)
"""Bodies a function URL hands over as text; any other content type arrives base64-encoded
("If the content type of the request is binary, the body is base64-encoded": the same page)."""


NOT_HANDED_ON = frozenset(("connection", "keep-alive", "x-forwarded-for", "x-forwarded-port", "x-forwarded-proto"))
"""Headers of the client's that the function does not see as sent: the connection's own (the
recorded request, sent by python-requests with ``Connection: keep-alive``, has none) and the
``x-forwarded-*`` that Lambda sets itself."""


def is_text(content_type: str | None) -> bool:
    media = (content_type or "").split(";")[0].strip().lower()
    return not media or media.startswith(TEXT_TYPES) or media.endswith(("+json", "+xml"))


def url_event(
    method: str,
    raw_path: str,
    raw_query: str = "",
    headers: Headers | None = None,
    body: bytes | None = None,
    source_ip: str = "127.0.0.1",
    *,
    scheme: str = "http",
) -> dict[str, Any]:
    """The event for a request to the function URL: ``raw_path`` and ``raw_query`` as the client
    sent them (percent-encoded), header names lowercased and a header sent more than once as its
    values joined by commas, cookies apart, query values of one name joined by commas, the body as
    text or base64. Lambda adds ``x-amzn-trace-id`` and ``x-forwarded-*`` as the recorded requests
    to a function URL show (localstack/localstack ``tests/aws/services/lambda_/test_lambda.snapshot.json``,
    ``TestLambdaURL::test_lambda_url_echo_http_fixture_default``, recorded 2025-11-24: lowercased
    names, ``content-length`` kept, the path as sent)."""
    now_s = time.time()
    joined: dict[str, list[str]] = {}
    cookies: list[str] = []
    for name, value in header_pairs(headers):
        lowered = name.lower()
        if lowered == "cookie":
            cookies += [c.strip() for c in value.split(";") if c.strip()]
        elif lowered not in NOT_HANDED_ON:
            joined.setdefault(lowered, []).append(value)
    single = {name: ",".join(values) for name, values in joined.items()}
    single.setdefault("x-amzn-trace-id", trace_id(now_s))
    host = single.get("host", "")
    port = host.rsplit(":", 1)[1] if ":" in host else ("443" if scheme == "https" else "80")
    single.update({"x-forwarded-for": source_ip, "x-forwarded-port": port, "x-forwarded-proto": scheme})
    query: dict[str, list[str]] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        query.setdefault(name, []).append(value)
    text = is_text(single.get("content-type"))
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": single,
        "queryStringParameters": {k: ",".join(v) for k, v in query.items()} or None,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": URL_ID,
            "domainName": host,
            "domainPrefix": host.split(".")[0].split(":")[0],
            "http": {
                "method": method.upper(),
                "path": raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": single.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now_s)),
            "timeEpoch": int(now_s * 1000),
        },
        "body": None,
        "pathParameters": None,
        "isBase64Encoded": not text and bool(body),
        "stageVariables": None,
    }
    if cookies:
        event["cookies"] = cookies
    if body:
        event["body"] = body.decode("utf-8", errors="replace") if text else base64.b64encode(body).decode()
    return event


def url_answer(result: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    """The function's answer as the function URL sends it: a result with ``statusCode`` is the
    response it describes (cookies as ``Set-Cookie``); any other JSON value is a ``200`` with that
    JSON as its body (the same page, "Response payload format")."""
    if not isinstance(result, dict) or "statusCode" not in result:
        return 200, [("Content-Type", "application/json")], json.dumps(result).encode()
    headers: list[tuple[str, str]] = list((result.get("headers") or {}).items())
    headers += [("Set-Cookie", cookie) for cookie in result.get("cookies") or ()]
    body = result.get("body") or ""
    raw = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode()
    return int(result["statusCode"]), headers, raw


Function = Callable[[dict[str, Any], Any], dict[str, Any]]


def as_default_tenant(function: Function, tenant: str) -> Function:
    """The scheduler function as `make run` runs it unless told to verify signatures
    (``LocalSettings.scheduler_auth``): every request acts as ``tenant``, put in the event's authorizer
    context, where a function URL without authorization puts nothing (so no client can)."""

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        acting = {"tenant": tenant, "role": "tenant", "principalId": tenant}
        return function({**event, "requestContext": {**event["requestContext"], "authorizer": acting}}, context)

    return handle
