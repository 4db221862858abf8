"""An access key of the EventBridge Scheduler API (SigV4), issued by the runtime's admin API as a
team is given one (docs/eventbridge.md, migration guide): the tests sign with a real key, so they
hold whether the runtime verifies their signatures or reads any as the default tenant's."""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.runtime import ADMIN_KEY, Client

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


@dataclass(frozen=True)
class AccessKey:
    access_key_id: str
    secret_access_key: str


def issued_access_key(client: Client, tenant: str = "default") -> AccessKey:
    """A new access key of ``tenant``; the tenant made first when it is not one yet (``make run``'s
    default tenant has no tenant item until an admin makes it one: 409 when it is one already)."""
    status, made = client.call("POST", "/v1/tenants", {"id": tenant}, ADMIN)
    assert status in (201, 409), made
    status, key = client.call("POST", f"/v1/tenants/{tenant}/access-keys", None, ADMIN)
    assert status == 201, key
    return AccessKey(key["access_key_id"], key["secret_access_key"])
