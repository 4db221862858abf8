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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shared.topology import (
    API_FUNCTION_MEMORY_MB,
    API_FUNCTION_TIMEOUT_S,
    API_INTEGRATION_TIMEOUT_S,
    FUNCTION_FAILED,
    INTEGRATION_TIMED_OUT,
    LAMBDA_RESPONSE_MAX_BYTES,
    GatewayAnswer,
)

STAGE = "prod"


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
    API Gateway keeps them (none kept without one). Its one difference from AWS: no
    ``Authorization`` header acts as ``anonymous``."""
    cache = cache or AuthorizerCache(0)

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
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


SCHEDULER_PREFIX = "/scheduler"
"""Where the EventBridge Scheduler API answers (functions/api/scheduler.py: a route of the API
function that has no authorizer)."""


def with_scheduler(gateway: Function, scheduler: Function, tenant: str) -> Function:
    """The gateway with ``/scheduler/...`` handed to the EventBridge Scheduler API's adapter, past
    the authorizer (as the stack's route has none): `make run` reads any signature as ``tenant``
    (the default one), which it hands the adapter in the event's authorizer context, where API
    Gateway puts nothing on that route (on AWS the adapter verifies SigV4 instead)."""

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        path = event["path"]
        if path != SCHEDULER_PREFIX and not path.startswith(f"{SCHEDULER_PREFIX}/"):
            return gateway(event, context)
        context_of = {"tenant": tenant, "role": "tenant", "principalId": tenant}
        event = {**event, "requestContext": {**event["requestContext"], "authorizer": context_of}}
        return scheduler(event, context)

    return handle
