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


class _Fetch:
    """One read of a tenant's secrets that other callers may wait for."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.signer: Signer | None = None
        self.error: BaseException | None = None


@dataclass
class SigningService:
    """Reads a tenant's secrets at most once per refresh, one caller at a time: a cached signer
    is used for ``cache_ms`` at most (a rotation takes effect within it); once it is
    ``refresh_ms`` old, the next caller reads the secrets again while every other caller keeps
    signing with the cached one; with no usable signer cached, callers of one tenant wait for one
    read. Without this, every call of the tenant in flight when its signer expired read the secrets
    itself (a DynamoDB query and a KMS decrypt each), and all of them waited for theirs."""

    secrets: SigningSecrets
    clock: Callable[[], int] = now_ms
    cache_ms: int = CACHE_SECONDS * 1000
    """A tenant's decrypted secrets are kept this long: a rotation takes effect within it."""
    refresh_ms: int | None = None
    """When a cached signer is read again (three quarters of ``cache_ms`` unless given)."""
    _cache: dict[str, tuple[int, Signer]] = field(default_factory=dict, repr=False)
    _fetching: dict[str, _Fetch] = field(default_factory=dict, repr=False)
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
        refresh = self.refresh_ms if self.refresh_ms is not None else self.cache_ms * 3 // 4
        with self._lock:
            cached = self._cache.get(tenant)
            usable = cached is not None and now < cached[0] + self.cache_ms
            if cached is not None and usable and now < cached[0] + refresh:
                return cached[1]
            fetch = self._fetching.get(tenant)
            if fetch is not None and cached is not None and usable:
                return cached[1]  # another caller is reading it again
            mine = fetch is None
            if mine:
                fetch = self._fetching[tenant] = _Fetch()
        assert fetch is not None
        if not mine:
            fetch.done.wait()
            if fetch.signer is None:
                raise fetch.error or RuntimeError("reading the signing secrets failed")
            return fetch.signer
        try:
            fetch.signer = Signer.of(self.secrets.active(tenant, now))
            with self._lock:
                self._cache[tenant] = (now, fetch.signer)
            return fetch.signer
        except BaseException as exc:
            fetch.error = exc
            raise
        finally:
            with self._lock:
                self._fetching.pop(tenant, None)
            fetch.done.set()
