"""API Gateway's side of a Lambda proxy integration (REST API, payload 1.0), for the local runtime
and the tests: an HTTP request becomes the event API Gateway would send, and the function's
answer becomes the HTTP response."""

from __future__ import annotations

import base64
import contextvars
import json
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infra.names import API_PUBLIC_PATHS, API_STAGE_NAME, API_VERSION_PATH, CONSOLE_PATH, SCHEDULER_PATH
from shared.api.errors import MethodNotAllowed
from shared.domain.errors import IamRouteUnavailable, SundialError
from shared.domain.iam_callers import IAM_PREFIX, IAM_REGISTER_PATHS
from shared.topology import (
    API_FUNCTION_MEMORY_MB,
    API_FUNCTION_TIMEOUT_S,
    API_INTEGRATION_TIMEOUT_S,
    FUNCTION_FAILED,
    INTEGRATION_TIMED_OUT,
    LAMBDA_RESPONSE_MAX_BYTES,
    GatewayAnswer,
)

STAGE = API_STAGE_NAME
ACCOUNT_ID = "123456789012"
API_ID = "local"
DEPLOYMENT_ID = "local1"
RESOURCE_ID = "local1"
BINARY_MEDIA_TYPES: tuple[str, ...] = ()
"""The stack's REST API has no binary media types (infra/api.py): every body reaches the function
as text."""
IDENTITY: dict[str, Any] = dict.fromkeys(
    (
        "accessKey",
        "accountId",
        "caller",
        "cognitoAuthenticationProvider",
        "cognitoAuthenticationType",
        "cognitoIdentityId",
        "cognitoIdentityPoolId",
        "principalOrgId",
        "sourceIp",
        "user",
        "userAgent",
        "userArn",
    )
)
"""``requestContext.identity`` of a request without IAM authorization, as recorded: every member
there, null but the caller's address and user agent."""


@dataclass
class LocalContext:
    """The parts of a LambdaContext the handlers and Powertools read."""

    function_name: str = "sundial-local"
    memory_limit_in_mb: int = API_FUNCTION_MEMORY_MB
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:sundial-local"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"
    timeout_s: float = API_FUNCTION_TIMEOUT_S
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.started + self.timeout_s - time.monotonic()) * 1000))


DROPPED_HEADERS = frozenset(
    name.lower()
    for name in (
        "Connection",
        "Content-Length",
        "Content-MD5",
        "Expect",
        "Max-Forwards",
        "Proxy-Authenticate",
        "Server",
        "TE",
        "Transfer-Encoding",
        "Trailer",
        "Upgrade",
        "WWW-Authenticate",
    )
)
"""Request headers API Gateway (REST) does not hand a Lambda proxy integration. AWS's recordings
of proxy events (tests/data/aws/apigateway-proxy-event-*.json: POSTs with bodies, sent by
python-requests with ``Content-Length`` and ``Connection``) have neither; the list is the one LocalStack's API
Gateway drops, written against AWS's answers (localstack/localstack,
``services/apigateway/next_gen/execute_api/header_utils.py``)."""
CAPITALIZED_HEADERS = {"authorization": "Authorization", "user-agent": "User-Agent"}
"""Headers whose name reaches the function capitalized however the client wrote it, as CloudFront
forwards them ("Add custom headers to origin requests", CloudFront developer guide); the
recordings show every other name as the client wrote it (``tEsT-HEADeR``)."""
SIGV4_PREFIX = "AWS4-HMAC-SHA256"


def drops_authorization(value: str) -> bool:
    """Whether API Gateway keeps an ``Authorization`` header from the function: a SigV4 signature.
    AWS's recording of a signed call to a REST API method without authorization (EventBridge's API
    Gateway target signs its requests: tests/data/aws/apigateway-proxy-event-signed-call.json) shows
    its ``X-Amz-Date`` and ``X-Amz-Security-Token`` reaching the function and no ``Authorization``;
    recorded bearer and other values pass. A footnote of "Amazon API Gateway important notes"
    (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-known-issues.html)
    says the same of a SigV4 ``Authorization``. Hence the stack serves the EventBridge Scheduler
    API from a Lambda function URL (docs/eventbridge.md, section 5), and `make run` serves
    ``/scheduler`` as that URL does (local/function_url.py)."""
    return value.strip().startswith(SIGV4_PREFIX)


