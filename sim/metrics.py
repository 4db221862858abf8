"""What a run shows: lateness percentiles (overall and over time), peak concurrency, the hottest
partition, queue depth, and the cost per million fires at the public prices of docs/design.md,
section 4 (the same figures bench/capacity.py prices `make bench`'s counts with)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sim.pipeline import Model

ON_DEMAND_PER_MILLION_WRU = 0.625
ON_DEMAND_PER_MILLION_RRU = 0.125
SQS_PER_MILLION = 0.40
LAMBDA_PER_MILLION = 0.20
LAMBDA_GB_SECOND = 0.0000133334  # arm64
STORAGE_PER_GB_MONTH = 0.25
STORAGE_IA_PER_GB_MONTH = 0.10


def percentile(values: list[tuple[float, int]], fraction: float) -> float:
    """The weighted percentile of (value, weight) pairs: the smallest value with at least
    ``fraction`` of the weight at or below it."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    total = sum(w for _, w in ordered)
    threshold = fraction * total
    running = 0
    for value, w in ordered:
        running += w
        if running >= threshold:
            return value
    return ordered[-1][0]


@dataclass(frozen=True)
class Summary:
    fired: int
    tasks: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    peak_concurrency: int
    hottest_partition_wcu: int
    throttled_wcu: int
    peak_queue_depth: int
    peak_in_flight: int
    """The most messages in flight on one delay queue (SQS caps it near 120,000)."""
    drain_s: float
    """From the first due time to the last fire."""
    cost_per_million: float
    cold_starts: int


def summarize(model: Model) -> Summary:
    late = [(lateness, w) for _, lateness, w in model.lateness]
    fired = model.counts.fired or 1
    hottest = model.table.hottest()
    first_due = min((d for d, _, _ in model.lateness), default=0)
    last_fire = max((d + lat for d, lat, _ in model.lateness), default=0.0)
    return Summary(
        fired=model.counts.fired,
        tasks=model.total,
        p50_ms=percentile(late, 0.50),
        p99_ms=percentile(late, 0.99),
        max_ms=max((lat for lat, _ in late), default=float("nan")),
        peak_concurrency=model.triggers.peak,
        hottest_partition_wcu=max(hottest.values(), default=0),
        throttled_wcu=model.table.throttled,
        peak_queue_depth=max((s[1] for s in model.samples), default=0),
        peak_in_flight=max(q.peak_in_flight for q in model.queues),
        drain_s=(last_fire - first_due) / 1000,
        cost_per_million=cost(model) / fired * 1e6,
        cold_starts=model.triggers.cold_starts,
    )


def cost(model: Model) -> float:
    """Dollars for the firing path as counted (registration excluded, as in design.md's
    "scheduler overhead")."""
    c = model.counts
    return (
        (c.claim_wru + c.log_wru) / 1e6 * ON_DEMAND_PER_MILLION_WRU
        + c.rru / 1e6 * ON_DEMAND_PER_MILLION_RRU
        + c.sqs_requests / 1e6 * SQS_PER_MILLION
        + c.lambda_requests / 1e6 * LAMBDA_PER_MILLION
        + c.gb_seconds * LAMBDA_GB_SECOND
    )


def lateness_over_time(model: Model, step_s: int = 10) -> list[tuple[float, float, float, float]]:
    """(seconds from the first due time, p50, p99, max) of the fires due in each ``step_s``."""
    if not model.lateness:
        return []
    first = min(d for d, _, _ in model.lateness)
    windows: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for due, lateness, w in model.lateness:
        windows[int((due - first) // (step_s * 1000))].append((lateness, w))
    return [
        (k * step_s, percentile(v, 0.5), percentile(v, 0.99), max(x for x, _ in v)) for k, v in sorted(windows.items())
    ]


def hottest_over_time(model: Model, start_ms: float) -> list[tuple[float, int]]:
    return [(second - start_ms / 1000, units) for second, units in sorted(model.table.hottest().items())]
