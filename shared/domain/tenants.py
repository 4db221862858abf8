"""Tenants and their API keys (docs/tenancy.md): who a caller is, and what a tenant may do.

A key is ``sk_<key id>_<32 random bytes, base64url>``. Only the SHA-256 of the whole secret is
stored: 256 random bits leave nothing to brute-force, so a slow hash would only slow the
authorizer, and a plain one lets it find the key with one read. The deployment's admin key is
stored the same way (``sk_admin_<64 letters and digits>``, about 381 random bits; made by the
operator's ``sundial admin-key create``, never by the stack).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import string
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from shared.domain.errors import ValidationFailed

TENANT_ID = re.compile(r"^[a-z0-9-]{1,64}$")
TENANT_ID_PATTERN = TENANT_ID.pattern
KEY_PREFIX = "sk_"
KEY_ID_BYTES = 8
KEY_SECRET_BYTES = 32
ADMIN_KEY_PREFIX = "sk_admin_"
ADMIN_KEY_LENGTH = 64
"""Random letters and digits of an admin key: as many as the Secrets Manager secret had."""
PARTITION_WRITES_PER_SECOND = 1_000
"""What one DynamoDB partition key takes ("Best practices for designing and using partition keys
effectively in DynamoDB": 1,000 write units a second per partition)."""
MAX_REQUESTS_PER_SECOND = 500
"""A tenant's rate is one item (``RATE#<tenant>``, shared/store/rate.py) that every request of the
tenant writes: one write unit when admitted, two (two failed conditional writes) when refused or
when the limiter's guess was wrong. Half of the item's 1,000 writes a second is left for those."""
MAX_BURST = 500
"""A burst is admitted at once after a quiet spell, one write each, on top of the rate's: rate and
burst together stay within the 1,000 writes a second one item takes."""
MAX_TASKS = 100_000_000


class Role(StrEnum):
    """What a key lets its holder do: the tenant routes, or the admin routes."""

    TENANT = "tenant"
    ADMIN = "admin"


@dataclass(frozen=True)
class Limits:
    requests_per_second: int
    burst: int
    max_tasks: int

    def __post_init__(self) -> None:
        for name, value, top in (
            ("requests_per_second", self.requests_per_second, MAX_REQUESTS_PER_SECOND),
            ("burst", self.burst, MAX_BURST),
            ("max_tasks", self.max_tasks, MAX_TASKS),
        ):
            if not 1 <= value <= top:
                raise ValidationFailed.on(f"limits.{name}", f"must be 1 to {top}, got {value}")

    def patched(
        self, requests_per_second: int | None = None, burst: int | None = None, max_tasks: int | None = None
    ) -> Limits:
        return Limits(
            requests_per_second=self.requests_per_second if requests_per_second is None else requests_per_second,
            burst=self.burst if burst is None else burst,
            max_tasks=self.max_tasks if max_tasks is None else max_tasks,
        )


@dataclass(frozen=True)
class Tenant:
    id: str
    created_at: datetime
    limits: Limits
    live_tasks: int = 0
    """Tasks that can still fire (what ``max_tasks`` bounds)."""


@dataclass(frozen=True)
class KeyInfo:
    """A key as it is listed: never its secret, never its hash."""

    id: str
    tenant: str
    created_at: datetime
    revoked_at: datetime | None = None


@dataclass(frozen=True)
class NewKey:
    """A key as it is issued: the secret is shown this once."""

    id: str
    tenant: str
    secret: str
    created_at: datetime

    @property
    def hash(self) -> str:
        return key_hash(self.secret)


@dataclass(frozen=True)
class Principal:
    """Who a request comes from, as the authorizer decided it."""

    role: Role
    tenant: str | None = None
    limits: Limits | None = None


def check_tenant_id(tenant_id: str, field: str = "id") -> str:
    if not TENANT_ID.match(tenant_id):
        raise ValidationFailed.on(field, "must be 1 to 64 of a-z, 0-9 and '-'")
    return tenant_id


def new_key_id() -> str:
    return secrets.token_hex(KEY_ID_BYTES)


def new_key_secret(key_id: str) -> str:
    return f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(KEY_SECRET_BYTES)}"


def new_admin_key() -> str:
    """A new admin key: letters and digits after its prefix, so it goes into a header as it is."""
    alphabet = string.ascii_letters + string.digits
    return ADMIN_KEY_PREFIX + "".join(secrets.choice(alphabet) for _ in range(ADMIN_KEY_LENGTH))


def key_hash(secret: str) -> str:
    """What is stored of a key (hex SHA-256 of the whole secret)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def bearer(authorization: str | None) -> str | None:
    """The key in an ``Authorization: Bearer <key>`` header (None when there is none)."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


@dataclass(frozen=True)
class IssuedKey:
    """An access key for the EventBridge Scheduler API, as issued: its secret is shown this once."""

    access_key_id: str
    secret_access_key: str
    created_ms: int
