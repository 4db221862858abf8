"""The tenant's callback signing secrets: listing, rotation, and the signer every HTTP call of
the tenant is signed with (docs/tenancy.md, section 4)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shared.domain.signing import CACHE_SECONDS, NewSecret, SecretInfo, Signer
from shared.domain.times import now_ms
from shared.services.cache import TenantCopies
from shared.services.ports.tenants import SigningSecrets


@dataclass
class SigningService:
    """Reads a tenant's secrets (a DynamoDB query, and a KMS decrypt or a derivation) at most once
    per refresh, one caller at a time, and keeps its signer (shared/services/cache.py): a rotation
    takes effect within ``cache_ms``."""

    secrets: SigningSecrets
    clock: Callable[[], int] = now_ms
    cache_ms: int = CACHE_SECONDS * 1000
    """A tenant's secrets are kept this long: a rotation takes effect within it."""
    refresh_ms: int | None = None
    """When a cached signer is read again (three quarters of ``cache_ms`` unless given)."""
    _signers: TenantCopies[Signer] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        refresh = self.refresh_ms if self.refresh_ms is not None else self.cache_ms * 3 // 4
        self._signers = TenantCopies(
            lambda tenant, now: Signer.of(self.secrets.active(tenant, now)), self.clock, self.cache_ms, refresh
        )

    def list(self, tenant: str) -> Sequence[SecretInfo]:
        return self.secrets.infos(tenant)

    def rotate(self, tenant: str, previous_expires_in_seconds: int) -> NewSecret:
        created = self.secrets.rotate(tenant, previous_expires_in_seconds * 1000, self.clock())
        self._signers.forget(tenant)
        return created

    def signer(self, tenant: str) -> Signer:
        """The tenant's signer (its first secret is made now when it has none)."""
        return self._signers.get(tenant)
