"""Tenants and their API keys in the task table (docs/tenancy.md, section 1). Implements
shared.services.ports.tenants.Tenants.

Items: ``T#<tenant>`` / ``T`` (:class:`TenantItem`: limits and the live-task counter),
``TENANTS`` / ``<tenant>`` (:class:`TenantEntryItem`: the admin's list), ``K#<sha-256>`` / ``K``
(:class:`KeyItem`: what the authorizer reads) and ``T#<tenant>`` / ``K#<key id>``
(:class:`KeyEntryItem`: the tenant's keys as they are listed). A key's two items are written and
revoked in one transaction, so the list never says a key works that the authorizer refuses, or
the other way round. The admin key's ``K#<sha-256>`` item (``role`` ``admin``, no tenant) is
written by shared/store/admin_key.py; :meth:`DynamoTenants.resolve` reads both kinds.
"""

from __future__ import annotations

from collections.abc import Sequence

from pynamodb.exceptions import DoesNotExist, PynamoDBException, TransactWriteError
from pynamodb.transactions import TransactWrite

from shared.domain.errors import KeyNotFound, StorageUnavailable, TenantExists, TenantNotFound
from shared.domain.tenants import (
    MAX_BURST,
    MAX_REQUESTS_PER_SECOND,
    KeyInfo,
    Limits,
    NewKey,
    Principal,
    Role,
    Tenant,
)
from shared.domain.times import from_ms
from shared.store.admin_key import ADMIN_ROLE, KEY_SK, key_pk
from shared.store.keys import decode_cursor, encode_cursor
from shared.store.models import is_conflict
from shared.store.signing import tenant_pk
from shared.store.tenant_items import KeyEntryItem, KeyItem, TenantEntryItem, TenantItem

TENANTS_PK = "TENANTS"
TENANT_SK = "T"
KEY_ENTRY_PREFIX = "K#"
__all__ = ["KEY_SK", "DynamoTenants", "key_pk"]


def _unavailable(exc: PynamoDBException) -> StorageUnavailable:
    return StorageUnavailable(f"the task store did not answer: {exc.msg}")


def _limits(item: TenantItem | None, defaults: Limits) -> Limits:
    """The tenant's limits as stored; a rate or burst stored above today's cap (written before it:
    one rate item holds 500, shared/domain/tenants.py) reads as the cap, rather than lock the
    tenant out."""
    if item is None:
        return defaults
    return Limits(
        requests_per_second=min(int(item.requests_per_second or defaults.requests_per_second), MAX_REQUESTS_PER_SECOND),
        burst=min(int(item.burst or defaults.burst), MAX_BURST),
        max_tasks=int(item.max_tasks or defaults.max_tasks),
    )


def _tenant(item: TenantItem, defaults: Limits) -> Tenant:
    return Tenant(
        id=item.pk.removeprefix("T#"),
        created_at=from_ms(int(item.created_ms or 0)),
        limits=_limits(item, defaults),
        live_tasks=int(item.live_tasks or 0),
    )


def tenant_item(tenant: str) -> TenantItem:
    """The tenant's item (limits, the live-task counter), by its key."""
    return TenantItem(tenant_pk(tenant), TENANT_SK)


def read_tenant(tenant: str) -> TenantItem | None:
    """The tenant's item as it is now (strongly consistent); None when it has none."""
    try:
        return TenantItem.get(tenant_pk(tenant), TENANT_SK, consistent_read=True)
    except DoesNotExist:
        return None
    except PynamoDBException as exc:
        raise _unavailable(exc) from exc


def _key_items(key: NewKey, now_ms: int) -> tuple[KeyItem, KeyEntryItem]:
    return (
        KeyItem(key_pk(key.hash), KEY_SK, tenant=key.tenant, key_id=key.id, created_ms=now_ms),
        KeyEntryItem(tenant_pk(key.tenant), f"{KEY_ENTRY_PREFIX}{key.id}", key_hash=key.hash, created_ms=now_ms),
    )


