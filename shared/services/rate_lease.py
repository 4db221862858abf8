"""A tenant's request limit without a write per request: each API function instance takes a few
requests' worth of the limit at once and spends them locally (docs/tenancy.md, section 5).

The shared limit (GCRA in DynamoDB, shared/store/rate.py) is debited *before* the requests it
admits, ``count`` at a time, so however many instances lease, a lease never lends what the limit
did not have. A leased request may be spent up to a lease later than the limit counted it, so the
bound on any window of ``w`` seconds widens by one lease: at most ``burst + (w + LEASE_S) *
per_second`` requests (GCRA alone: ``burst + w * per_second``); over a longer time the two agree.
The other cost: requests an instance leased and did not use before the lease ran out are lost to
the others (at most ``count - 1`` per instance and lease), so a tenant at its limit across many
instances is refused a little early. A lease is a tenth of a second of the
rate (:data:`LEASE_S`), at most the burst, and one request when that is less than two: one write
admits up to ``per_second / 10`` requests (at the default 100 a second, 10: 0.1 writes a request
instead of 1). When a lease of ``count`` is refused, one request is asked for, as without leases,
so a tenant near its limit is admitted exactly as before.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from shared.domain.rate import Decision, Rate
from shared.services.ports.tenants import RateLimiter

LEASE_S = 0.1
"""How much of the rate one lease takes, and how long its unused requests stay spendable."""


def lease_size(rate: Rate) -> int:
    return max(1, min(rate.burst, math.floor(rate.per_second * LEASE_S)))


@dataclass
class _Lease:
    left: int
    until_ms: float
    tat_ms: float


@dataclass
class LeasingRateLimiter:
    """:class:`RateLimiter` over another, taking :func:`lease_size` requests per write."""

    limits: RateLimiter
    clock: Callable[[], float] = field(default=lambda: time.time() * 1000)  # wall: requests a real second
    _leases: dict[str, _Lease] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, key: str, rate: Rate, now_ms: float | None = None, count: int = 1) -> Decision:
        now = self.clock() if now_ms is None else now_ms
        with self._lock:
            lease = self._leases.get(key)
            if lease is not None and lease.left >= count and now < lease.until_ms:
                lease.left -= count
                return Decision(True, lease.tat_ms)
        size = lease_size(rate)
        if size > count:
            taken = self.limits.take(key, rate, now, size)
            if taken.allowed:
                with self._lock:
                    self._leases[key] = _Lease(size - count, now + LEASE_S * 1000, taken.tat_ms)
                return taken
        return self.limits.take(key, rate, now, count)
