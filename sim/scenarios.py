"""The scenarios of docs/scale.md, each run under the default deployment and under the settings
that were tried to hold lateness p99 under a second."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from bench.prices import ON_DEMAND_PER_MILLION_RRU, STORAGE_IA_PER_GB_MONTH, STORAGE_PER_GB_MONTH
from shared.domain.buckets import MINUTE_MS
from shared.domain.firing import Timing
from sim.metrics import Summary
from sim.pipeline import Deployment, Model

NINE = 1_767_258_000_000
"""2026-01-01T09:00:00Z: the hot second's due time (any minute start would do)."""


@dataclass(frozen=True)
class Case:
    name: str
    deployment: Deployment
    note: str


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    build: Callable[[Deployment, int], Model]
    cases: tuple[Case, ...]
    sustained: bool = True
    """The load goes on at this rate (held capacity is billed over the run, sim/cost.py); False:
    a one-off burst, billed at least a billing step of what it holds."""


def steady(per_minute: int, minutes: int, weight: int, warm: bool) -> Callable[[Deployment, int], Model]:
    """``per_minute`` fires a minute, spread uniformly, for ``minutes``; ``warm``: the system
    has run at this rate before (event sources scaled, environments warm; the table has what the
    deployment says: its previous peak, its warm throughput, or none, a new table)."""

    def build(deployment: Deployment, seed: int) -> Model:
        per_second = per_minute // 60
        concurrency = min(deployment.account_concurrency, deployment.delay_queues * deployment.scaling().maximum)
        model = Model(
            deployment,
            seed=seed,
            weight=weight,
            warm_triggers=concurrency if warm else 0,
            busy_minutes=60.0 if warm else 0.0,
        )
        rng = random.Random(seed + 1)
        start = NINE
        for second in range(minutes * 60):
            for _ in range(per_second // weight):
                model.add(start + second * 1000 + rng.randrange(1000), weight)
        model.run(start - 3 * MINUTE_MS)
        return model

    return build


def hot_second(tasks: int, weight: int) -> Callable[[Deployment, int], Model]:
    """``tasks`` one-shot tasks all due at 09:00:00.000, on a system that was idle but warm
    for an ordinary load (1,000 environments, the event sources at their start)."""

    def build(deployment: Deployment, seed: int) -> Model:
        model = Model(deployment, seed=seed, weight=weight, warm_triggers=min(1_000, deployment.account_concurrency))
        model.add(NINE, tasks)
        model.run(NINE - 3 * MINUTE_MS)
        return model

    return build


_SIZED = Deployment(bucket_shards=64, delay_queues=4, account_concurrency=5_000, previous_peak_wcu=20_000)
FRESH = Deployment()
"""The default stack in a fresh account: Lambda's default 1,000 concurrent executions (the trigger's
lane 873 of them, by the stack's own rule), a new on-demand table (4,000 WCU a second on 4
partitions), 16 shards, one delay queue, batches of 10 at 128 MB."""

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "steady",
        "Steady 1,000,000 fires a minute for 10 minutes",
        steady(1_000_000, 10, weight=10, warm=True),
        (
            Case("defaults", Deployment(previous_peak_wcu=20_000), "16 shards, 1 delay queue, 1,000 concurrency"),
            Case("sized", _SIZED, "64 shards, 4 delay queues, account concurrency 5,000"),
            Case(
                "sized, 64 partitions",
                replace(_SIZED, previous_peak_wcu=0, warm_wcu=64_000, table_quota_wcu=64_000),
                "as sized, the table pre-warmed to 64,000 WCU: 64 partitions for 64 keys a minute",
            ),
            Case(
                "batches of 50",
                Deployment(bucket_shards=64, batch_size=50, trigger_memory_mb=1_024, previous_peak_wcu=20_000),
                "64 shards, 1 delay queue, batches of 50 at 1,024 MB, 1,000 concurrency",
            ),
        ),
    ),
    Scenario(
        "hot-second",
        "One hot second: 1,000,000 tasks due at 09:00:00.000",
        hot_second(1_000_000, weight=10),
        (
            Case("defaults", FRESH, "16 shards, 1 delay queue, 1,000 concurrency, a new table"),
            Case("sized", _SIZED, "the steady scenario's settings"),
            Case(
                "wide",
                Deployment(
                    bucket_shards=1_024,
                    delay_queues=10,
                    account_concurrency=20_000,
                    trigger_memory_mb=1_769,
                    warm_wcu=400_000,
                    table_quota_wcu=400_000,
                ),
                "1,024 shards, 10 queues, 20,000 concurrency, 1,769 MB, 400,000 WCU warm",
            ),
            Case(
                "wide + provisioned",
                Deployment(
                    bucket_shards=1_024,
                    delay_queues=10,
                    account_concurrency=20_000,
                    trigger_memory_mb=1_769,
                    batch_size=100,
                    provisioned_pollers=(100, 200),
                    trigger_provisioned_concurrency=10_000,
                    warm_wcu=400_000,
                    table_quota_wcu=400_000,
                ),
                "as wide, batches of 100, 100 provisioned pollers a queue, 10,000 provisioned concurrency",
            ),
            Case(
                "paced",
                Deployment(
                    bucket_shards=1_024,
                    delay_queues=10,
                    account_concurrency=20_000,
                    trigger_memory_mb=1_769,
                    batch_size=200,
                    provisioned_pollers=(100, 200),
                    trigger_provisioned_concurrency=5_500,
                    warm_wcu=400_000,
                    table_quota_wcu=400_000,
                    timing=Timing(lead_ms=3_000),
                ),
                "as wide, batches of 200, lead 3 s, 100 provisioned pollers a queue, 5,500 provisioned concurrency",
            ),
        ),
        sustained=False,
    ),
    Scenario(
        "cold-start",
        "Cold start: idle to 100,000 fires a minute",
        steady(100_000, 10, weight=1, warm=False),
        (
            Case("defaults", Deployment(), "16 shards, 1 delay queue, standard event source"),
            Case(
                "provisioned",
                Deployment(provisioned_pollers=(20, 100), warm_wcu=4_000),
                "provisioned pollers (20 minimum) on the delay queue",
            ),
        ),
    ),
)