Headers = Mapping[str, str] | Sequence[tuple[str, str]]


def header_pairs(headers: Headers | None) -> list[tuple[str, str]]:
    """Headers as the (name, value) pairs they arrived in, repeated names kept."""
    if headers is None:
        return []
    return list(headers.items()) if isinstance(headers, Mapping) else list(headers)


@dataclass(frozen=True)
class Resource:
    """The REST API's resource that answers a path (infra/api.py builds the same tree)."""

    path: str
    proxy: str | None = None
    """The ``{proxy+}`` path parameter, for a proxy resource."""


SCHEDULER_RESOURCE = f"/{SCHEDULER_PATH}/{{proxy+}}"
"""The EventBridge Scheduler API's resource, which has no authorizer."""


def resource_of(path: str) -> Resource:
    """The stack's resource for ``path`` (the stage left out): ``/v1/openapi.json`` and
    ``/v1/docs``, ``/console`` and ``/console/{proxy+}``, ``/scheduler/{proxy+}``, the IAM routes
    (``/iam/v1/tasks``, ``/iam/v1/tasks:batch``), and ``/v1/{proxy+}`` for everything else under
    ``/v1``."""
    version, console, scheduler = (f"/{p}" for p in (API_VERSION_PATH, CONSOLE_PATH, SCHEDULER_PATH))
    if path in {f"{version}/{p}" for p in API_PUBLIC_PATHS} or path == console or path in IAM_REGISTER_PATHS:
        return Resource(path)
    for base in (console, scheduler, version):
        if path.startswith(f"{base}/"):
            return Resource(f"{base}/{{proxy+}}", path.removeprefix(f"{base}/"))
    return Resource(f"{version}/{{proxy+}}", path.removeprefix(f"{version}/").lstrip("/"))


RESERVED = frozenset(":/?#[]@!$&'()*+,;=%")
"""Characters whose percent-encoding API Gateway keeps in the path it hands the function: AWS's
recording of a path sent with ``test%2Balias`` has ``test%2Balias`` in ``path``,
``requestContext.path`` and ``pathParameters`` (tests/data/aws/apigateway-proxy-event-encoded-path.json),
as a decoded ``+`` or ``/`` would mean another path. Other characters (a space, anything
beyond ASCII) arrive decoded: Powertools' resolver, written against API Gateway's events, matches
them decoded ("API GW/ALB decode non-safe URI chars", its ``_UNSAFE_URI``)."""


def gateway_path(sent: str) -> str:
    """The path as API Gateway hands it on: ``sent`` (percent-encoded, as on the wire) with every
    encoding decoded but those of :data:`RESERVED`, as UTF-8."""
    out = bytearray()
    at = 0
    while at < len(sent):
        char = sent[at]
        escape = sent[at + 1 : at + 3]
        if char == "%" and len(escape) == 2 and all(c in "0123456789abcdefABCDEF" for c in escape):
            byte = int(escape, 16)
            if chr(byte) in RESERVED:
                out += sent[at : at + 3].encode()
            else:
                out.append(byte)
            at += 3
            continue
        out += char.encode()
        at += 1
    return out.decode("utf-8", errors="replace")


def trace_id(now_s: float) -> str:
    """An X-Ray trace header as API Gateway adds one ("Tracing header", X-Ray developer guide)."""
    return f"Root=1-{int(now_s):08x}-{uuid.uuid4().hex[:24]}"


