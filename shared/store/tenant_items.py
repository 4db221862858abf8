"""The table's items of tenants and their access: a tenant, its keys, its limits per destination
and its EventBridge Scheduler access keys (docs/tenancy.md, docs/receivers.md,
docs/eventbridge.md). The other items are :mod:`shared.store.models`'; every one is bound to the
deployment's table by :func:`shared.store.table.bind_table`."""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import MapAttribute, NumberAttribute, UnicodeAttribute

from shared.store.models import _Table


class TenantItem(_Table):
    """``T#<tenant>`` / ``T``: a tenant's limits and its count of tasks that can still fire
    (docs/tenancy.md, section 1). The default tenant of the local runtime may have none: it
    then has the deployment's default limits, and the first registration makes the item."""

    created_ms = NumberAttribute(null=True)
    requests_per_second = NumberAttribute(null=True)
    burst = NumberAttribute(null=True)
    max_tasks = NumberAttribute(null=True)
    live_tasks = NumberAttribute(null=True)


class TenantEntryItem(_Table):
    """``TENANTS`` / ``<tenant>``: one line per tenant, so the admin can list them with one query
    (written with the tenant, never updated: the counters stay on the tenant's own partition)."""

    created_ms = NumberAttribute()


class KeyItem(_Table):
    """``K#<sha-256 of the secret>`` / ``K``: what the authorizer reads (one GetItem). A tenant's
    key names its tenant; the admin key's has ``role`` ``admin`` and no tenant
    (shared/store/admin_key.py writes it)."""

    tenant = UnicodeAttribute(null=True)
    role = UnicodeAttribute(null=True)
    key_id = UnicodeAttribute()
    created_ms = NumberAttribute()
    revoked_ms = NumberAttribute(null=True)


class KeyEntryItem(_Table):
    """``T#<tenant>`` / ``K#<key id>``: a key as it is listed (no secret, no hash but the one
    needed to revoke it)."""

    key_hash = UnicodeAttribute()
    created_ms = NumberAttribute()
    revoked_ms = NumberAttribute(null=True)


class LimitItem(_Table):
    """``T#<tenant>`` / ``L#<name>``: a limit per destination as the tenant put it (docs/receivers.md);
    the trigger reads a tenant's with one query (``begins_with(sk, "L#")``) and keeps them."""

    name = UnicodeAttribute()
    per_second = NumberAttribute()
    burst = NumberAttribute()
    max_in_flight = NumberAttribute(null=True)
    origin = UnicodeAttribute(null=True)
    version = NumberAttribute()
    created_ms = NumberAttribute()
    updated_ms = NumberAttribute()


class LimitOriginItem(_Table):
    """``T#<tenant>`` / ``LO#<origin>``: which limit has an origin (one limit per origin), written
    and deleted in the same transaction as the limit."""

    name = UnicodeAttribute()


class LimitStateItem(_Table):
    """``LIMIT#<tenant>#<name>#<k>`` / ``S``: sub-bucket ``k`` of a limit's state, on a partition of
    its own (bookings must not share the tenant's partition with its quota counter):
    ``version`` the limit's version (written by every PUT, a booking is conditional on it),
    ``tat_ms`` GCRA's theoretical arrival time, ``hold_until_ms`` a receiver's Retry-After for
    the whole limit, ``slots`` run id -> lease end (ms) of the calls in flight."""

    version = NumberAttribute()
    tat_ms = NumberAttribute(null=True)
    hold_until_ms = NumberAttribute(null=True)
    slots = MapAttribute[str, Any](null=True)


class AccessKeyItem(_Table):
    """``AK#<access key id>`` / ``AK``: an access key for the EventBridge Scheduler API's SigV4
    (docs/eventbridge.md, section 5). Its secret is a signing-key-mode secret of its tenant
    (shared/store/signing.py's ``SecretValues``): derived from the root (nothing stored) or
    encrypted by KMS (the ciphertext stored)."""

    tenant = UnicodeAttribute()
    scheme = UnicodeAttribute()
    stored = UnicodeAttribute(null=True)
    created_ms = NumberAttribute()
    revoked_ms = NumberAttribute(null=True)