@dataclass(frozen=True)
class Storage:
    tasks: int
    gb: float
    per_month: float
    per_month_ia: float
    scans_per_month: int
    scan_rru_per_month: float
    scan_cost_per_month: float


def stored(tasks: int = 10_000_000_000, shards: int = 64, item_bytes: int = 600) -> Storage:
    """10 billion stored tasks: storage by item size; the scans read only the buckets of the
    minutes they stage (each a Query of at least 0.5 RRU per shard per minute), so their cost
    does not grow with what is stored, only with what falls due (arithmetic, not simulated)."""
    gb = tasks * item_bytes / 1e9
    scans = shards * 60 * 24 * 30
    rru = scans * 0.5
    return Storage(
        tasks,
        gb,
        gb * STORAGE_PER_GB_MONTH,
        gb * STORAGE_IA_PER_GB_MONTH,
        scans,
        rru,
        rru / 1e6 * ON_DEMAND_PER_MILLION_RRU,
    )


@dataclass(frozen=True)
class BenchCheck:
    """The model on `make bench`'s workload, per fired task (docs/design.md, 4.1 has the
    measured side)."""

    fired: int
    batch: float
    invocation_s: float
    claim_wru: float
    log_wru: float
    sqs_requests: float
    trigger_gb_s: float
    p99_ms: float
    cost_per_million: float


def bench_check(seed: int) -> BenchCheck:
    """1,000 one-shot tasks due over 2 minutes, 8 a second, 2 shards, one delay queue
    (`make bench ARGS="--tasks 1000 --window 120"`), with AWS's tick and scans."""
    from sim.metrics import summarize

    model = Model(Deployment(bucket_shards=2), seed=seed, weight=1, warm_triggers=10)
    for i in range(1_000):
        model.add(NINE + i * 120, 1)
    model.run(NINE - 3 * MINUTE_MS)
    c = model.counts
    fired = c.fired or 1
    invocations = c.trigger_invocations or 1
    return BenchCheck(
        fired=c.fired,
        batch=c.fired / invocations,
        invocation_s=c.trigger_gb_seconds / invocations / (model.d.trigger_memory_mb / 1024),
        claim_wru=c.claim_wru / fired,
        log_wru=c.log_wru / fired,
        sqs_requests=c.sqs_requests / fired,
        trigger_gb_s=c.trigger_gb_seconds / fired,
        p99_ms=summarize(model).p99_ms,
        cost_per_million=summarize(model).cost_per_million,
    )


def holds_p99(s: Summary) -> bool:
    """The goal: lateness p99 under a second, every task fired."""
    return s.p99_ms < 1000 and s.fired == s.tasks


def holds_every_fire(s: Summary) -> bool:
    """Stricter: every fire under a second (no claim handed back to the queue)."""
    return s.max_ms < 1000 and s.fired == s.tasks


@dataclass(frozen=True)
class RateFound:
    """The largest steady rate (on a grid) at which a deployment holds, and the step above it."""

    rate: int
    """Fires a second; 0: not even the lowest rate tried holds."""
    held: Summary | None
    above_rate: int
    above: Summary | None
    """None: the highest rate tried holds too (the rate is at least ``rate``)."""
    runs: int


def largest_steady_rate(
    deployment: Deployment,
    seed: int,
    holds: Callable[[Summary], bool] = holds_p99,
    low: int = 100,
    high: int = 4_000,
    step: int = 100,
    minutes: int = 10,
) -> RateFound:
    """Bisection on a grid of ``step`` fires a second over steady runs of ``minutes`` (the steady
    scenario's: the event sources scaled and the environments warm, the table as the deployment
    has it), assuming a rate that holds holds at every lower rate."""
    from sim.metrics import summarize

    runs: dict[int, Summary] = {}

    def run(rate: int) -> Summary:
        if rate not in runs:
            weight = 10 if rate % 10 == 0 else 1
            runs[rate] = summarize(steady(rate * 60, minutes, weight=weight, warm=True)(deployment, seed))
        return runs[rate]

    if not holds(run(low)):
        return RateFound(0, None, low, runs[low], len(runs))
    if holds(run(high)):
        return RateFound(high, runs[high], high, None, len(runs))
    good, bad = low, high
    while bad - good > step:
        middle = good + (bad - good) // (2 * step) * step
        if holds(run(middle)):
            good = middle
        else:
            bad = middle
    return RateFound(good, runs[good], bad, runs[bad], len(runs))
