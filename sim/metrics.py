"""What a run shows: lateness percentiles (overall and over time), peak concurrency, the hottest
partition, queue depth, and the cost per million fires on-demand and provisioned (sim/cost.py:
the prices and the pricing `make bench` uses, bench/prices.py)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sim import cost
from sim.pipeline import Model


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
    """On-demand (sim/cost.py), the firing path: registration excluded."""
    cost_provisioned: float
    cold_starts: int
    fire_rate_per_s: float = 0.0
    """Fires a second from the first due time to the last fire: what the pipeline delivered (under
    the rate due when it fell behind)."""
    invocation_s: float = 0.0
    """A trigger invocation's mean length, from its receive to its environment's release."""
    partitions: int = 0
    """The table's partitions at the end (more than at the start where some split for heat)."""
    splits: int = 0


def summarize(model: Model, sustained: bool = True) -> Summary:
    """``sustained``: the load goes on at this rate (held capacity is billed over the run's span,
    sim/cost.py), else a one-off burst."""
    late = [(lateness, w) for _, lateness, w in model.lateness]
    usage = cost.usage_of(model, sustained)
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
        cost_per_million=cost.on_demand(usage).total,
        cost_provisioned=cost.provisioned(usage).total,
        cold_starts=model.triggers.cold_starts,
        fire_rate_per_s=model.counts.fired / max((last_fire - first_due) / 1000, 1e-3),
        invocation_s=model.counts.trigger_gb_seconds
        / max(model.counts.trigger_invocations, 1)
        / (model.d.trigger_memory_mb / 1024),
        partitions=model.table.partitions,
        splits=len(model.table.splits),
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
