"""``/v1/tenants``: the admin's routes (the deployment's admin key; docs/tenancy.md). A tenant is
created with its first API key and its first signing secret, both answered this once; only a
hash of a key is stored."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from functions.api.common import access_keys, json_response, tenants
from functions.api.openapi import RESPONSES
from shared.api.models.tenants import TenantIn, TenantPatchIn
from shared.api.responses import KeyList, NewAccessKeyOut, NewKeyOut, NewTenantOut, TenantOut, TenantPage
from shared.api.views.tenants import key_view, new_key_view, new_tenant_view, tenant_view
from shared.domain.tenants import TENANT_ID_PATTERN
from shared.domain.times import from_ms

router = Router()

TenantId = Annotated[str, Path(pattern=TENANT_ID_PATTERN, description="The tenant's id.")]
KeyId = Annotated[str, Path(min_length=1, max_length=64, description="The key's id.")]


@router.post("/v1/tenants", responses=RESPONSES["create_tenant"], summary="Create a tenant (admin)")
def create_tenant(request: TenantIn) -> Response[NewTenantOut]:
    limits = request.limits
    created = tenants().create(
        request.id,
        limits.requests_per_second if limits else None,
        limits.burst if limits else None,
        limits.max_tasks if limits else None,
    )
    return json_response(201, new_tenant_view(created.tenant, created.key, created.signing_secret))


@router.get("/v1/tenants", responses=RESPONSES["tenants"], summary="List tenants (admin)")
def list_tenants(
    limit: Annotated[int, Query(ge=1, le=100, description="Tenants per page.")] = 50,
    cursor: Annotated[str | None, Query(max_length=1024, description="next_cursor of the page before.")] = None,
) -> Response[TenantPage]:
    items, after = tenants().list(limit, cursor)
    return json_response(200, TenantPage(items=[tenant_view(t) for t in items], next_cursor=after))


@router.get("/v1/tenants/<tenant_id>", responses=RESPONSES["tenant"], summary="A tenant (admin)")
def get_tenant(tenant_id: TenantId) -> Response[TenantOut]:
    return json_response(200, tenant_view(tenants().get(tenant_id)))


@router.patch("/v1/tenants/<tenant_id>", responses=RESPONSES["tenant"], summary="Change a tenant's limits (admin)")
def update_tenant(tenant_id: TenantId, request: TenantPatchIn) -> Response[TenantOut]:
    limits = request.limits
    changed = tenants().set_limits(tenant_id, limits.requests_per_second, limits.burst, limits.max_tasks)
    return json_response(200, tenant_view(changed))


@router.post("/v1/tenants/<tenant_id>/keys", responses=RESPONSES["create_key"], summary="Issue an API key (admin)")
def create_key(tenant_id: TenantId) -> Response[NewKeyOut]:
    return json_response(201, new_key_view(tenants().issue_key(tenant_id)))


@router.post(
    "/v1/tenants/<tenant_id>/access-keys",
    responses=RESPONSES["create_access_key"],
    summary="Issue an access key for the EventBridge Scheduler API (admin)",
    description="An AWS-style key pair for SigV4: an SDK signs with it to call the EventBridge Scheduler API "
    "under /scheduler as this tenant (docs/eventbridge.md). The secret is shown this once.",
)
def create_access_key(tenant_id: TenantId) -> Response[NewAccessKeyOut]:
    tenants().get(tenant_id)
    issued = access_keys().issue(tenant_id)
    out = NewAccessKeyOut(
        access_key_id=issued.access_key_id,
        secret_access_key=issued.secret_access_key,
        created_at=from_ms(issued.created_ms),
    )
    return json_response(201, out)


@router.delete(
    "/v1/tenants/<tenant_id>/access-keys/<access_key_id>",
    responses=RESPONSES["revoke_access_key"],
    summary="Revoke an access key (admin)",
    description="It stops working within a minute (each API process keeps a key it read that long).",
)
def revoke_access_key(tenant_id: TenantId, access_key_id: KeyId) -> Response[None]:
    access_keys().revoke(tenant_id, access_key_id)
    return Response(status_code=204)


@router.get("/v1/tenants/<tenant_id>/keys", responses=RESPONSES["keys"], summary="A tenant's keys (admin)")
def list_keys(tenant_id: TenantId) -> Response[KeyList]:
    return json_response(200, KeyList(items=[key_view(k) for k in tenants().keys(tenant_id)]))


@router.delete(
    "/v1/tenants/<tenant_id>/keys/<key_id>",
    responses=RESPONSES["revoke_key"],
    summary="Revoke an API key (admin)",
    description="The key stops working within the authorizer's cache time (60 s, on AWS and on the local "
    "runtime by default).",
)
def revoke_key(tenant_id: TenantId, key_id: KeyId) -> Response[None]:
    tenants().revoke(tenant_id, key_id)
    return Response(status_code=204)
