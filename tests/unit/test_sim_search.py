"""The settings search (sim/search.py): best-first it returns the cheaper of two settings that
hold, never chooses one that does not, never runs one rejected on paper, and stops when the next
estimate is dearer than the cheapest that held. The paper rejects on hand-computed cases."""

from __future__ import annotations

import pytest

from sim import search
from sim.metrics import Summary
from sim.pipeline import Deployment, Platform

pytestmark = pytest.mark.unit


def summary(p99_ms: float, provisioned: float, fired: int = 100) -> Summary:
    return Summary(
        fired=fired,
        tasks=100,
        p50_ms=0.0,
        p99_ms=p99_ms,
        max_ms=p99_ms,
        peak_concurrency=1,
        hottest_partition_wcu=1,
        throttled_wcu=0,
        peak_queue_depth=0,
        peak_in_flight=0,
        drain_s=0.0,
        cost_per_million=provisioned + 0.4,
        cost_provisioned=provisioned,
        cold_starts=0,
    )


def candidate(batch: int, estimate: float, rejected: str = "") -> search.Candidate:
    return search.Candidate(batch, 128, 2_000, False, Deployment(batch_size=batch), estimate, rejected)


def test_best_first_returns_the_cheaper_of_two_that_hold() -> None:
    outcomes = {
        10: summary(30, provisioned=1.20),  # holds
        25: summary(2_500, provisioned=0.50),  # cheapest, but p99 2.5 s
        50: summary(20, provisioned=1.00),  # holds, cheaper
        75: summary(20, provisioned=0.10),  # rejected on paper: never run
        100: summary(20, provisioned=0.90),  # estimate dearer than the cheapest that held
        200: summary(20, provisioned=0.30, fired=99),  # under a second, but one task not fired
    }
    ran: list[int] = []

    def run(d: Deployment) -> tuple[Summary, float]:
        ran.append(d.batch_size)
        return outcomes[d.batch_size], 0.0

    pool = [
        candidate(10, 1.0),
        candidate(25, 0.8),
        candidate(50, 1.1),
        candidate(75, 0.1, rejected="claims in turn take 20 s"),
        candidate(100, 1.5),
        candidate(200, 0.9),
    ]
    trials = search.best_first(pool, run, "provisioned", budget=10)
    assert ran == [25, 200, 10, 50]
    best = search.cheapest(trials, "provisioned")
    assert best is not None
    assert best.candidate.batch == 50
    assert [t.holds for t in trials] == [False, False, True, True]


def test_nothing_holds_nothing_is_chosen() -> None:
    trials = search.best_first([candidate(10, 1.0)], lambda d: (summary(5_000, 0.5), 0.0), "provisioned", budget=3)
    assert search.cheapest(trials, "provisioned") is None


def test_the_budget_caps_the_runs() -> None:
    pool = [candidate(b, float(b)) for b in (10, 20, 30, 40)]
    trials = search.best_first(pool, lambda d: (summary(5_000, 0.5), 0.0), "provisioned", budget=2)
    assert [t.candidate.batch for t in trials] == [10, 20]


def test_a_claim_takes_its_cpu_at_the_memory_and_the_write() -> None:
    """7 ms of CPU at a full vCPU (1,769 MB), 128/1,769 of it at 128 MB, plus 6 ms of write."""
    assert search.claim_s(128, Platform()) == pytest.approx((7 / (128 / 1_769) + 6) / 1000)
    assert search.claim_s(1_769, Platform()) == pytest.approx(0.013)
    assert search.claim_s(3_008, Platform()) == pytest.approx(0.013)


def test_paper_rejects_claims_that_overrun_the_lead_and_a_cold_source_too_slow() -> None:
    by_key = {(c.batch, c.memory_mb, c.lead_ms, c.provisioned_mode): c for c in search.candidates(search.STEADY)}
    # 200 claims of 102.7 ms at 128 MB: 20.5 s, over a 2 s lead + 1 s
    assert "claims in turn" in by_key[(200, 128, 2_000, False)].rejected
    # 10 claims of 102.7 ms: 1.03 s, inside it
    assert by_key[(10, 128, 2_000, False)].rejected == ""
    cold = {(c.batch, c.memory_mb, c.lead_ms, c.provisioned_mode): c for c in search.candidates(search.COLD)}
    # standard mode starts at 5 batches; 100,000 a minute in batches of 10 needs ~417
    assert "starts at 5" in cold[(10, 128, 2_000, False)].rejected
    assert cold[(10, 128, 2_000, True)].rejected == ""


def test_the_derived_settings_cover_the_load() -> None:
    d = search.derive(search.STEADY, 100, 384, 3_000, provisioned_mode=False)
    # 16,667 fires/s x 1.01 WRU over the table's 40 partitions: with 64 shards a minute's keys put
    # up to 8 on one partition (2,100 WCU/s); with 1,024 at most 40 (657 WCU/s, under 70 %)
    assert search.busiest_keys(64, 40) * 16_667 * 1.01 / 64 > 1_000
    assert d.bucket_shards == 1_024
    assert search.busiest_keys(1_024, 40) * 16_667 * 1.01 / 1_024 < 700
    invocations = 1_000_000 / 60 / 100 * 3.5  # a 3.5 s invocation each
    assert d.account_concurrency >= 1.5 * invocations
    assert d.delay_queues * 1_000 >= invocations
    hot = search.derive(search.HOT, 200, 1_024, 3_000, provisioned_mode=True)
    assert hot.trigger_provisioned_concurrency >= 1_000_000 / 200
    assert hot.provisioned_pollers is not None
    assert hot.provisioned_pollers[0] * 10 * hot.delay_queues >= 1_000_000 / 200
    assert hot.delay_queues * 120_000 * 0.8 >= 1_000_000
