"""The ports of tenants: their keys, their callback signing secrets, their rates and their limits
per destination."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from shared.domain.limits import Booking, Limit, LimitSpec, LimitState
from shared.domain.rate import Decision, Rate
from shared.domain.signing import NewSecret, SecretInfo
from shared.domain.tenants import IssuedKey, KeyInfo, Limits, NewKey, Principal, Tenant


class AccessKeyStore(Protocol):
    """The EventBridge Scheduler API's access keys (docs/eventbridge.md, section 5): a secret is
    made by the deployment's signing key mode, shown once at issue, and found again by its id."""

    def issue(self, tenant: str, now_ms: int) -> IssuedKey: ...

    def revoke(self, tenant: str, key_id: str, now_ms: int) -> None:
        """KeyNotFound when the tenant has no such key."""
        ...

    def secret(self, key_id: str) -> tuple[str, str] | None:
        """The tenant and secret of a live key (None: no such key, or revoked)."""
        ...


class SigningSecrets(Protocol):
    """A tenant's callback signing secrets (docs/tenancy.md, section 4): stored encrypted or derived
    from a root key, never in the clear; their values leave only through :meth:`active` (to sign)
    and :meth:`rotate` (once, to the tenant)."""

    def infos(self, tenant: str) -> Sequence[SecretInfo]:
        """The tenant's secrets, newest first, without their values."""
        ...

    def active(self, tenant: str, now_ms: int) -> Sequence[str]:
        """The values of the tenant's active secrets, newest first; when it has none, its first
        one is made now (atomically: two callers at once make one)."""
        ...

    def rotate(self, tenant: str, previous_expires_in_ms: int, now_ms: int) -> NewSecret:
        """Make a new current secret; every other active one expires at ``now + previous_expires_in_ms``
        at the latest. :class:`ConcurrentUpdate` when another rotation won the race."""
        ...


class Tenants(Protocol):
    """Tenants, their limits and their API keys (docs/tenancy.md, section 1): a key is stored as
    its hash only."""

    def create(self, tenant: str, limits: Limits, key: NewKey, now_ms: int) -> Tenant:
        """The tenant with its first key (:class:`TenantExists` when there is one)."""
        ...

    def get(self, tenant: str) -> Tenant: ...

    def list(self, limit: int, cursor: str | None) -> tuple[list[Tenant], str | None]: ...

    def set_limits(self, tenant: str, limits: Limits) -> Tenant: ...

    def issue_key(self, key: NewKey, now_ms: int) -> KeyInfo: ...

    def keys(self, tenant: str) -> Sequence[KeyInfo]: ...

    def revoke(self, tenant: str, key_id: str, now_ms: int) -> None: ...

    def resolve(self, key_hash: str) -> Principal | None:
        """Who holds a live key with this hash: the admin, or a tenant with its limits; None
        otherwise."""
        ...

    def limits(self, tenant: str) -> Limits: ...


class RateLimiter(Protocol):
    def take(self, key: str, rate: Rate, now_ms: float | None = None, count: int = 1) -> Decision:
        """Admit ``count`` requests at once (at most the burst), all or none."""
        ...


class LimitStore(Protocol):
    """A tenant's limits per destination (docs/receivers.md, section 1): items ``T#<tenant>`` /
    ``L#<name>`` and ``LO#<origin>``, and the version on each state item ``LIMIT#<tenant>#<name>#<k>``."""

    def put(self, tenant: str, name: str, spec: LimitSpec, now_ms: int) -> Limit:
        """Create or replace a limit (its version bumped, its state's TAT kept);
        :class:`OriginTaken` when another of the tenant's limits has the origin."""
        ...

    def get(self, tenant: str, name: str) -> Limit:
        """The limit, or :class:`LimitNotFound` (also for another tenant's)."""
        ...

    def delete(self, tenant: str, name: str) -> None:
        """Remove the limit, its origin entry and its state (:class:`LimitNotFound` if none)."""
        ...

    def for_tenant(self, tenant: str) -> Sequence[Limit]:
        """All of the tenant's limits (at most MAX_LIMITS), by name: one query."""
        ...


class Throttle(Protocol):
    """The state of limits per destination (shared/store/throttle.py): bookings, in-flight slots,
    a receiver's hold. Every method answers None (or raises nothing new) when the limit is not
    at the version the caller read: it reads the tenant's limits again."""

    def book(self, limit: Limit, k: int, reference_ms: int) -> Booking | None: ...

    def acquire(self, limit: Limit, k: int, run_id: str, now_ms: int, lease_until_ms: int) -> bool | None: ...

    def release(self, limit: Limit, k: int, run_id: str) -> None: ...

    def hold(self, limit: Limit, until_ms: int) -> None: ...

    def state(self, limit: Limit, k: int, consistent: bool = False) -> LimitState | None: ...


class LimitSource(Protocol):
    """A tenant's limits, as a trigger container keeps them (shared/services/limits.py)."""

    def limits(self, tenant: str) -> Sequence[Limit]: ...

    def refresh(self, tenant: str) -> Sequence[Limit]: ...
