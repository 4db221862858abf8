"""The settings search: for each scenario, the cheapest deployment the model finds that holds
lateness p99 under a second with every task fired.

The space is a coarse grid of the settings that change cost or lateness (trigger batch size,
memory, lead, event source mode); the others follow from them (the concurrency a batch needs
sets the delay queues, the account's concurrency, the provisioned pollers and provisioned
concurrency; the claims' pace sets the shards and the table's warm throughput). Each candidate
gets an **estimate** of its cost (the same prices, sim/cost.py, on calls counted on paper) and
two **early rejects** on paper: a batch whose claims, taken in turn, end more than a second
after the lead (the last of every batch would be late), and an event source that starts below
the concurrency the load needs on a system that is not already scaled (everything due while it
scales is late). The rest run best-first, cheapest estimate first, on a shortened scenario;
the search stops when the next estimate is dearer than the cheapest run that held, or at its
budget. The chosen settings are then run on the full scenario.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from bench import prices as p
from shared.domain.buckets import bucket_of
from shared.domain.firing import Timing
from sim import cost
from sim.aws import MAXIMUM_CONCURRENCY_RANGE, DynamoLimits, Table
from sim.metrics import Summary, summarize
from sim.pipeline import Deployment, Model, Platform, sqs_calls
from sim.scenarios import NINE, Scenario, hot_second, steady

PER_POLLER = cost.INVOCATIONS_PER_POLLER
QUEUE_MAPPING_MAX = MAXIMUM_CONCURRENCY_RANGE[1]
"""The stack sets each delay queue's MaximumConcurrency in standard mode: at most 1,000."""
IN_FLIGHT_SHARE = 0.8
"""Of a queue's 120,000 in flight, what a deployment plans to use."""


@dataclass(frozen=True)
class Space:
    """A scenario's search: its load, what it starts from, and the grid."""

    key: str
    per_second: float
    """The rate due (a burst: its size, all due at once)."""
    burst: bool
    warm: bool
    """The event sources are already scaled (a system in steady state)."""
    base: Deployment
    batches: tuple[int, ...]
    memories: tuple[int, ...]
    leads_ms: tuple[int, ...]
    modes: tuple[bool, ...]
    """Provisioned event source mode tried (True) or standard (False)."""
    shortened: Callable[[Deployment, int], Model]
    """The scenario the candidates run on (shorter than the full one where it can be)."""
    objective: str
    """Which line the search minimises: "provisioned" or "on-demand"."""
    budget: int
    per_batch: bool = False
    """Search each batch size on its own (to price what batch size does)."""


@dataclass(frozen=True)
class Candidate:
    batch: int
    memory_mb: int
    lead_ms: int
    provisioned_mode: bool
    deployment: Deployment
    estimate: float
    rejected: str
    """Why it was rejected on paper, or ""."""

    @property
    def label(self) -> str:
        mode = "provisioned pollers" if self.provisioned_mode else "standard event source"
        return f"batches of {self.batch}, {self.memory_mb:,} MB, lead {self.lead_ms / 1000:g} s, {mode}"


@dataclass(frozen=True)
class Trial:
    candidate: Candidate
    summary: Summary
    trigger_gb_s: float
    """The trigger's GB-s per fire."""
    seconds: float

    @property
    def holds(self) -> bool:
        return holds(self.summary)


def holds(s: Summary) -> bool:
    return s.p99_ms < 1000 and s.fired == s.tasks


def objective(s: Summary, line: str) -> float:
    return s.cost_provisioned if line == "provisioned" else s.cost_per_million


def claim_s(memory_mb: int, platform: Platform) -> float:
    """One claim, taken in turn: its CPU at this memory and the write's round trip."""
    vcpu = min(1.0, memory_mb / platform.lambdas.full_vcpu_mb)
    return (platform.claim_cpu_ms / vcpu + platform.dynamo.write_latency_ms) / 1000  # the medians


def invocation_s(batch: int, memory_mb: int, lead_ms: int, platform: Platform) -> float:
    """On paper: an invocation waits out the lead (plus half a second of rounding on average)
    or takes its claims in turn, whichever is longer."""
    return max(lead_ms / 1000 + 0.5, batch * claim_s(memory_mb, platform) + 0.1)