def gateway_headers(
    sent: Headers | None, source_ip: str, scheme: str, port: int | None, now_s: float, *, drop_signature: bool = True
) -> list[tuple[str, str]]:
    """What of the client's headers the function receives, with those API Gateway adds: the
    dropped ones and a SigV4 ``Authorization`` left out, ``X-Amzn-Trace-Id`` (unless the client
    sent one, which API Gateway continues), ``X-Forwarded-For`` (the caller appended to what the
    client sent), ``X-Forwarded-Port`` and ``X-Forwarded-Proto``. The recorded events also carry
    CloudFront's headers (``CloudFront-*``, ``Via``, ``X-Amz-Cf-Id``): an edge-optimized API's;
    the stack's is regional (infra/api.py), which has no CloudFront distribution in front of it
    ("API endpoint types for REST APIs", API Gateway developer guide), so they are not added."""
    kept: list[tuple[str, str]] = []
    forwarded_for: list[str] = []
    traced = False
    for name, value in header_pairs(sent):
        lowered = name.lower()
        if lowered in DROPPED_HEADERS or (lowered == "authorization" and drop_signature and drops_authorization(value)):
            continue
        if lowered == "x-forwarded-for":
            forwarded_for.append(value)
            continue
        if lowered in ("x-forwarded-port", "x-forwarded-proto"):
            continue  # API Gateway's own values
        traced = traced or lowered == "x-amzn-trace-id"
        kept.append((CAPITALIZED_HEADERS.get(lowered, name), value))
    if not traced:
        kept.append(("X-Amzn-Trace-Id", trace_id(now_s)))
    kept.append(("X-Forwarded-For", ", ".join([*forwarded_for, source_ip])))
    kept.append(("X-Forwarded-Port", str(port or (443 if scheme == "https" else 80))))
    kept.append(("X-Forwarded-Proto", scheme))
    return kept


