"""The modelled pipeline end to end (sim/pipeline.py) on cases small enough to check by hand: a
late tick shifts the scan's window, the tick invokes the scanner asynchronously once per group of
busy shards and a group's shards are scanned in turn, a thousand fires over a minute are on time,
a partition at its limit spreads claims over seconds and the excess is retried later, runs
repeat."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.domain.buckets import MINUTE_MS
from shared.domain.firing import Timing
from sim.aws import DynamoLimits, LambdaLimits, Tick
from sim.latency import Latency
from sim.metrics import percentile, summarize
from sim.pipeline import PEEK_MINUTES, SCAN_RESERVE_MS, Deployment, Model, Platform, groups, sqs_calls
from sim.scenarios import bench_check

pytestmark = pytest.mark.unit

T0 = 1_767_258_000_000  # 2026-01-01T09:00:00Z
CALL_MS_128 = 2.0 * 1769 / 128  # the call's CPU at 128 MB (1/14 of a vCPU)


def constant(tick: Tick | None = None) -> Platform:
    """Every latency a constant (its median), for cases computed by hand."""
    return Platform(
        tick=tick or Tick(phase_s=0.0, jitter_s=0.0),
        invoke=Latency.constant(20.0),
        claim_cpu=Latency.constant(7.0),
        call_cpu=Latency.constant(2.0),
        scan_query=Latency.constant(50.0),
        dynamo=DynamoLimits(write=Latency.constant(6.0)),
        lambdas=LambdaLimits(cold_start=Latency.constant(600.0)),
    )


def _model(deployment: Deployment | None = None, tick: Tick | None = None, weight: int = 1) -> Model:
    return Model(deployment or Deployment(bucket_shards=2), constant(tick), seed=11, weight=weight, warm_triggers=20)


def test_a_tick_late_in_its_minute_moves_the_scan_window_with_it() -> None:
    """A tick 40 s into its minute scans up to 40 s + look-ahead (120 s): a task due at 150 s
    is staged by it; a tick at second 0 stages only up to 120 s, so the next tick does."""
    due = T0 + 150_000
    late = _model(tick=Tick(phase_s=40.0, jitter_s=0.0))
    late.add(due, 1)
    late.run(T0)
    on_time = _model()
    on_time.add(due, 1)
    on_time.run(T0)
    for model in (late, on_time):
        assert model.counts.fired == 1
        [(_, lateness, _)] = model.lateness
        assert lateness == pytest.approx(CALL_MS_128)  # fired on time either way
    # The late tick's first scan of every shard covered [40 s - 120 s, 40 s + 120 s)...
    assert late.marks[0] is not None
    assert late.marks[0] >= T0 + 40_000 + 120_000
    # ...and the marks move a minute per tick after that, the tick's phase kept.
    assert (late.marks[0] - T0) % MINUTE_MS == pytest.approx(40_000, abs=1_000)
    assert on_time.marks[0] is not None
    assert (on_time.marks[0] - T0) % MINUTE_MS < 1_000


def _ticked_once(deployment: Deployment, items: dict[int, int], platform: Platform | None = None) -> Model:
    """One tick at T0 + 20 s (then none) on shards whose marks are at the tick, ``items[shard]``
    tasks due 30 s after it on each shard named (the others empty), the scans run to their end."""
    model = Model(deployment, platform or constant(Tick(phase_s=20.0, jitter_s=0.0)), seed=3, warm_triggers=20)
    tick = T0 + 20_000
    for shard in range(deployment.bucket_shards):
        model.marks[shard] = tick
    for shard, count in items.items():
        model.buckets[(T0, shard)] = [tick + 30_000] * count
        model.total += count
    model.loop.now = float(T0)
    model.stop_ms = tick  # no tick after this one
    model.loop.at(tick, model._tick, T0)
    model.loop.run(tick + 2 * MINUTE_MS)
    return model


@pytest.mark.parametrize(("busy", "most"), [((1, 3, 4, 6, 7, 9), 4), ((1, 3, 4, 6, 7, 9), 16), ((5,), 16), ((), 16)])
def test_a_tick_invokes_the_scanner_once_per_group_of_busy_shards_and_sends_no_sqs(
    busy: tuple[int, ...], most: int
) -> None:
    """N busy shards of 10: min(N, scanner_max_concurrency) asynchronous invocations (and the
    tick's own), every busy shard scanned once, the empty ones not at all; the only SQS calls
    are the staging sends (the scans are asked for without a queue)."""
    model = _ticked_once(Deployment(bucket_shards=10, scanner_max_concurrency=most), dict.fromkeys(busy, 25))
    c = model.counts
    assert c.scan_invocations == len(model.scan_events) == min(len(busy), most)
    assert c.lambda_requests == 1 + min(len(busy), most)
    assert sorted(s for e in model.scan_events for s in e.scanned) == list(busy)
    assert [e.shards for e in model.scan_events] == groups(list(busy), most)
    assert c.sqs_requests == c.sqs_sends == 3 * len(busy)  # 25 messages: three SendMessageBatch each
    assert model.scanners.peak <= min(len(busy), most)
    assert c.gb_seconds > 0 if busy else c.gb_seconds == 0


def test_the_shards_are_dealt_round_robin() -> None:
    assert groups([1, 3, 4, 6, 7, 9], 4) == [[1, 7], [3, 9], [4], [6]]
    assert groups([2, 5], 16) == [[2], [5]]
    assert groups([], 16) == []
    assert groups(list(range(64)), 16)[3] == [3, 19, 35, 51]


def test_a_group_s_shards_are_scanned_one_after_another() -> None:
    """Two groups of 6 busy shards dealt into 2: each invocation's second shard starts when its
    first one's scan ends (the 50 ms Query and 300 messages sent at 1,500 a second, 200 ms), its
    third when the second's ends; the invocation is billed for the whole group."""
    model = _ticked_once(Deployment(bucket_shards=6, scanner_max_concurrency=2), dict.fromkeys(range(6), 300))
    assert [e.scanned for e in model.scan_events] == [[0, 2, 4], [1, 3, 5]]
    for event in model.scan_events:
        first, second, third = event.scan_starts
        assert second == pytest.approx(first + 250.0)
        assert third == pytest.approx(second + 250.0)
    scanned_s = sum(3 * 0.25 + (e.scan_starts[0] - e.acquired_ms) / 1000 for e in model.scan_events)
    assert model.counts.gb_seconds == pytest.approx(scanned_s * 256 / 1024 + model.counts.trigger_gb_seconds)


def test_a_scanner_starts_no_shard_with_less_than_ten_seconds_of_its_timeout_left() -> None:
    """One group of three shards of 40,000 each (26.7 s of sends each): the third would start
    53 s in, past the 50 s it may start at, so it is left, its mark unmoved, for the next tick."""
    model = _ticked_once(Deployment(bucket_shards=3, scanner_max_concurrency=1), dict.fromkeys(range(3), 40_000))
    [event] = model.scan_events
    assert event.scanned == [0, 1]
    assert event.scan_starts[1] - event.started_ms <= 60_000 - SCAN_RESERVE_MS
    assert model.counts.scans_left == 1
    assert model.marks[2] == T0 + 20_000
    assert model._busy_shards(int(T0 + 80_000))[0] == [2]


def test_a_shard_left_behind_by_a_scanner_leads_a_group_at_the_next_tick() -> None:
    """Six shards of 40,000 in two groups ([0, 2, 4] and [1, 3, 5]): each scanner runs out of
    time for its third shard. At the next tick (a minute later) every shard is busy again (a
    task due 190 s in on each, past the first scans' windows), and the tick deals them furthest
    behind first, as Ticker.tick does: the two left behind (marks unmoved) lead the two groups
    instead of coming last again."""
    deployment = Deployment(bucket_shards=6, scanner_max_concurrency=2)
    model = Model(deployment, constant(Tick(phase_s=20.0, jitter_s=0.0)), seed=3, warm_triggers=20)
    tick = T0 + 20_000
    for shard in range(6):
        model.marks[shard] = tick
        model.buckets[(T0, shard)] = [tick + 30_000] * 40_000
        model.buckets[(T0 + 3 * MINUTE_MS, shard)] = [T0 + 190_000]
        model.total += 40_001
    model.loop.now = float(T0)
    model.stop_ms = tick + MINUTE_MS + 1  # this tick and the next
    model.loop.at(tick, model._tick, T0)
    model.loop.run(tick + MINUTE_MS)
    first, second, third, fourth = model.scan_events
    assert [first.shards, second.shards] == [[0, 2, 4], [1, 3, 5]]
    assert [first.scanned, second.scanned] == [[0, 2], [1, 3]]
    assert model.marks[4] == model.marks[5] == tick
    assert third.tick_ms == fourth.tick_ms == tick + MINUTE_MS
    assert [third.shards[0], fourth.shards[0]] == [4, 5]
    assert sorted(third.shards + fourth.shards) == list(range(6))


def test_the_tick_orders_the_busy_shards_never_scanned_first_then_oldest_window_first() -> None:
    """Shard 4's window is past now + look-ahead (not busy); the rest are dealt never scanned
    first, then by window start (``max(mark, clean)``), oldest first."""
    model = _model(Deployment(bucket_shards=5))
    now = T0 + 20_000
    model.marks.update({0: now - 30_000, 1: None, 2: now - 90_000, 3: now - 60_000, 4: now + 500_000})
    model.clean[3] = now - 10_000  # found clean later than its mark: its window starts there
    for shard in range(5):
        model.buckets[(T0 + 2 * MINUTE_MS, shard)] = [T0 + 130_000]  # due in every window
    assert model._busy_shards(now)[0] == [1, 2, 0, 3]


def test_a_throttled_scanner_event_is_tried_again_until_its_maximum_age() -> None:
    """No concurrency to be had: the event goes back on Lambda's queue and is tried again 1, 2,
    4, ... s later; once the account has room it runs. Never any room: dropped at 300 s."""
    deployment = Deployment(bucket_shards=1, account_concurrency=1)
    held = _throttled(deployment, free_after_ms=5_000)
    assert held.counts.scan_throttles == 3  # at 0, 1 and 3 s; at 7 s it runs
    assert held.scan_events[0].scanned == [0]
    assert held.counts.scan_events_dropped == 0
    never = _throttled(deployment, free_after_ms=None)
    assert never.scan_events[0].scanned == []
    assert never.counts.scan_events_dropped == 1
    assert never.counts.scan_throttles == 9  # 0, 1, 3, 7, 15, 31, 63, 127, 255 s; the next, 511 s, is too old


def _throttled(deployment: Deployment, free_after_ms: float | None) -> Model:
    platform = constant(Tick(phase_s=20.0, jitter_s=0.0))
    model = Model(deployment, replace(platform, invoke_call=Latency.constant(0.0), async_queue=Latency.constant(0.0)))
    tick = T0 + 20_000
    model.buckets[(T0, 0)] = [tick + 30_000]
    model.total = 1
    model.account.in_use = 1  # another function holds the account's one execution
    if free_after_ms is not None:
        model.loop.at(tick + free_after_ms, lambda: setattr(model.account, "in_use", 0))
    model.loop.now = float(T0)
    model.stop_ms = tick
    model.loop.at(tick, model._tick, T0)
    model.loop.run(tick + 10 * MINUTE_MS)
    return model


def test_the_model_s_scan_rules_are_the_scanner_s() -> None:
    from shared.services.firing import scan
    from shared.topology import SCANNER_TIMEOUT_S

    assert PEEK_MINUTES == scan.PEEK_MINUTES
    assert 0 < SCAN_RESERVE_MS < SCANNER_TIMEOUT_S * 1000


def test_a_thousand_fires_over_a_minute_fire_on_time() -> None:
    """1,000 tasks, one every 60 ms, 2 shards: every message is receivable 2-3 s before its due
    time, its batch's claims (97 ms each at 128 MB) finish before it, and it fires at its due
    time plus the call's CPU: 2 ms at a full vCPU, 27.6 ms at 128 MB. One run log per batch."""
    model = _model()
    for i in range(1_000):
        model.add(T0 + 3 * MINUTE_MS + i * 60, 1)
    model.run(T0)
    summary = summarize(model)
    assert summary.fired == summary.tasks == 1_000
    assert summary.max_ms == pytest.approx(CALL_MS_128)
    assert summary.throttled_wcu == 0
    assert model.counts.claim_wru == 1_000
    assert 1_000 / 10 <= model.counts.log_wru < 1_000 / 4  # batches of 4-10 (16 a second, 1 s window)
    assert 1.0 < summary.cost_per_million < 2.0  # design.md section 4 measures $1.36-1.48


def test_a_hot_partition_throttles_and_its_claims_are_retried_later() -> None:
    """1,500 tasks due in the same second on one shard: one partition, 1,000 WCU a second. The
    claims that find the second's budget spent are retried after the SDK's backoff; none is
    lost, no second writes more than 1,000, and the excess fires late."""
    deployment = Deployment(bucket_shards=1, trigger_memory_mb=1769, account_concurrency=2_000)
    model = Model(deployment, constant(), seed=5, warm_triggers=2_000)
    model.add(T0 + 3 * MINUTE_MS, 1_500)
    model.run(T0)
    summary = summarize(model)
    assert summary.fired == 1_500
    assert model.table.throttled > 0
    assert max(model.table.hottest().values()) == 1_000
    late = sorted(lateness for _, lateness, _ in model.lateness)
    assert late[999] < 1_000  # the first thousand claims fit their second
    assert late[-1] > 0  # the rest waited for a retry
    assert percentile([(x, 1) for x in late], 0.5) < 1_000


def test_messages_of_ten_stand_for_ten_messages() -> None:
    """The aggregated model (docs/scale.md): the same workload as messages of 10 fires the same
    tasks with the same lateness when nothing is saturated."""
    single, grouped = _model(weight=1), _model(weight=10)
    for model in (single, grouped):
        for second in range(60):
            model.add(T0 + 3 * MINUTE_MS + second * 1000 + 500, 20)
        model.run(T0)
    a, b = summarize(single), summarize(grouped)
    assert a.fired == b.fired == 1_200
    assert a.p99_ms == pytest.approx(b.p99_ms)


def test_latencies_are_drawn_so_the_p99_is_no_floor() -> None:
    """With the default platform every fire's call is drawn (at 128 MB, 13.8 times the measured
    2.0 ms median and 5.2 ms p99 at a full core): the lateness spreads, its median and p99 near the
    distribution's, where constants gave every fire the same 27.6 ms."""
    model = Model(Deployment(bucket_shards=2), Platform(tick=Tick(0.0, 0.0)), seed=11, warm_triggers=20)
    for i in range(2_000):
        model.add(T0 + 3 * MINUTE_MS + i * 30, 1)
    model.run(T0)
    s = summarize(model)
    assert s.fired == 2_000
    assert s.p50_ms == pytest.approx(CALL_MS_128, rel=0.1)
    assert s.p99_ms == pytest.approx(5.2 * 1769 / 128, rel=0.25)
    assert s.p99_ms > 2 * s.p50_ms
    assert s.max_ms > s.p99_ms


def test_a_run_repeats_with_its_seed() -> None:
    def run() -> tuple[float, int, int]:
        model = Model(
            replace(Deployment(bucket_shards=4), timing=Timing(lead_ms=3_000)),
            Platform(tick=Tick(0.0, 0.0)),
            seed=11,
            warm_triggers=20,
        )
        for i in range(300):
            model.add(T0 + 2 * MINUTE_MS + i * 137, 1)
        model.run(T0)
        s = summarize(model)
        return s.p99_ms, s.hottest_partition_wcu, model.counts.log_wru

    assert run() == run()


def test_the_model_on_make_benchs_workload_is_near_what_make_bench_measured() -> None:
    """docs/design.md 4.1 measured 1.00 claim WRU, 0.12 run-log WRU and 0.033 trigger GB-s per
    fired task (batches of 8.4, 2.2 s each) locally; the model, with AWS's one scan a minute,
    must land near it."""
    check = bench_check(7)
    assert check.fired == 1_000
    assert check.claim_wru == 1.0
    assert check.log_wru == pytest.approx(1 / check.batch)
    assert 8 <= check.batch <= 10
    assert 2.0 <= check.invocation_s <= 3.0  # the lead (2 s) plus under a second of rounding
    assert check.trigger_gb_s == pytest.approx(0.033, rel=0.2)
    assert 1.0 < check.cost_per_million < 1.6  # measured: $1.48 (with empty receives), $1.36 at 15/s


def test_an_sqs_call_moves_at_most_ten_messages() -> None:
    """ReceiveMessage returns at most 10 messages and DeleteMessageBatch takes at most 10, so a
    trigger batch of 100 costs 10 receives and 10 deletes: with the staging sends, 0.3 SQS calls
    a fire (counting one receive and one delete per invocation gave 0.12)."""
    assert [sqs_calls(n) for n in (0, 1, 10, 11, 100, 101)] == [0, 1, 1, 2, 10, 11]
    deployment = Deployment(bucket_shards=1, batch_size=100, trigger_memory_mb=1_769)
    model = Model(deployment, constant(), seed=3, warm_triggers=20)
    model.add(T0 + 3 * MINUTE_MS, 1_000)
    model.run(T0)
    c = model.counts
    assert c.fired == 1_000
    assert c.trigger_invocations == 10
    assert (c.sqs_sends, c.sqs_receives, c.sqs_deletes) == (100, 100, 100)
    assert (c.sqs_sends + c.sqs_receives + c.sqs_deletes) / c.fired == pytest.approx(0.3)