def busiest_keys(shards: int, partitions: int, minutes: int = 10) -> int:
    """The most of a minute's ``shards`` bucket keys that land on one of ``partitions`` equal
    partitions, over the scenarios' first ``minutes`` minutes (the model's own hashing)."""
    table = Table(DynamoLimits(on_demand_initial_wcu=partitions * 1_000, table_quota_wcu=10**9))
    worst = 0
    for minute in range(minutes):
        counts: dict[int, int] = {}
        bucket = bucket_of(NINE + minute * 60_000)
        for shard in range(shards):
            p = table.partition_of(f"{bucket}#{shard}")
            counts[p] = counts.get(p, 0) + 1
        worst = max(worst, *counts.values())
    return worst


def derive(space: Space, batch: int, memory_mb: int, lead_ms: int, provisioned_mode: bool) -> Deployment:
    """The settings that follow from the batch: enough queues, concurrency, pollers, shards and
    table throughput for the load."""
    platform = Platform()
    if space.burst:
        invocations = math.ceil(space.per_second / batch)  # all at once
        queues = max(1, math.ceil(space.per_second / (IN_FLIGHT_SHARE * 120_000)))
        shards = 1_024
        # The claims of the busiest partition, at 1,000 a second, within 70 % of the lead: enough
        # partitions (pre-warmed) that the fullest holds few of the 1,024 keys of the minute.
        wcu = 1_024_000
        while busiest_keys(shards, wcu // 1_000) * space.per_second / shards > 700 * lead_ms / 1000 and wcu < 4_096_000:
            wcu *= 2
    else:
        invocations = math.ceil(space.per_second / batch * invocation_s(batch, memory_mb, lead_ms, platform))
        queues = max(1, math.ceil(1.25 * invocations / QUEUE_MAPPING_MAX))
        wcu = 1_000 * math.ceil(1.3 * space.per_second * (1 + 1 / batch) / 1_000)
        partitions = Table(DynamoLimits(), space.base.warm_wcu, space.base.previous_peak_wcu).partitions
        partitions = max(partitions, math.ceil(wcu / 1_000))
        shards = 16
        # The busiest partition at 70 % of its 1,000 WCU a second: keys of a minute share partitions
        while busiest_keys(shards, partitions) * space.per_second * (1 + 1 / batch) / shards > 700 and shards < 1_024:
            shards *= 2
    pollers = None
    provisioned_concurrency = 0
    if provisioned_mode:
        per_queue = max(2, min(200, math.ceil(1.1 * invocations / queues / PER_POLLER)))
        pollers = (per_queue, 2_000)
        if space.burst:
            provisioned_concurrency = math.ceil(1.05 * invocations)
    concurrency = max(space.base.account_concurrency, math.ceil(1.5 * invocations) + 1_000)
    warm = max(space.base.warm_wcu, wcu if wcu > 2 * space.base.previous_peak_wcu and wcu > 4_000 else 0)
    return replace(
        space.base,
        bucket_shards=max(space.base.bucket_shards, shards),
        delay_queues=queues,
        trigger_memory_mb=memory_mb,
        batch_size=batch,
        account_concurrency=concurrency,
        provisioned_pollers=pollers,
        trigger_provisioned_concurrency=provisioned_concurrency,
        warm_wcu=warm,
        table_quota_wcu=max(space.base.table_quota_wcu, warm),
        timing=Timing(lead_ms=lead_ms),
    )


def estimate(space: Space, d: Deployment) -> cost.Usage:
    """A candidate's calls on paper for a million fires (the counts sim/pipeline.py makes:
    claims + a run log per batch, a send per ten staged, a receive and a delete per ten of a batch)."""
    platform = Platform()
    fires = 1_000_000
    b = d.batch_size
    invocation = invocation_s(b, d.trigger_memory_mb, d.timing.lead_ms, platform)
    span = d.timing.lead_ms / 1000 + 2 if space.burst else fires / space.per_second
    trigger_gb_s = fires / b * invocation * d.trigger_memory_mb / 1024
    scanner_gb_s = fires / (platform.scan_send_batches_per_s * 10) * 0.25
    pollers = 0.0
    if d.provisioned_pollers is not None:
        concurrency = trigger_gb_s / (d.trigger_memory_mb / 1024) / span
        pollers = d.delay_queues * max(float(d.provisioned_pollers[0]), concurrency / d.delay_queues / PER_POLLER)
    return cost.Usage(
        fires=fires,
        wru=fires * (1 + 1 / b),
        rru=fires * platform.item_bytes / 4096 / 2,
        sqs_requests=fires * (0.1 + 2 * sqs_calls(b) / b),
        lambda_requests=fires / b,
        gb_seconds=trigger_gb_s + scanner_gb_s,
        trigger_gb_seconds=trigger_gb_s,
        trigger_invocations=fires / b,
        trigger_memory_mb=d.trigger_memory_mb,
        span_s=span,
        peak_wcu=fires * (1 + 1 / b) / span * 1.1,
        provisioned_concurrency=d.trigger_provisioned_concurrency,
        poller_units=pollers,
        sustained=not space.burst,
    )


def candidates(space: Space) -> list[Candidate]:
    platform = Platform()
    found: list[Candidate] = []
    for batch in space.batches:
        for memory in space.memories:
            for lead in space.leads_ms:
                for mode in space.modes:
                    d = derive(space, batch, memory, lead, mode)
                    usage = estimate(space, d)
                    bill = cost.provisioned(usage) if space.objective == "provisioned" else cost.on_demand(usage)
                    rejected = ""
                    claims = batch * claim_s(memory, platform)
                    start = d.scaling().start * d.delay_queues
                    busy_s = 1.0 if space.burst else invocation_s(batch, memory, lead, platform)
                    need = math.ceil(space.per_second * busy_s / batch)
                    if claims > lead / 1000 + 1.0:
                        rejected = f"claims in turn take {claims:.1f} s, over the lead + 1 s"
                    elif not space.warm and start < need:
                        rejected = f"the event source starts at {start:,} concurrent batches, under the {need:,} needed"
                    found.append(Candidate(batch, memory, lead, mode, d, bill.total, rejected))
    return found


def best_first(
    pool: Iterable[Candidate], run: Callable[[Deployment], tuple[Summary, float]], line: str, budget: int
) -> list[Trial]:
    """Runs the candidates that were not rejected, cheapest estimate first, until the next
    estimate is dearer than the cheapest run that held (or ``budget`` runs)."""
    trials: list[Trial] = []
    best = math.inf
    for candidate in sorted((c for c in pool if not c.rejected), key=lambda c: c.estimate):
        if len(trials) >= budget or candidate.estimate >= best:
            break
        started = time.monotonic()
        summary, gb_s = run(candidate.deployment)
        trial = Trial(candidate, summary, gb_s, time.monotonic() - started)
        trials.append(trial)
        if trial.holds:
            best = min(best, objective(summary, line))
    return trials


def cheapest(trials: Iterable[Trial], line: str) -> Trial | None:
    held = [t for t in trials if t.holds]
    return min(held, key=lambda t: objective(t.summary, line), default=None)


def search(space: Space, seed: int) -> list[Trial]:
    def run(d: Deployment) -> tuple[Summary, float]:
        model = space.shortened(d, seed)
        return summarize(model, sustained=not space.burst), model.counts.trigger_gb_seconds / max(model.counts.fired, 1)

    pool = candidates(space)
    if not space.per_batch:
        return best_first(pool, run, space.objective, space.budget)
    trials: list[Trial] = []
    for batch in space.batches:
        trials += best_first((c for c in pool if c.batch == batch), run, space.objective, space.budget)
    return trials


STEADY = Space(
    key="steady",
    per_second=1_000_000 / 60,
    burst=False,
    warm=True,
    base=Deployment(previous_peak_wcu=20_000),
    batches=(10, 25, 50, 100, 200),
    memories=(128, 256, 384, 512, 768, 1_024, 1_769),
    leads_ms=(2_000, 3_000, 4_000),
    modes=(False,),
    shortened=steady(1_000_000, 2, weight=10, warm=True),
    objective="provisioned",
    budget=3,
    per_batch=True,
)
HOT = Space(
    key="hot-second",
    per_second=1_000_000,
    burst=True,
    warm=False,
    base=Deployment(),
    batches=(100, 200, 300, 400),
    memories=(512, 768, 1_024, 1_769),
    leads_ms=(2_000, 3_000, 4_000),
    modes=(False, True),
    shortened=hot_second(1_000_000, weight=10),
    objective="on-demand",
    budget=8,
)
COLD = Space(
    key="cold-start",
    per_second=100_000 / 60,
    burst=False,
    warm=False,
    base=Deployment(),
    batches=(10, 25, 50),
    memories=(128, 256, 512),
    leads_ms=(2_000, 3_000),
    modes=(False, True),
    shortened=steady(100_000, 4, weight=1, warm=False),
    objective="provisioned",
    budget=6,
)
SPACES: tuple[Space, ...] = (STEADY, HOT, COLD)


def report(scenarios: Iterable[Scenario], seed: int) -> dict[str, list[str]]:
    """Runs every search and the chosen settings on the full scenarios; its tables (markdown
    lines: ``chosen``, ``by_line``, ``per_batch``, ``tried``) for docs/scale/results.md and
    docs/scale.md."""
    by_key = {s.key: s for s in scenarios}
    chosen: list[str] = [
        "| scenario | chosen settings | p99 (s) | max (s) | $ per million on-demand | $ per million provisioned | "
        "runs (rejected on paper) |",
        "|---|---|---|---|---|---|---|",
    ]
    tried: list[str] = [
        "| scenario | candidate (shortened run) | estimate ($) | p99 (s) | holds | on-demand ($) | provisioned ($) |",
        "|---|---|---|---|---|---|---|",
    ]
    per_batch: list[str] = [
        "| batch | memory (MB) | lead (s) | p99 (s) | max (s) | on-demand ($) | provisioned ($) | "
        "trigger GB-s per fire |",
        "|---|---|---|---|---|---|---|---|",
    ]
    bills: dict[str, tuple[cost.Bill, cost.Bill]] = {}
    for space in SPACES:
        trials = search(space, seed)
        rejected = sum(1 for c in candidates(space) if c.rejected)
        for t in trials:
            s = t.summary
            tried.append(
                f"| {space.key} | {t.candidate.label} | {t.candidate.estimate:.2f} | {s.p99_ms / 1000:.2f} | "
                f"{'yes' if t.holds else 'no'} | {s.cost_per_million:.2f} | {s.cost_provisioned:.2f} |"
            )
        if space.per_batch:
            for batch in space.batches:
                best = cheapest((t for t in trials if t.candidate.batch == batch), space.objective)
                if best is None:
                    per_batch.append(f"| {batch} | none held | | | | | | |")
                    continue
                s, c, gb_s = best.summary, best.candidate, best.trigger_gb_s
                per_batch.append(
                    f"| {batch} | {c.memory_mb:,} | {c.lead_ms / 1000:g} | {s.p99_ms / 1000:.2f} | "
                    f"{s.max_ms / 1000:.2f} | {s.cost_per_million:.2f} | {s.cost_provisioned:.2f} | {gb_s:.4f} |"
                )
        best = cheapest(trials, space.objective)
        if best is None:
            runs = f"{len(trials)} ({rejected})"
            chosen.append(f"| {space.key} | none of {len(trials)} runs held | | | | | {runs} |")
            continue
        scenario = by_key[space.key]
        model = scenario.build(best.candidate.deployment, seed)
        full = summarize(model, sustained=scenario.sustained)
        usage = cost.usage_of(model, scenario.sustained)
        bills[space.key] = (cost.on_demand(usage), cost.provisioned(usage))
        d = best.candidate.deployment
        settings = (
            f"{best.candidate.label}; {d.bucket_shards:,} shards, {d.delay_queues} delay "
            f"queue{'s' if d.delay_queues > 1 else ''}, "
            f"account concurrency {d.account_concurrency:,}"
        )
        if d.provisioned_pollers:
            settings += f", {d.provisioned_pollers[0]} provisioned pollers a queue"
        if d.trigger_provisioned_concurrency:
            settings += f", {d.trigger_provisioned_concurrency:,} provisioned concurrency"
        if d.warm_wcu:
            settings += f", {d.warm_wcu:,} WCU warm throughput"
        verdict = "" if holds(full) else " (full run: does not hold)"
        chosen.append(
            f"| {space.key} | {settings}{verdict} | {full.p99_ms / 1000:.2f} | {full.max_ms / 1000:.2f} | "
            f"{full.cost_per_million:.2f} | {full.cost_provisioned:.2f} | {len(trials)} ({rejected}) |"
        )
    names = list(dict.fromkeys(name for pair in bills.values() for bill in pair for name in bill.lines))
    by_line = [
        "| $ per million fires | " + " | ".join(f"{key} on-demand | {key} provisioned" for key in bills) + " |",
        "|---|" + "---|---|" * len(bills),
    ]
    for name in [*names, "total"]:
        cells = []
        for on_demand, provisioned in bills.values():
            for bill in (on_demand, provisioned):
                value = bill.total if name == "total" else bill.lines.get(name)
                cells.append("" if value is None else f"{value:.3f}")
        by_line.append(f"| {name} | " + " | ".join(cells) + " |")
    scheduler = f"{p.EVENTBRIDGE_SCHEDULER_PER_MILLION:.2f}"
    by_line.append("| EventBridge Scheduler | " + " | ".join(scheduler for _ in range(2 * len(bills))) + " |")
    return {"chosen": chosen, "by_line": by_line, "per_batch": per_batch, "tried": tried}
