"""The registration API: API Gateway (REST, proxy) -> Powertools resolver -> one router per
resource (functions/api/routes) -> the services."""

from __future__ import annotations

import functools
import json
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import Server
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api import assets, scheduler
from functions.api.access import admit
from functions.api.common import JSON_HEADERS, as_json, replay, response_for
from functions.api.openapi import DESCRIPTION, TITLE, VERSION, RouteResolver
from functions.api.routes import (
    backfills,
    bulk,
    dead_letters,
    jobs,
    limits,
    overview,
    schedules,
    signing,
    tasks,
    tenants,
    workflows,
)
from shared.api.errors import InternalError, MethodNotAllowed, RouteNotFound, from_pydantic
from shared.api.hostile import refusal
from shared.api.views.errors import error_view
from shared.domain.errors import PayloadTooLarge, RateLimited, SundialError, Unauthorized
from shared.domain.tasks import MAX_BODY_BYTES
from shared.observability import logger, metrics, tracer

app = RouteResolver(enable_validation=True, response_validation_error_http_code=500)
app.configure_openapi(title=TITLE, version=VERSION, description=DESCRIPTION)
app.enable_swagger(path="/v1/docs", title=TITLE, version=VERSION, description=DESCRIPTION)
for resource in (tasks, bulk, backfills, schedules, dead_letters, jobs, limits, signing, tenants, workflows, overview):
    app.include_router(resource.router)


def base_path() -> str:
    """Where this API answers: ``/prod`` on API Gateway's own URL, nothing behind a custom
    domain or on the local runtime (as Powertools' Swagger UI decides it)."""
    context = app.current_event.request_context
    stage = context.stage
    if stage and stage != "$default" and context.path.startswith(f"/{stage}"):
        return f"/{stage}"
    return ""


@app.get("/v1/openapi.json", include_in_schema=False)
def openapi() -> Response[Any]:
    return Response(200, content_types.APPLICATION_JSON, openapi_document(base_path() or "/"))


@functools.lru_cache(maxsize=4)
def openapi_document(server_url: str) -> str:
    """The API's OpenAPI document with ``server_url`` as its server: built once per URL (the
    routes and models it is made of never change in a running function), 0.13 s each time it
    was built for a request."""
    servers = [Server(url=server_url)]
    return app.get_openapi_json_schema(title=TITLE, version=VERSION, description=DESCRIPTION, servers=servers)


@app.exception_handler(SundialError)
def domain_error(error: SundialError) -> Response[Any]:
    return response_for(error)


@app.exception_handler(RequestValidationError)
def invalid_request(error: RequestValidationError) -> Response[Any]:
    return response_for(from_pydantic(error.errors()))


def allowed_methods(path: str) -> list[str]:
    """The methods some route answers on ``path`` (none: no such resource)."""
    # Powertools keeps them there (no public accessor); a path that is a route of its own
    # (/v1/dead-letters/redrive) is that route's, even where a parameter could also match it
    for routes in (app._static_routes, app._dynamic_routes):
        methods = sorted({route.method for route in routes if route.rule.match(path)})
        if methods:
            return methods
    return []


@app.not_found
def no_route(_: Exception) -> Response[Any]:
    method, path = app.current_event.http_method, app.current_event.path
    allowed = allowed_methods(path)
    if not allowed:
        return response_for(RouteNotFound(f"no route {method} {path}"))
    response = response_for(MethodNotAllowed(f"{path} answers {', '.join(allowed)}, not {method}"))
    response.headers["Allow"] = ", ".join(allowed)
    return response


@app.exception_handler(Exception)
def unexpected(error: Exception) -> Response[Any]:
    logger.exception("unhandled error")
    return response_for(InternalError("Sundial failed to answer this request; it has been logged"))


@logger.inject_lambda_context(correlation_id_path="requestContext.requestId")
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if (console := assets.answer(event)) is not None:  # the web console's files, public
        return console
    if scheduler.serves(event):  # the EventBridge Scheduler API: SigV4, checked by its adapter
        return scheduler.handler(event, context)
    if len((event.get("body") or "").encode()) > MAX_BODY_BYTES:  # before anything parses it
        too_large = PayloadTooLarge(f"the request body is over {MAX_BODY_BYTES} bytes")
        return {"statusCode": 413, "headers": JSON_HEADERS, "body": json.dumps(as_json(error_view(too_large)))}
    if (hostile := refusal(event.get("body"))) is not None:  # nesting, huge integers, lone surrogates
        return hostile
    if (refused := admit(event)) is not None:  # the caller: its role and its rate
        return answer_refusal(refused)
    replay().register_context(context)
    return app.resolve(as_json_request(event), context)


def answer_refusal(error: SundialError) -> dict[str, Any]:
    headers = dict(JSON_HEADERS)
    if isinstance(error, RateLimited):
        headers["Retry-After"] = str(error.retry_after_s)
    if isinstance(error, Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    return {"statusCode": error.status, "headers": headers, "body": json.dumps(as_json(error_view(error)))}


def as_json_request(event: dict[str, Any]) -> dict[str, Any]:
    """The API speaks JSON whatever Content-Type a client sends (curl -d says form-urlencoded)."""
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    return {
        **event,
        "headers": {**headers, "Content-Type": "application/json"},
        "multiValueHeaders": {**multi, "Content-Type": ["application/json"]},
    }
