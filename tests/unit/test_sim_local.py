"""The local runtime's model (sim/local.py) on cases checked by hand: moto as one FIFO server
(over its capacity the waits grow without bound, under it none), a long poll answers as soon as
a message is receivable, the batching window, the tick's Invokes of the scanner (no scan-request
queue), a light load fires every task at the call's time, a heavy one falls behind; its defaults
are the local runtime's own; the measured figures' file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from sim.aws import Message
from sim.engine import Loop
from sim.latency import Latency
from sim.local import (
    RATES,
    LocalModel,
    LocalRuntime,
    Moto,
    MotoCosts,
    Workload,
    checked_workloads,
    comparison,
    read_measured,
    run_local,
)

pytestmark = pytest.mark.unit

CALL = Latency.constant(2.0)
"""The call as a constant, for cases computed by hand."""

MEASURED = Path(__file__).resolve().parents[2] / "docs" / "scale" / "bench-measured.json"


def _calls(moto: Moto, loop: Loop, every_ms: float, count: int) -> list[float]:
    """``count`` claims, one every ``every_ms`` (an open loop); when each was answered."""
    answered: list[float] = []
    for i in range(count):
        loop.at(i * every_ms, moto.call, "Claim", lambda: answered.append(loop.now))
    loop.run()
    return answered


def test_moto_over_its_capacity_builds_a_backlog_that_grows_without_bound() -> None:
    """6 ms calls every 5 ms: call k arrives at 5k + 1 and starts at 6k + 1, so it waits k ms,
    and is answered at 6k + 8."""
    loop = Loop()
    moto = Moto(loop, MotoCosts(claim_ms=6.0, round_trip_ms=2.0))
    answered = _calls(moto, loop, 5.0, 200)
    assert answered == pytest.approx([6 * k + 8 for k in range(200)])
    assert moto.max_wait_ms == pytest.approx(199.0)
    assert moto.busy_ms == pytest.approx(1200.0)


def test_moto_under_its_capacity_answers_every_call_in_its_own_time() -> None:
    loop = Loop()
    moto = Moto(loop, MotoCosts(claim_ms=6.0, round_trip_ms=2.0))
    answered = _calls(moto, loop, 10.0, 100)
    assert answered == pytest.approx([10 * k + 8 for k in range(100)])
    assert moto.max_wait_ms == 0
    assert moto.busy_between(0, 1000) == pytest.approx(0.6)


def test_a_call_s_cost_grows_with_what_it_carries_where_moto_s_does() -> None:
    unpatched = MotoCosts(send_per_entry_queued_ms=0.015, receive_message_ms=2.3)
    assert unpatched.service_ms("SendMessageBatch", entries=10, queued=0) == unpatched.send_message_batch_ms
    assert unpatched.service_ms("SendMessageBatch", entries=10, queued=500) == pytest.approx(2.2 + 0.015 * 10 * 500)
    assert unpatched.service_ms("ReceiveMessage", queued=500) == pytest.approx(2.3 + 0.013 * 500)
    costs = MotoCosts()
    assert costs.service_ms("SendMessageBatch", entries=10, queued=500) == costs.send_message_batch_ms
    assert costs.service_ms("Query", entries=50) == pytest.approx(1.4 + 0.135 * 50)
    assert costs.service_ms("PutItem", entries=10, queued=500) == costs.put_item_ms
    assert costs.with_overrides({"Claim": 9.0, "round_trip_ms": 1.0}).service_ms("Claim") == 9.0
    with pytest.raises(ValueError, match="no moto cost"):
        costs.with_overrides({"GetItem": 1.0})


def test_a_long_poll_answers_as_soon_as_a_message_is_receivable() -> None:
    """A message receivable at 3,000 ms: the waiting poll asks moto then, and has it back
    after the round trip and the receive's time; the batching window holds it 1 s; the claim
    is done long before its due time (5,000 ms), so it fires at due + the call."""
    costs = MotoCosts(round_trip_ms=2.0, receive_message_ms=3.0, receive_per_queued_ms=0.0)
    model = LocalModel(LocalRuntime(call=CALL), costs)
    model.total = 1
    poller = model.pollers[0]
    model._long_poll(poller)
    model._sent(model.queues[0], [Message(5_000, 0, 1)], [3])  # sent at 0 with a 3 s delay
    model.loop.run(2_999.0)
    assert poller.waiting  # still waiting, costing nothing
    assert model.moto.calls["ReceiveMessage"] == 0
    model.loop.run(3_005.0)
    assert [m.due_ms for m in poller.pending] == [5_000]  # answered at 3,000 + 1 + 3 + 1
    assert model.moto.busy_by_kind["ReceiveMessage"] == 3.0
    model.loop.run(4_000.0)
    assert poller.pending  # the batching window: not full, not a second old yet
    model.loop.run(10_000.0)
    assert model.lateness == [(5_000, CALL.median_ms, 1)]


def test_a_full_batch_goes_at_once_and_a_partial_one_after_the_window() -> None:
    model = LocalModel(LocalRuntime(), MotoCosts())
    poller = model.pollers[0]
    model._window(poller, [Message(60_000 + i, 0, 1) for i in range(13)])
    assert model.invocations == 1
    assert len(poller.pending) == 3
    model.loop.run(999.0)
    assert model.invocations == 1
    model.loop.run(1_000.0)
    assert model.invocations == 2
    assert not poller.pending


def test_the_tick_invokes_the_scanner_once_per_group_and_its_worker_scans_the_group_in_turn() -> None:
    """Two shards never scanned, at most 16 groups: two Invokes one after the other (no SQS call
    for the scans), each event run on a worker as soon as its 202 is back; with at most one group,
    one Invoke whose worker scans shard 0 and then shard 1."""
    for most, expected in ((16, [[0], [1]]), (1, [[0, 1]])):
        model = LocalModel(LocalRuntime(scanner_max_concurrency=most), MotoCosts())
        model._tick_local()  # no tasks: no tick after this one
        model.loop.run()
        calls = model.moto.calls
        assert calls["Invoke"] == len(expected)
        assert calls["SendMessageBatch"] == calls["ReceiveMessage"] == calls["DeleteMessageBatch"] == 0
        assert [[shard for shard, _ in group] for group in model.scan_groups] == expected
        assert calls["UpdateItem"] == 4  # each shard's lease and mark
        if most == 1:
            [[(_, first), (_, second)]] = model.scan_groups
            assert second > first + 2 * MotoCosts().update_item_ms  # after the first scan's lease and mark
        assert model.busy_workers == 0


def test_at_a_light_load_every_task_fires_once_at_the_call_s_time() -> None:
    """One a second for a minute: the claims are done within the lead, so each fire is the
    call's time late, and every task is staged and fired exactly once."""
    result = run_local(Workload(60, 60, 1), call=CALL)
    assert result.fired == 60
    assert result.p50_ms == result.max_ms == CALL.median_ms
    assert result.moto_load < 0.1
    model = LocalModel(LocalRuntime(), MotoCosts())
    for i in range(120):
        model.add(1_767_258_000_000 + i * 500, 1)
    model.run(1_767_258_000_000 - 5_000)
    assert sorted(due for due, _, _ in model.lateness) == [1_767_258_000_000 + i * 500 for i in range(120)]


