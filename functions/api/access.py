"""Who may call what (docs/tenancy.md, section 2): the caller is what the authorizer put in
``requestContext.authorizer`` and nothing else; admin routes want the admin key, every other
route a tenant's key, and a tenant's requests go through its rate limit first.

The IAM routes (``/iam/v1/tasks``, ``/iam/v1/tasks:batch``; docs/construct.md, section 1a) are the
exception: API Gateway verified the caller's SigV4 signature and IAM policy, and its
``requestContext.identity`` is the caller, mapped to a tenant by the roles ``grant_register``
granted. Only there is ``requestContext.identity`` read: on every other route it is ignored."""

from __future__ import annotations

import math
from typing import Any

from functions.api.assets import is_console
from functions.api.common import current_caller, limiter, settings
from shared.domain.errors import (
    Forbidden,
    IamRouteUnavailable,
    IdentityNotGranted,
    RateLimited,
    SundialError,
    Unauthorized,
)
from shared.domain.iam_callers import IAM_PREFIX, IAM_REGISTER_PATHS, caller_role
from shared.domain.progress import PROGRESS_ROLE, is_progress_path
from shared.domain.rate import Rate
from shared.domain.tenants import Limits, Principal, Role

PUBLIC_PATHS = frozenset({"/v1/openapi.json", "/v1/docs"})
"""What anyone may read: the contract and its page (no authorizer in front of them)."""


def is_public(path: str) -> bool:
    """No key needed: the contract, its page and the web console's files (the console holds no
    data: it calls the API with the key its user signs in with)."""
    return path in PUBLIC_PATHS or is_console(path)


ADMIN_PATHS = ("/v1/tenants",)


def is_admin_path(path: str) -> bool:
    return any(path == prefix or path.startswith(f"{prefix}/") for prefix in ADMIN_PATHS)


def caller_of(event: dict[str, Any]) -> Principal | None:
    """The caller the authorizer decided, from the event's authorizer context."""
    context = (event.get("requestContext") or {}).get("authorizer") or {}
    try:
        role = Role(str(context.get("role")))
    except ValueError:
        return None
    if role is Role.ADMIN:
        return Principal(Role.ADMIN)
    tenant = context.get("tenant")
    if not tenant:
        return None
    limits = None
    if context.get("requests_per_second") is not None and context.get("burst") is not None:
        defaults = settings().tenant_limits
        limits = Limits(int(context["requests_per_second"]), int(context["burst"]), defaults.max_tasks)
    return Principal(Role.TENANT, str(tenant), limits)


def is_iam_path(path: str) -> bool:
    return path == IAM_PREFIX or path.startswith(f"{IAM_PREFIX}/")


def iam_caller(event: dict[str, Any]) -> Principal | SundialError:
    """The tenant of an IAM route's caller, or why there is none. API Gateway sets ``resource``
    to the method's resource: an IAM route's own path only when the request came through its
    ``AWS_IAM`` method (no other resource of the API covers ``/iam``), the one case where
    ``requestContext.identity`` is a verified caller."""
    path = event.get("path") or ""
    if path not in IAM_REGISTER_PATHS or event.get("resource") != path:
        return IamRouteUnavailable(
            f"{path} is authorized by AWS IAM (SigV4), which only API Gateway checks: deployed, sign the request "
            "with the credentials of a role granted by grant_register; anywhere, POST /v1/tasks takes an API key"
        )
    identity = (event.get("requestContext") or {}).get("identity") or {}
    user_arn = str(identity.get("userArn") or "")
    role = caller_role(user_arn)
    tenant = settings().iam_role_tenants().get(role) if role is not None else None
    if tenant is None:
        return IdentityNotGranted(
            f"{user_arn or 'this caller'} is no session of a role this deployment's grant_register granted"
        )
    return Principal(Role.TENANT, tenant)


def admit(event: dict[str, Any]) -> SundialError | None:
    """Why this request may not go on (None: it may). Sets the routes' caller
    (``common.current_caller``)."""
    current_caller.set(None)
    path = event.get("path") or ""
    if is_public(path):
        return None
    if is_iam_path(path):
        found = iam_caller(event)
        if isinstance(found, SundialError):
            return found
        return _within_rate(found)
    if ((event.get("requestContext") or {}).get("authorizer") or {}).get("role") == PROGRESS_ROLE:
        if event.get("httpMethod") == "POST" and is_progress_path(path):
            return None  # the route checks the token against its job (docs/jobs.md, section 7)
        return Unauthorized("a progress token is good for its job's progress reports only")
    caller = caller_of(event)
    if caller is None:
        return Unauthorized("this route wants Authorization: Bearer <API key>")
    if is_admin_path(path) and caller.role is not Role.ADMIN:
        return Forbidden(f"{path} is an admin route: it wants the deployment's admin key")
    if not is_admin_path(path) and caller.role is not Role.TENANT:
        return Forbidden(f"{path} is a tenant route: it wants a tenant's API key, not the admin key")
    return _within_rate(caller)


def _within_rate(caller: Principal) -> SundialError | None:
    """A tenant's request within its rate sets the routes' caller; over it, refused."""
    if caller.role is Role.TENANT:
        assert caller.tenant is not None
        limits = caller.limits or settings().tenant_limits
        decision = limiter().take(f"tenant:{caller.tenant}", Rate(limits.requests_per_second, limits.burst))
        if not decision.allowed:
            wait = max(1, math.ceil(decision.retry_after_ms / 1000))
            return RateLimited(
                f"tenant {caller.tenant!r} is over {limits.requests_per_second} requests a second "
                f"(burst {limits.burst}): retry after {wait} s",
                retry_after_s=wait,
            )
    current_caller.set(caller)
    return None
