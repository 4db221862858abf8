"""Rate limits as GCRA (the generic cell rate algorithm): one number per limited thing.

A limit of ``per_second`` with ``burst`` admits ``burst`` requests at once and then one every
``1 / per_second`` seconds. Its whole state is the *theoretical arrival time* (TAT): when the
next request would be due if every admitted one had come exactly on schedule. A request at
``now`` is admitted when ``max(TAT, now) + interval <= now + burst * interval``, i.e. when
``TAT <= now + (burst - 1) * interval``; admitting moves the TAT to ``max(TAT, now) + interval``.
In any window of ``w`` seconds at most ``burst + w * per_second`` requests are admitted, and a
refused one may come back after :attr:`Decision.retry_after_ms`.

Why GCRA over a token bucket: the same guarantee with one number instead of two (tokens and
the time they were counted), so storing it is one attribute and admitting is one conditional
write (shared/store/rate.py); the tenants' request limits and the receivers' per-destination
limits use it alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

EPSILON_MS = 1e-6
"""Sums of intervals in floating point drift by far less than this; a nanosecond is no rate."""


@dataclass(frozen=True)
class Rate:
    per_second: float
    burst: int = 1

    def __post_init__(self) -> None:
        if not (self.per_second > 0 and math.isfinite(self.per_second)) or self.burst < 1:
            raise ValueError(f"a rate needs per_second > 0 and burst >= 1, not {self}")

    @property
    def interval_ms(self) -> float:
        return 1000.0 / self.per_second

    def latest_tat_ms(self, now_ms: float, count: int = 1) -> float:
        """The largest TAT that still admits ``count`` requests at once at ``now_ms``."""
        return now_ms + (self.burst - count) * self.interval_ms


@dataclass(frozen=True)
class Decision:
    allowed: bool
    tat_ms: float
    """The TAT after this request (unchanged when refused)."""
    retry_after_ms: float = 0.0
    """When refused: how long until a request would be admitted."""


def admit(tat_ms: float | None, now_ms: float, rate: Rate, count: int = 1) -> Decision:
    """Decide ``count`` requests at once at ``now_ms`` against the TAT ``tat_ms`` (``None``:
    never used): all admitted, as ``count`` requests in a row would be, or none."""
    current = now_ms if tat_ms is None else max(tat_ms, now_ms)
    latest = rate.latest_tat_ms(now_ms, count)
    if current <= latest + EPSILON_MS:
        return Decision(True, current + count * rate.interval_ms)
    return Decision(False, current, retry_after_ms=current - latest)