def test_over_moto_s_capacity_the_lateness_grows_through_the_window() -> None:
    """100 a second with 10 ms claims asks moto for more than a second a second: the last due
    are later than the first; with 5 ms claims the same load is on time."""
    slow = run_local(RATES[2], MotoCosts(claim_ms=10.0))
    assert slow.fired == 6_000
    assert slow.moto_load > 1.0
    assert slow.moto_busy > 0.99
    assert slow.p99_ms > 5_000  # 9.5 s (the tick deals the shards furthest behind first; 10.2 s before)
    assert slow.max_ms > 2 * slow.p50_ms
    fast = run_local(RATES[2], MotoCosts(claim_ms=5.0), call=CALL)
    assert fast.moto_load < 0.8
    assert fast.max_ms == CALL.median_ms


def test_the_model_s_defaults_are_the_local_runtime_s() -> None:
    from local.runtime import Runtime
    from local.settings import DELAY_VISIBILITY_S, FUNCTIONS, LocalSettings
    from shared.settings.context import DeploymentSettings
    from shared.topology import EVENT_SOURCE_LONG_POLL_S, SCANNER_TIMEOUT_S, TRIGGER_BATCHING_WINDOW_S, consumers

    local = LocalRuntime()
    assert local.tick_period_s == LocalSettings().tick_period_s
    assert local.bucket_shards == FUNCTIONS.bucket_shards
    assert local.timing == FUNCTIONS.timing
    assert local.visibility_timeout_s == DELAY_VISIBILITY_S
    assert local.workers == next(f.default for f in dataclasses.fields(Runtime) if f.name == "workers")
    trigger = next(c for c in consumers(1) if c.function == "trigger")
    assert (local.batch_size, local.batching_window_s) == (trigger.batch_size, TRIGGER_BATCHING_WINDOW_S)
    assert local.long_poll_s == EVENT_SOURCE_LONG_POLL_S
    assert local.scanner_max_concurrency == DeploymentSettings.model_construct().scanner_max_concurrency
    assert local.scanner_timeout_s == SCANNER_TIMEOUT_S


