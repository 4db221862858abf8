"""Tenants and API keys: the admin's routes (create, limits, keys) and the authorizer's question
(who holds this key?), docs/tenancy.md, section 2."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shared.domain.errors import TenantExists, TenantNotFound
from shared.domain.signing import DEFAULT_PREVIOUS_EXPIRES_IN_SECONDS, NewSecret
from shared.domain.tenants import (
    KeyInfo,
    Limits,
    NewKey,
    Principal,
    Role,
    Tenant,
    bearer,
    check_tenant_id,
    key_hash,
    new_key_id,
    new_key_secret,
)
from shared.domain.times import from_ms, now_ms
from shared.services.ports.tenants import Tenants
from shared.services.signing import SigningService


@dataclass(frozen=True)
class CreatedTenant:
    """A new tenant with what is shown this once: its first key and its signing secret."""

    tenant: Tenant
    key: NewKey
    signing_secret: NewSecret


@dataclass
class TenantService:
    tenants: Tenants
    signing: SigningService
    defaults: Limits
    clock: Callable[[], int] = now_ms

    def _new_key(self, tenant: str) -> NewKey:
        key_id = new_key_id()
        return NewKey(key_id, tenant, new_key_secret(key_id), from_ms(self.clock()))

    def create(
        self,
        tenant: str,
        requests_per_second: int | None = None,
        burst: int | None = None,
        max_tasks: int | None = None,
    ) -> CreatedTenant:
        check_tenant_id(tenant)
        limits = self.defaults.patched(requests_per_second, burst, max_tasks)
        try:
            self.tenants.get(tenant)
        except TenantNotFound:
            pass
        else:
            raise TenantExists(f"tenant {tenant!r} exists")
        # The signing secret first: a tenant is never created without one its admin was shown.
        # (Two creations racing both rotate; the loser's 409 leaves two secrets, both valid.)
        signing_secret = self.signing.rotate(tenant, DEFAULT_PREVIOUS_EXPIRES_IN_SECONDS)
        key = self._new_key(tenant)
        created = self.tenants.create(tenant, limits, key, self.clock())
        return CreatedTenant(created, key, signing_secret)

    def get(self, tenant: str) -> Tenant:
        return self.tenants.get(tenant)

    def list(self, limit: int, cursor: str | None) -> tuple[list[Tenant], str | None]:
        return self.tenants.list(limit, cursor)

    def set_limits(
        self, tenant: str, requests_per_second: int | None, burst: int | None, max_tasks: int | None
    ) -> Tenant:
        current = self.tenants.get(tenant)
        return self.tenants.set_limits(tenant, current.limits.patched(requests_per_second, burst, max_tasks))

    def issue_key(self, tenant: str) -> NewKey:
        key = self._new_key(tenant)
        self.tenants.issue_key(key, self.clock())
        return key

    def keys(self, tenant: str) -> Sequence[KeyInfo]:
        return self.tenants.keys(tenant)

    def revoke(self, tenant: str, key_id: str) -> None:
        self.tenants.revoke(tenant, key_id, self.clock())


@dataclass
class Authenticator:
    """Who holds a key: the admin (the deployment's admin key) or a tenant (one of its live keys).
    Both are found by the key's hash, one read: the admin key is stored as a tenant's key is
    (shared/store/admin_key.py); a deployment with none has no admin."""

    tenants: Tenants

    def caller(self, authorization: str | None) -> Principal | None:
        """The caller of an ``Authorization`` header; None for no key, an unknown or a revoked one."""
        secret = bearer(authorization)
        if secret is None:
            return None
        return self.tenants.resolve(key_hash(secret))

    def anonymous(self, tenant: str) -> Principal:
        """A caller with no key acting as ``tenant`` (the local runtime's default tenant only)."""
        return Principal(Role.TENANT, tenant, self.tenants.limits(tenant))
