"""The tenant's callback signing secrets: listing, rotation, and the signer every HTTP call of
the tenant is signed with (docs/tenancy.md, section 4)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shared.domain.signing import CACHE_SECONDS, NewSecret, SecretInfo, Signer
from shared.services.ports import SigningSecrets


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class SigningService:
    secrets: SigningSecrets
    clock: Callable[[], int] = now_ms
    cache_ms: int = CACHE_SECONDS * 1000
    """A tenant's decrypted secrets are kept this long: a rotation takes effect within it."""
    _cache: dict[str, tuple[int, Signer]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def list(self, tenant: str) -> Sequence[SecretInfo]:
        return self.secrets.infos(tenant)

    def rotate(self, tenant: str, previous_expires_in_seconds: int) -> NewSecret:
        created = self.secrets.rotate(tenant, previous_expires_in_seconds * 1000, self.clock())
        with self._lock:
            self._cache.pop(tenant, None)
        return created

    def signer(self, tenant: str) -> Signer:
        """The tenant's signer (its first secret is made now when it has none)."""
        now = self.clock()
        with self._lock:
            cached = self._cache.get(tenant)
        if cached is not None and cached[0] > now:
            return cached[1]
        signer = Signer.of(self.secrets.active(tenant, now))
        with self._lock:
            self._cache[tenant] = (now + self.cache_ms, signer)
        return signer
