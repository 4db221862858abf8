"""``/v1/tenants``: a tenant and its API keys (a key's secret only when it is made)."""

from __future__ import annotations

from dataclasses import asdict

from shared.api.responses import KeyOut, LimitsOut, NewKeyOut, NewTenantOut, TenantOut
from shared.api.views.signing import new_signing_secret_view
from shared.domain.signing import NewSecret
from shared.domain.tenants import KeyInfo, NewKey, Tenant


def tenant_view(tenant: Tenant) -> TenantOut:
    return TenantOut(
        id=tenant.id,
        created_at=tenant.created_at,
        limits=LimitsOut(**asdict(tenant.limits)),
        live_tasks=tenant.live_tasks,
    )


def new_key_view(key: NewKey) -> NewKeyOut:
    return NewKeyOut(id=key.id, secret=key.secret, created_at=key.created_at)


def new_tenant_view(tenant: Tenant, key: NewKey, signing_secret: NewSecret) -> NewTenantOut:
    return NewTenantOut(
        **tenant_view(tenant).model_dump(),
        key=new_key_view(key),
        signing_secret=new_signing_secret_view(signing_secret),
    )


def key_view(key: KeyInfo) -> KeyOut:
    return KeyOut(id=key.id, created_at=key.created_at, revoked_at=key.revoked_at)
