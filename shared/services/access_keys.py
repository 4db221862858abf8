"""Tenants' access keys for the EventBridge Scheduler API (docs/eventbridge.md, section 5): issued
and revoked by the admin, read by the scheduler adapter to verify a request's SigV4 signature.
A key's secret is kept 60 s per process once read (as API Gateway keeps an authorizer's answer
for an API key): a revoked key stops working within that minute."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from shared.domain.errors import StorageUnavailable
from shared.domain.tenants import IssuedKey
from shared.services.ports.tenants import AccessKeyStore

CACHE_S = 60.0


@dataclass
class AccessKeys:
    store: AccessKeyStore | None
    """None: the deployment has no signing key mode, so no secret can be made or read."""
    clock_ms: Callable[[], int]
    monotonic: Callable[[], float] = time.monotonic  # wall: how long a read secret is kept
    _kept: dict[str, tuple[float, tuple[str, str] | None]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _store(self) -> AccessKeyStore:
        if self.store is None:
            raise StorageUnavailable("this deployment has no signing key mode (sundial:signingKey): no access keys")
        return self.store

    def issue(self, tenant: str) -> IssuedKey:
        return self._store().issue(tenant, self.clock_ms())

    def revoke(self, tenant: str, key_id: str) -> None:
        self._store().revoke(tenant, key_id, self.clock_ms())
        with self._lock:
            self._kept.pop(key_id, None)

    def secret(self, key_id: str) -> tuple[str, str] | None:
        """The tenant and secret of a live key, kept :data:`CACHE_S` once read."""
        now = self.monotonic()
        with self._lock:
            kept = self._kept.get(key_id)
        if kept is not None and now - kept[0] < CACHE_S:
            return kept[1]
        found = self._store().secret(key_id)
        with self._lock:
            self._kept[key_id] = (now, found)
        return found