class DynamoTenants:
    def __init__(self, defaults: Limits) -> None:
        self.defaults = defaults
        """The limits of a tenant whose item does not say (the local runtime's default tenant)."""

    # --- the admin's side ----------------------------------------------------------------------

    def create(self, tenant: str, limits: Limits, key: NewKey, now_ms: int) -> Tenant:
        """The tenant, its list entry and its first key, in one transaction (``TenantExists`` when
        it was created before). The tenant item may exist already without ``created_ms``: the
        default tenant's live-task counter, made by its first registration; it is kept."""
        connection = TenantItem._get_connection().connection
        try:
            with TransactWrite(connection=connection) as transaction:
                transaction.update(
                    tenant_item(tenant),
                    actions=[
                        TenantItem.created_ms.set(now_ms),
                        TenantItem.requests_per_second.set(limits.requests_per_second),
                        TenantItem.burst.set(limits.burst),
                        TenantItem.max_tasks.set(limits.max_tasks),
                    ],
                    condition=TenantItem.created_ms.does_not_exist(),
                )
                transaction.save(
                    TenantEntryItem(TENANTS_PK, tenant, created_ms=now_ms),
                    condition=TenantEntryItem.pk.does_not_exist(),
                )
                for item in _key_items(key, now_ms):
                    transaction.save(item, condition=KeyItem.pk.does_not_exist())
        except TransactWriteError as exc:
            if is_conflict(exc):
                raise TenantExists(f"tenant {tenant!r} exists") from exc
            raise _unavailable(exc) from exc
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc
        return self.get(tenant)

    def get(self, tenant: str) -> Tenant:
        item = read_tenant(tenant)
        if item is None or item.created_ms is None:
            raise TenantNotFound(f"tenant {tenant!r} not found")
        return _tenant(item, self.defaults)

    def list(self, limit: int, cursor: str | None) -> tuple[list[Tenant], str | None]:
        """Tenants in id order, ``limit`` at a time."""
        start = decode_cursor(cursor) if cursor else None
        try:
            entries = list(
                TenantEntryItem.query(
                    TENANTS_PK,
                    TenantEntryItem.sk > start if start is not None else None,
                    limit=limit + 1,
                )
            )
            ids = [entry.sk for entry in entries[:limit]]
            found = {item.pk: item for item in TenantItem.batch_get([(tenant_pk(tenant), TENANT_SK) for tenant in ids])}
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc
        tenants = [_tenant(found[tenant_pk(tenant)], self.defaults) for tenant in ids if tenant_pk(tenant) in found]
        after = encode_cursor(ids[-1]) if len(entries) > limit else None
        return tenants, after

    def set_limits(self, tenant: str, limits: Limits) -> Tenant:
        try:
            tenant_item(tenant).update(
                actions=[
                    TenantItem.requests_per_second.set(limits.requests_per_second),
                    TenantItem.burst.set(limits.burst),
                    TenantItem.max_tasks.set(limits.max_tasks),
                ],
                condition=TenantItem.created_ms.exists(),
            )
        except PynamoDBException as exc:
            if is_conflict(exc):
                raise TenantNotFound(f"tenant {tenant!r} not found") from exc
            raise _unavailable(exc) from exc
        return self.get(tenant)

    def issue_key(self, key: NewKey, now_ms: int) -> KeyInfo:
        connection = TenantItem._get_connection().connection
        try:
            with TransactWrite(connection=connection) as transaction:
                transaction.condition_check(
                    TenantItem, tenant_pk(key.tenant), TENANT_SK, condition=TenantItem.created_ms.exists()
                )
                for item in _key_items(key, now_ms):
                    transaction.save(item, condition=KeyItem.pk.does_not_exist())
        except TransactWriteError as exc:
            if is_conflict(exc):
                raise TenantNotFound(f"tenant {key.tenant!r} not found") from exc
            raise _unavailable(exc) from exc
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc
        return KeyInfo(key.id, key.tenant, from_ms(now_ms))

    def keys(self, tenant: str) -> Sequence[KeyInfo]:
        self.get(tenant)  # an unknown tenant is 404, not an empty list
        try:
            entries = list(KeyEntryItem.query(tenant_pk(tenant), KeyEntryItem.sk.startswith(KEY_ENTRY_PREFIX)))
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc
        return [
            KeyInfo(
                entry.sk.removeprefix(KEY_ENTRY_PREFIX),
                tenant,
                from_ms(int(entry.created_ms)),
                from_ms(int(entry.revoked_ms)) if entry.revoked_ms is not None else None,
            )
            for entry in entries
        ]

    def revoke(self, tenant: str, key_id: str, now_ms: int) -> None:
        """The key stops working (for the authorizer's next read); revoking it again changes
        nothing. Its items stay, so the list shows when it was revoked."""
        try:
            entry = KeyEntryItem.get(tenant_pk(tenant), f"{KEY_ENTRY_PREFIX}{key_id}", consistent_read=True)
        except DoesNotExist as exc:
            raise KeyNotFound(f"tenant {tenant!r} has no key {key_id!r}") from exc
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc
        if entry.revoked_ms is not None:
            return
        connection = KeyItem._get_connection().connection
        try:
            with TransactWrite(connection=connection) as transaction:
                transaction.update(entry, actions=[KeyEntryItem.revoked_ms.set(now_ms)])
                transaction.update(KeyItem(key_pk(entry.key_hash), KEY_SK), actions=[KeyItem.revoked_ms.set(now_ms)])
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc

    # --- the authorizer's side ------------------------------------------------------------------

    def resolve(self, key_hash: str) -> Principal | None:
        """Who holds the key with this hash: the admin (the deployment's admin key), or a tenant
        with its limits; None for an unknown or revoked key (or an admin key rotated away).
        Strongly consistent reads: a revocation or a rotation is seen by the next read."""
        try:
            key = KeyItem.get(key_pk(key_hash), KEY_SK, consistent_read=True)
        except DoesNotExist:
            return None
        except PynamoDBException as exc:
            raise _unavailable(exc) from exc
        if key.revoked_ms is not None:
            return None
        if key.role == ADMIN_ROLE:
            return Principal(Role.ADMIN)
        if not key.tenant:
            return None
        return Principal(Role.TENANT, key.tenant, self.limits(key.tenant))

    def limits(self, tenant: str) -> Limits:
        """A tenant's limits (the defaults when it has no item, as the local default tenant)."""
        return _limits(read_tenant(tenant), self.defaults)
