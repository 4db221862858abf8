"""Cost at scale: a run's counted calls priced as `make bench` prices them (bench/prices.py,
bench/capacity.py), on two lines.

* **on-demand**: DynamoDB on-demand, Lambda on demand. What the deployment provisions itself
  (provisioned pollers, the trigger's provisioned concurrency) is billed as held.
* **provisioned**: DynamoDB provisioned capacity and the trigger's provisioned concurrency, both
  held at the utilisation target (70 %, PROVISIONED_UTILISATION) of the run's mean use and never
  under its peak second (DynamoDB) or the deployment's own setting (Lambda).

Capacity that is held (provisioned WCU/RCU, provisioned concurrency, event pollers) is billed
for the period the run's fires cover when the load is **sustained** (it goes on at this rate, so
the held capacity is shared by the fires of every such period), and for at least its billing
step when it is a one-off burst (DynamoDB and event pollers by the hour, provisioned concurrency
by 5 minutes). CloudWatch Logs: design.md section 4's estimate per trigger invocation (`make
bench` does not count it either). Every figure is $ per million fires.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench import prices as p
from sim.aws import INVOKES_PER_POLLER
from sim.pipeline import Model

LOG_BYTES_PER_INVOCATION = 1_300
"""Assumption (design.md, section 4): EMF metrics and Lambda's START/END/REPORT lines."""
HOUR_S = 3600.0
INVOCATIONS_PER_POLLER = INVOKES_PER_POLLER
"""Concurrent invocations one provisioned SQS event poller serves (docs/scale.md, section 2)."""


@dataclass(frozen=True)
class Usage:
    """What a run used, in total, and what it held."""

    fires: int
    wru: float
    rru: float
    sqs_requests: float
    lambda_requests: float
    gb_seconds: float
    """Every function's (trigger, scanners)."""
    trigger_gb_seconds: float
    trigger_invocations: float
    trigger_memory_mb: int
    span_s: float
    """The period the fires cover: from when the first could be received (its due time less the
    lead and a second) to the last fire."""
    peak_wcu: float
    """The table's busiest second, in write units."""
    provisioned_concurrency: int
    """The trigger's provisioned concurrency as the deployment sets it."""
    poller_units: float
    """Event pollers held on average over the span, all provisioned-mode mappings together."""
    sustained: bool


@dataclass(frozen=True)
class Bill:
    """$ per million fires, by line."""

    lines: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.lines.values())


def held_s(usage: Usage, billing_step_s: float) -> float:
    """How long held capacity is billed: the span if the load goes on, else the span rounded up
    to the billing step."""
    if usage.sustained:
        return usage.span_s
    return max(billing_step_s, math.ceil(usage.span_s / billing_step_s) * billing_step_s)


def _per_million(dollars: float, usage: Usage) -> float:
    return dollars / max(usage.fires, 1) * 1e6


def _lambda(usage: Usage, concurrency: int) -> dict[str, float]:
    """Lambda's requests and duration, with ``concurrency`` trigger environments provisioned:
    their time held at the provisioned price, the trigger's GB-s that ran on them at the lower
    duration price, the rest at the on-demand price."""
    gb = usage.trigger_memory_mb / 1024
    held = concurrency * gb * held_s(usage, p.LAMBDA_PROVISIONED_BILLING_S)
    on_provisioned = min(usage.trigger_gb_seconds, concurrency * gb * usage.span_s)
    rest = usage.gb_seconds - on_provisioned
    lines = {
        "Lambda requests": usage.lambda_requests / 1e6 * p.LAMBDA_PER_MILLION,
        "Lambda duration": rest * p.LAMBDA_GB_SECOND + on_provisioned * p.LAMBDA_PROVISIONED_DURATION_GB_SECOND,
    }
    if concurrency:
        lines["Lambda provisioned concurrency"] = held * p.LAMBDA_PROVISIONED_GB_SECOND
    return lines


def _common(usage: Usage) -> dict[str, float]:
    lines = {
        "SQS requests": usage.sqs_requests / 1e6 * p.SQS_PER_MILLION,
        "CloudWatch Logs": usage.trigger_invocations * LOG_BYTES_PER_INVOCATION / 1e9 * p.LOGS_INGESTION_PER_GB,
    }
    if usage.poller_units:
        hours = held_s(usage, HOUR_S) / HOUR_S
        lines["event pollers (provisioned mode)"] = usage.poller_units * hours * p.EVENT_POLLER_UNIT_HOUR_SQS
    return lines


def on_demand(usage: Usage) -> Bill:
    lines = {
        "DynamoDB writes": usage.wru / 1e6 * p.ON_DEMAND_PER_MILLION_WRU,
        "DynamoDB reads": usage.rru / 1e6 * p.ON_DEMAND_PER_MILLION_RRU,
        **_common(usage),
        **_lambda(usage, usage.provisioned_concurrency),
    }
    return Bill({k: _per_million(v, usage) for k, v in lines.items()})


def provisioned(usage: Usage, utilisation: float = p.PROVISIONED_UTILISATION) -> Bill:
    span = max(usage.span_s, 1.0)
    hours = held_s(usage, HOUR_S) / HOUR_S
    wcu = max(usage.wru / span / utilisation, usage.peak_wcu)
    rcu = usage.rru / span / utilisation
    mean_concurrency = usage.trigger_gb_seconds / (usage.trigger_memory_mb / 1024) / span
    concurrency = max(usage.provisioned_concurrency, math.ceil(mean_concurrency / utilisation))
    lines = {
        "DynamoDB writes": wcu * hours * p.PROVISIONED_WCU_HOUR,
        "DynamoDB reads": rcu * hours * p.PROVISIONED_RCU_HOUR,
        **_common(usage),
        **_lambda(usage, concurrency),
    }
    return Bill({k: _per_million(v, usage) for k, v in lines.items()})


def usage_of(model: Model, sustained: bool) -> Usage:
    """A run's counts, and what its deployment held."""
    c = model.counts
    d = model.d
    first_due = min((due for due, _, _ in model.lateness), default=0)
    last_fire = max((due + late for due, late, _ in model.lateness), default=0.0)
    first_receivable = first_due - d.timing.lead_ms - 1000  # whole-second delays: up to 1 s more
    span_s = max(1.0, (last_fire - first_receivable) / 1000)
    poller_units = 0.0
    if d.provisioned_pollers is not None:
        mean_concurrency = c.trigger_gb_seconds / (d.trigger_memory_mb / 1024) / span_s
        per_queue = mean_concurrency / d.delay_queues / INVOCATIONS_PER_POLLER
        poller_units = d.delay_queues * max(float(d.provisioned_pollers[0]), per_queue)
    return Usage(
        fires=c.fired,
        wru=c.claim_wru + c.log_wru,
        rru=c.rru,
        sqs_requests=c.sqs_requests,
        lambda_requests=c.lambda_requests,
        gb_seconds=c.gb_seconds,
        trigger_gb_seconds=c.trigger_gb_seconds,
        trigger_invocations=c.trigger_invocations,
        trigger_memory_mb=d.trigger_memory_mb,
        span_s=span_s,
        peak_wcu=max(model.table.by_second.values(), default=0),
        provisioned_concurrency=d.trigger_provisioned_concurrency,
        poller_units=poller_units,
        sustained=sustained,
    )