def test_the_measured_figures_file_reads_and_unknown_fields_are_refused(tmp_path: Path) -> None:
    runs = read_measured(MEASURED)
    assert runs
    assert all(r.tasks > 0 for r in runs)
    assert all(r.window_s > 0 for r in runs)
    rates = [round(w.rate_per_s) for w, _ in checked_workloads(runs)]
    assert {10, 50, 100} <= set(rates)
    assert rates == sorted(rates)
    assert read_measured(tmp_path / "none.json") == []
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{**dataclasses.asdict(runs[0]), "p90_ms": 1.0}]))
    with pytest.raises(ValueError, match="unknown fields"):
        read_measured(bad)


def test_the_comparison_flags_gaps_beyond_twice() -> None:
    runs = read_measured(MEASURED)
    measured = dataclasses.replace(runs[0], p50_ms=1.0, p95_ms=None, p99_ms=2.0, max_ms=100.0, calibrates=False)
    result = run_local(measured.workload, call=CALL)
    text = comparison([(result, measured)], MotoCosts(), LocalRuntime())
    assert "**<0.01x**" not in text  # p50: 2 ms against 1 ms, at the limit
    assert "2.00x" in text
    assert "**0.02x**" in text  # max: 2 ms against 100 ms
    assert f"Gaps beyond 2x: {measured.rate_per_s:.4g}/s max." in text
    assert "Checked figures within 2x: 2 of 3." in text


def test_the_run_the_call_is_fitted_to_is_no_check_of_it() -> None:
    """The call's latency is a lognormal through one measured run's p50 and p99: that run's two
    cells say *fitted* and count neither way; its p95 and max, and every other run, are checks.
    The fitted run is the one whose figures the latency's source names."""
    runs = read_measured(MEASURED)
    [fitted] = [r for r in runs if r.calibrates]
    assert (fitted.p50_ms, fitted.p99_ms) == (LocalRuntime().call.median_ms, LocalRuntime().call.p99_ms)
    result = run_local(fitted.workload)
    assert result.p50_ms == pytest.approx(fitted.p50_ms, rel=0.1)
    assert result.p99_ms == pytest.approx(fitted.p99_ms, rel=0.2)
    text = comparison([(result, dataclasses.replace(fitted, p50_ms=100.0, p99_ms=500.0))], MotoCosts(), LocalRuntime())
    assert text.count("(*fitted*)") == 2
    assert "Checked figures within 2x: 2 of 2." in text  # p95 and max; the far-off p50 and p99 are not checks
