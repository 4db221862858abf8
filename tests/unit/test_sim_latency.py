"""Latencies drawn from distributions (sim/latency.py): a lognormal through a median and a p99
draws samples with that median and that p99, from the run's seeded generator (the same seed, the
same draws); a constant draws itself."""

from __future__ import annotations

import random

import pytest

from sim.latency import Z99, Latency

pytestmark = pytest.mark.unit


def test_a_lognormal_through_a_median_and_a_p99_draws_them() -> None:
    latency = Latency(2.0, 5.2)
    assert latency.sigma == pytest.approx(0.411, abs=0.001)  # ln(2.6) / 2.326
    assert latency.quantile(0.5) == pytest.approx(2.0)
    assert latency.quantile(0.99) == pytest.approx(5.2)
    rng = random.Random(1)
    drawn = sorted(latency.draw(rng) for _ in range(20_000))
    assert drawn[10_000] == pytest.approx(2.0, rel=0.03)
    assert drawn[19_800] == pytest.approx(5.2, rel=0.06)
    assert min(drawn) > 0
    assert sum(drawn) / len(drawn) == pytest.approx(latency.mean_ms(), rel=0.02)
    assert round(Z99, 4) == 2.3263


def test_the_same_seed_draws_the_same_and_a_constant_draws_itself() -> None:
    latency = Latency(6.0, 18.0)
    assert [latency.draw(random.Random(7)) for _ in range(3)] == [latency.draw(random.Random(7)) for _ in range(3)]
    assert Latency.constant(20.0).draw(random.Random(3)) == 20.0
    assert Latency.constant(20.0).sigma == 0
    assert Latency(7.0, 10.0).scaled(1769 / 128).median_ms == pytest.approx(96.7, abs=0.1)
    with pytest.raises(ValueError, match="median <= p99"):
        Latency(5.0, 4.0)
