"""What every route of the API shares: the services, the caller's tenant, JSON and error
answers, and ``Idempotency-Key`` replays."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from functools import cache
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel

from shared.api.models.headers import IDEMPOTENCY_KEY, MAX_IDEMPOTENCY_KEY
from shared.api.replay import Replay
from shared.api.views.errors import error_view
from shared.domain.errors import Forbidden, StorageUnavailable, SundialError, Unauthorized, ValidationFailed
from shared.domain.tenants import Principal
from shared.services.access_keys import AccessKeys
from shared.services.backfills import BackfillService
from shared.services.bulk import BulkService
from shared.services.factory import (
    build_access_keys,
    build_backfill_service,
    build_job_service,
    build_limit_service,
    build_rate_limiter,
    build_scheduler_service,
    build_signing_service,
    build_task_service,
    build_tenant_service,
    build_workflow_service,
)
from shared.services.jobs import JobService
from shared.services.limits import LimitService
from shared.services.overview import OverviewService
from shared.services.ports.tenants import RateLimiter
from shared.services.scheduler_api import SchedulerService
from shared.services.signing import SigningService
from shared.services.tasks import TaskService
from shared.services.tenants import TenantService
from shared.services.workflows import WorkflowService
from shared.settings.environment import Settings, from_env

JSON_HEADERS = {"Content-Type": content_types.APPLICATION_JSON}


@cache
def settings() -> Settings:
    """This function's settings, read from its environment once (at cold start)."""
    return from_env()


@cache
def tasks() -> TaskService:
    return build_task_service(settings())


@cache
def backfills() -> BackfillService:
    return build_backfill_service(settings())


@cache
def bulk() -> BulkService:
    return BulkService(tasks())


@cache
def jobs() -> JobService:
    return build_job_service(settings())


@cache
def workflows() -> WorkflowService:
    return build_workflow_service(settings(), tasks())


@cache
def overview() -> OverviewService:
    return OverviewService(tasks(), jobs(), workflows())


@cache
def limits() -> LimitService:
    return build_limit_service(settings())


@cache
def _signing() -> SigningService | None:
    return build_signing_service(settings())


def signing() -> SigningService:
    """The tenants' signing secrets (a deployment without a signing key has none: 503)."""
    service = _signing()
    if service is None:
        raise StorageUnavailable("this deployment has no signing key")
    return service


@cache
def replay() -> Replay:
    return Replay(settings().idempotency_table)


def reset() -> None:
    """Forget the settings and the services built from them (tests that change the environment)."""
    for cached in (
        settings,
        tasks,
        backfills,
        bulk,
        jobs,
        workflows,
        overview,
        limits,
        _signing,
        replay,
        tenants,
        limiter,
        access_keys,
        scheduler,
    ):
        cached.cache_clear()


current_caller: ContextVar[Principal | None] = ContextVar("caller", default=None)
"""The caller of the request being answered, set by functions/api/access.py once it is admitted."""


def caller() -> Principal:
    found = current_caller.get()
    if found is None:  # not admitted: only the public routes run without a caller
        raise Unauthorized("this route wants Authorization: Bearer <API key>")
    return found


def tenant() -> str:
    """The caller's tenant, as the authorizer decided it: the one place a route learns it."""
    found = caller().tenant
    if found is None:
        raise Forbidden("this is a tenant route: it wants a tenant's API key, not the admin key")
    return found


@cache
def tenants() -> TenantService:
    return build_tenant_service(settings())


@cache
def scheduler(region: str, account: str) -> SchedulerService:
    """The EventBridge Scheduler API's service, over this function's task service."""
    return build_scheduler_service(settings(), tasks(), region, account)


@cache
def access_keys() -> AccessKeys:
    return build_access_keys(settings())


@cache
def limiter() -> RateLimiter:
    return build_rate_limiter(settings())


def as_json(body: BaseModel) -> Any:
    return body.model_dump(mode="json", by_alias=True)


def base_url(event: dict[str, Any]) -> str | None:
    """Where this API answers, as its client reached it: ``https://<domain><stage path>`` behind
    API Gateway (the stage's path, or a custom domain's base path, is what the request's path has
    before the route's), the Host header's origin locally. None when neither is known."""
    context = event.get("requestContext") or {}
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    host = context.get("domainName") or headers.get("host")
    if not host:
        return None
    scheme = headers.get("x-forwarded-proto") or ("https" if context.get("domainName") else "http")
    route, full = event.get("path") or "", context.get("path") or ""
    prefix = full[: -len(route)] if route and full.endswith(route) else ""
    return f"{scheme}://{host}{prefix}"


def json_response(status: int, body: Any) -> Response[Any]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


def response_for(error: SundialError) -> Response[Any]:
    return json_response(error.status, as_json(error_view(error)))


def replayable(router: Router, route: str, work: Callable[[], tuple[int, BaseModel]]) -> Response[Any]:
    """Answer ``work()``; with an ``Idempotency-Key`` header, a retry gets the first answer."""
    event = router.current_event
    key = event.get_header_value(IDEMPOTENCY_KEY)
    if key is None:
        status, body = work()
        return json_response(status, body)
    if not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise ValidationFailed.on(IDEMPOTENCY_KEY, f"is 1 to {MAX_IDEMPOTENCY_KEY} printable characters")

    def stored() -> tuple[int, Any]:
        status, body = work()
        return status, as_json(body)

    request = event.json_body  # as the validation parsed it (None: no body)
    status, answer, replayed = replay()(tenant=tenant(), route=route, key=key, body=request, work=stored)
    response = json_response(status, answer)
    if replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return response