def single_and_multi(pairs: Sequence[tuple[str, str]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``headers`` (each name's last value) and ``multiValueHeaders`` (every value, in order), as a
    proxy event has them ("Working with multi-value headers": a header sent more than once keeps
    only its last value in ``headers``). Names are grouped whatever their case, under the first."""
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for sent, value in pairs:
        name = names.setdefault(sent.lower(), sent)
        single[name] = value
        multi.setdefault(name, []).append(value)
    return single, multi


def is_binary(content_type: str | None, binary_media_types: Sequence[str]) -> bool:
    """Whether API Gateway hands the body base64-encoded: its ``Content-Type`` is one of the API's
    binary media types ("Binary media types for REST APIs": ``*/*`` and ``type/*`` match too)."""
    if not content_type:
        return False
    media = content_type.split(";")[0].strip().lower()
    kind = media.split("/")[0]
    return any(t.lower() in (media, f"{kind}/*", "*/*") for t in binary_media_types)


def proxy_event(
    method: str,
    path: str,
    query: dict[str, list[str]] | None = None,
    headers: Headers | None = None,
    body: str | bytes | None = None,
    source_ip: str = "127.0.0.1",
    *,
    stage_in_path: bool = False,
    scheme: str = "http",
    binary_media_types: Sequence[str] = BINARY_MEDIA_TYPES,
    drop_signature: bool = True,
) -> dict[str, Any]:
    """The event API Gateway (REST API, Lambda proxy integration, payload 1.0) hands the function
    for a request, as AWS records it (tests/data/aws/apigateway-proxy-event-*.json, held by
    tests/integration/test_gateway_as_recorded.py; "Input format of a Lambda function for proxy
    integration", https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html).

    ``path`` is the path the client called as API Gateway hands it on (:func:`gateway_path`: decoded
    but for the encodings of reserved characters). With ``stage_in_path`` it begins with
    the stage (``/prod/v1/tasks``: the API's own URL), which API Gateway keeps in
    ``requestContext.path`` and takes out of ``path``; without, the client called as through a
    custom domain, whose paths have no stage, and both fields are the path called.
    ``drop_signature`` False keeps a SigV4 ``Authorization`` (the tests of what the function would
    do if AWS handed it on: :func:`drops_authorization`)."""
    now_s = time.time()
    called = path
    if stage_in_path:
        path = path.removeprefix(f"/{STAGE}") or "/"
    resource = resource_of(path)
    sent = header_pairs(headers)
    host = next((value for name, value in sent if name.lower() == "host"), "")
    port = int(host.rsplit(":", 1)[1]) if ":" in host and host.rsplit(":", 1)[1].isdigit() else None
    single, multi = single_and_multi(
        gateway_headers(sent, source_ip, scheme, port, now_s, drop_signature=drop_signature)
    )
    content_type = next((v for k, v in single.items() if k.lower() == "content-type"), None)
    encoded = body is not None and is_binary(content_type, binary_media_types)
    if body is None:
        text = None
    elif encoded:
        text = base64.b64encode(body if isinstance(body, bytes) else body.encode()).decode()
    else:
        text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    query = query or {}
    user_agent = next((v for k, v in single.items() if k.lower() == "user-agent"), None)
    return {
        "resource": resource.path,
        "path": path,
        "httpMethod": method.upper(),
        "headers": single or None,
        "multiValueHeaders": multi or None,
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": {"proxy": resource.proxy} if resource.proxy is not None else None,
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": API_ID,
            "deploymentId": DEPLOYMENT_ID,
            "domainName": host,
            "domainPrefix": host.split(".")[0].split(":")[0],
            "extendedRequestId": base64.b32encode(uuid.uuid4().bytes[:10]).decode()[:16],
            "httpMethod": method.upper(),
            "identity": {**IDENTITY, "sourceIp": source_ip, "userAgent": user_agent},
            "path": called,
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now_s)),
            "requestTimeEpoch": int(now_s * 1000),
            "resourceId": RESOURCE_ID,
            "resourcePath": resource.path,
            "stage": STAGE,
        },
        "body": text,
        "isBase64Encoded": encoded,
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
IAM_UNAVAILABLE = IamRouteUnavailable(
    "the IAM routes (/iam/v1/...) exist only on AWS, where API Gateway verifies the request's SigV4 signature "
    "and the caller's IAM policy; this runtime verifies neither: call POST /v1/tasks with an API key (or none, "
    "for the default tenant)"
)
"""What the local gateway answers on an IAM route, without invoking the function: it cannot do what
``AWS_IAM`` authorization does (docs/construct.md, section 1a), and the function trusts
``requestContext.identity`` there."""


def iam_refusal(event: dict[str, Any]) -> dict[str, Any]:
    """The local answer on a path under ``/iam``: ``405`` with ``Allow: POST`` for another method
    on an IAM route (the function's answer to a method no route has), else ``403``
    (:data:`IAM_UNAVAILABLE`). On AWS a method the API has no resource for is API Gateway's own
    ``404 route_not_found``, as on any path without a method."""
    error: SundialError = IAM_UNAVAILABLE
    headers = {"Content-Type": "application/json"}
    if event["path"] in IAM_REGISTER_PATHS and event["httpMethod"] != "POST":
        error = MethodNotAllowed(f"{event['path']} answers POST, not {event['httpMethod']}")
        headers["Allow"] = "POST"
    body = {"error": {"code": error.code, "message": error.message}}
    return {"statusCode": error.status, "headers": headers, "body": json.dumps(body)}


def is_iam_route(path: str) -> bool:
    """A path under ``/iam``: an ``AWS_IAM`` method's on AWS (or no route at all)."""
    return path == IAM_PREFIX or path.startswith(f"{IAM_PREFIX}/")


"""API Gateway's answer when the authorizer refuses (the stack's gateway response says the same)."""

Authorize = Callable[[dict[str, Any], str | None], dict[str, Any]]


class AuthorizerCache:
    """API Gateway's authorizer cache (shared/topology.py, ``AUTHORIZER_CACHE_TTL_S``): the policy
    answered for one ``Authorization`` value (the stack's identity source) serves every request
    with that value until ``ttl_s`` after it was answered, whatever happened to the key meanwhile
    (a revoked key, a tenant's changed limits). Refusals are not kept: a key is asked about again
    on its next request. ``ttl_s`` 0 keeps nothing."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._policies: dict[str | None, tuple[float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def get(self, identity: str | None) -> dict[str, Any] | None:
        with self._lock:
            kept = self._policies.get(identity)
            if kept is None:
                return None
            if self._clock() >= kept[0]:
                del self._policies[identity]
                return None
            return kept[1]

    def keep(self, identity: str | None, policy: dict[str, Any]) -> None:
        if self.ttl_s > 0:
            with self._lock:
                self._policies[identity] = (self._clock() + self.ttl_s, policy)


def identity(event: dict[str, Any]) -> str | None:
    """The request's ``Authorization`` value (its header name in any case), the cache's key."""
    return next((value for name, value in event["headers"].items() if name.lower() == "authorization"), None)


def with_authorizer(
    api: Callable[[dict[str, Any], Any], dict[str, Any]],
    authorize: Authorize,
    public: Callable[[str], bool],
    anonymous: str | None,
    cache: AuthorizerCache | None = None,
) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The API as API Gateway runs it: the authorizer first on every path but the ``public`` ones,
    its context handed to the function; refused: ``401``. Its answers are kept in ``cache`` as
    API Gateway keeps them (none kept without one). Its differences from AWS: no
    ``Authorization`` header acts as ``anonymous``, and a path under ``/iam`` (the ``AWS_IAM``
    routes, whose SigV4 signatures it cannot verify) is refused with ``403
    iam_route_unavailable`` (:data:`IAM_UNAVAILABLE`) before anything runs."""
    cache = cache or AuthorizerCache(0)

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if is_iam_route(event["path"]):
            return iam_refusal(event)
        if not public(event["path"]):
            key = identity(event)
            try:
                policy = cache.get(key)
                if policy is None:
                    policy = authorize(authorizer_event(event), anonymous)
                    cache.keep(key, policy)
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


Function = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass(frozen=True)
class FunctionLimits:
    """What API Gateway and Lambda allow the API function (shared/topology.py, as the stack sets
    them): its timeout, API Gateway's integration timeout, Lambda's response size."""

    timeout_s: float = API_FUNCTION_TIMEOUT_S
    integration_timeout_s: float = API_INTEGRATION_TIMEOUT_S
    max_response_bytes: int = LAMBDA_RESPONSE_MAX_BYTES

    @property
    def wait_s(self) -> float:
        """How long API Gateway waits for an answer: the smaller of the two timeouts governs."""
        return min(self.timeout_s, self.integration_timeout_s)

    @property
    def late(self) -> GatewayAnswer:
        """The answer to a request still running then: the function's timeout is a function error
        (502); API Gateway's own timeout, when it comes first, is its 504."""
        return FUNCTION_FAILED if self.timeout_s < self.integration_timeout_s else INTEGRATION_TIMED_OUT


def gateway_answer(answer: GatewayAnswer) -> dict[str, Any]:
    """API Gateway's own answer, as the stack's gateway response words it (infra/api.py)."""
    return {
        "statusCode": answer.status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(answer.body()),
    }


def response_bytes(result: dict[str, Any]) -> int:
    """The size of the proxy result as the Lambda runtime sends it back: JSON (ASCII, as Python's
    ``json.dumps``), the answer's body a string within it."""
    return len(json.dumps(result).encode())


def with_limits(api: Function, limits: FunctionLimits | None = None) -> Function:
    """The API function as Lambda runs it behind API Gateway: one event at a time (one execution
    environment), a request still running after :attr:`FunctionLimits.wait_s` answered as API
    Gateway answers it (the function's timeout: 502; API Gateway's: 504), and an answer over
    Lambda's response size answered 502 (the invocation fails), both in the API's error format.

    A request past its time is answered at once; its thread runs on (Python cannot stop one) and
    holds the function until it ends, as a fresh environment would take its place on AWS only
    after the old one stopped. The clock starts when the function starts on the event."""
    limits = limits or FunctionLimits()
    busy = threading.Lock()

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        started, done = threading.Event(), threading.Event()
        outcome: dict[str, Any] = {}
        caller = contextvars.copy_context()  # what the caller set (local/attribution.py) goes along

        def run() -> None:
            with busy:
                started.set()
                try:
                    outcome["result"] = caller.run(api, event, LocalContext(timeout_s=limits.timeout_s))
                except BaseException as exc:  # handed to the caller, as before (not modelled)
                    outcome["error"] = exc
                finally:
                    done.set()

        threading.Thread(target=run, name="api-function", daemon=True).start()
        started.wait()
        if not done.wait(limits.wait_s):
            return gateway_answer(limits.late)
        if "error" in outcome:
            raise outcome["error"]
        result: dict[str, Any] = outcome["result"]
        if response_bytes(result) > limits.max_response_bytes:
            return gateway_answer(FUNCTION_FAILED)
        return result

    return handle
