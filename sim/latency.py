"""Latencies as distributions, not constants: each is a lognormal through a stated median and 99th
percentile (where both come from a measurement, the measurement's; where AWS gives no figure, a
stated assumption), drawn from the run's seeded generator, so a run repeats with its seed and a
simulated p99 is no longer a floor of constants. A latency whose p99 equals its median is that
constant (the hand-checked tests use them)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from statistics import NormalDist

Z99 = NormalDist().inv_cdf(0.99)
"""The standard normal's 99th percentile (2.326): a lognormal's p99 is its median x exp(sigma x Z99)."""


@dataclass(frozen=True)
class Latency:
    """A lognormal latency in milliseconds, given by its median and its 99th percentile."""

    median_ms: float
    p99_ms: float
    source: str = ""
    """Where the two figures come from (a measurement, or *assumption*)."""

    def __post_init__(self) -> None:
        if self.median_ms < 0 or self.p99_ms < self.median_ms:
            raise ValueError(f"a latency needs 0 <= median <= p99: {self.median_ms}, {self.p99_ms}")

    @classmethod
    def constant(cls, ms: float) -> Latency:
        return cls(ms, ms, "a constant")

    @property
    def sigma(self) -> float:
        """The lognormal's shape: ln(p99 / median) / Z99 (0: a constant)."""
        if self.median_ms in (0, self.p99_ms):
            return 0.0
        return math.log(self.p99_ms / self.median_ms) / Z99

    def draw(self, rng: random.Random) -> float:
        sigma = self.sigma
        if sigma == 0:
            return self.median_ms
        return self.median_ms * math.exp(sigma * rng.gauss(0.0, 1.0))

    def quantile(self, q: float) -> float:
        """The latency's ``q`` quantile (0 < q < 1)."""
        return self.median_ms * math.exp(self.sigma * NormalDist().inv_cdf(q))

    def mean_ms(self) -> float:
        return self.median_ms * math.exp(self.sigma**2 / 2)

    def scaled(self, factor: float) -> Latency:
        """The same shape ``factor`` times as long (CPU work on a ``1 / factor`` share of a vCPU)."""
        return Latency(self.median_ms * factor, self.p99_ms * factor, self.source)

    def __str__(self) -> str:
        if self.sigma == 0:
            return f"{self.median_ms:g} ms"
        return f"median {self.median_ms:g} ms, p99 {self.p99_ms:g} ms"
