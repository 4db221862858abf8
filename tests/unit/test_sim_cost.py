"""The model's cost at scale (sim/cost.py) on hand-computed cases: a known count of calls priced
on-demand and provisioned gives the dollars worked out by hand, provisioned DynamoDB is priced as
`make bench` prices it, and held capacity is billed over the run or a billing step."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench import capacity
from sim import cost

pytestmark = pytest.mark.unit

# A million fires in batches of 10 at 128 MB over a minute: 1.1 WRU, 0.08 RRU, 0.3 SQS requests,
# 0.1 invocations and 0.03 GB-s a fire (design.md section 4's table).
MINUTE = cost.Usage(
    fires=1_000_000,
    wru=1_100_000,
    rru=80_000,
    sqs_requests=300_000,
    lambda_requests=100_000,
    gb_seconds=30_000,
    trigger_gb_seconds=30_000,
    trigger_invocations=100_000,
    trigger_memory_mb=128,
    span_s=60,
    peak_wcu=20_000,
    provisioned_concurrency=0,
    poller_units=0,
    sustained=True,
)


def test_on_demand_prices_each_call_at_its_public_price() -> None:
    bill = cost.on_demand(MINUTE)
    assert bill.lines["DynamoDB writes"] == pytest.approx(1.1 * 0.625)
    assert bill.lines["DynamoDB reads"] == pytest.approx(0.08 * 0.125)
    assert bill.lines["SQS requests"] == pytest.approx(0.3 * 0.40)
    assert bill.lines["Lambda requests"] == pytest.approx(0.1 * 0.20)
    assert bill.lines["Lambda duration"] == pytest.approx(30_000 * 0.0000133334)
    assert bill.lines["CloudWatch Logs"] == pytest.approx(100_000 * 1_300 / 1e9 * 0.50)  # $0.065
    assert bill.total == pytest.approx(0.6875 + 0.01 + 0.12 + 0.02 + 0.400002 + 0.065)
    assert "Lambda provisioned concurrency" not in bill.lines


def test_provisioned_writes_are_priced_as_make_bench_prices_them() -> None:
    """At the utilisation target and above the peak second, a sustained load's writes cost what
    bench/capacity.py charges per million writes."""
    bill = cost.provisioned(MINUTE)
    assert bill.lines["DynamoDB writes"] == pytest.approx(1.1 * capacity.provisioned_per_million_writes())
    assert bill.lines["DynamoDB writes"] == pytest.approx(1_100_000 / 60 / 0.7 * (60 / 3600) * 0.00065)
    assert bill.lines["DynamoDB reads"] == pytest.approx(0.08 * capacity.provisioned_per_million_reads())


def test_provisioned_concurrency_is_held_at_the_target_and_its_duration_is_cheaper() -> None:
    """30,000 GB-s at 0.125 GB over 60 s is 4,000 concurrent on average: 5,715 held at 70 %."""
    bill = cost.provisioned(MINUTE)
    assert bill.lines["Lambda provisioned concurrency"] == pytest.approx(5_715 * 0.125 * 60 * 0.0000033334)
    assert bill.lines["Lambda duration"] == pytest.approx(30_000 * 0.0000077778)
    assert bill.total < cost.on_demand(MINUTE).total


def test_the_peak_second_sets_provisioned_capacity_when_it_is_above_the_target() -> None:
    spiky = replace(MINUTE, peak_wcu=100_000)
    bill = cost.provisioned(spiky)
    assert bill.lines["DynamoDB writes"] == pytest.approx(100_000 * (60 / 3600) * 0.00065)


def test_a_burst_holds_its_capacity_for_a_billing_step() -> None:
    """A one-off burst of 5 s: event pollers are billed the hour, provisioned concurrency 5
    minutes, provisioned table capacity the hour."""
    burst = replace(
        MINUTE,
        trigger_memory_mb=1_024,
        trigger_gb_seconds=1_000,
        gb_seconds=1_000,
        span_s=5,
        provisioned_concurrency=1_000,
        poller_units=10,
        sustained=False,
    )
    bill = cost.on_demand(burst)
    assert bill.lines["event pollers (provisioned mode)"] == pytest.approx(10 * 1 * 0.00925)
    assert bill.lines["Lambda provisioned concurrency"] == pytest.approx(1_000 * 1.0 * 300 * 0.0000033334)
    assert bill.lines["Lambda duration"] == pytest.approx(1_000 * 0.0000077778)  # all ran on it
    provisioned = cost.provisioned(burst)
    assert provisioned.lines["DynamoDB writes"] == pytest.approx(max(1_100_000 / 5 / 0.7, 20_000) * 0.00065)


def test_a_sustained_load_shares_held_capacity_over_the_run() -> None:
    steady = replace(MINUTE, poller_units=10)
    assert cost.on_demand(steady).lines["event pollers (provisioned mode)"] == pytest.approx(10 * (60 / 3600) * 0.00925)
