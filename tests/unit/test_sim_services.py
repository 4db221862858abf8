"""The model's AWS pieces against hand-computed cases (sim/aws.py, docs/scale.md): a partition at
its limit throttles, the SQS event source's scaling curve, SQS delays are whole seconds, the
in-flight cap, Lambda's account limit and scaling rate."""

from __future__ import annotations

import random

import pytest

from shared.domain.firing import delay_seconds
from sim.aws import (
    MAXIMUM_CONCURRENCY_RANGE,
    MAXIMUM_POLLERS_RANGE,
    MINIMUM_POLLERS_RANGE,
    STANDARD_MAXIMUM,
    Account,
    DelayQueue,
    DynamoLimits,
    EventSource,
    EventSourceScaling,
    FunctionPool,
    LambdaLimits,
    Message,
    SdkRetries,
    SqsLimits,
    Table,
)
from sim.pipeline import Deployment

pytestmark = pytest.mark.unit


# --- DynamoDB --------------------------------------------------------------------------------


def _keys_on(table: Table, count: int, *, same: bool) -> list[str]:
    """``count`` bucket keys on one partition of ``table`` (``same``) or on different ones."""
    by_partition: dict[int, list[str]] = {}
    for shard in range(1_024):
        key = f"B#202601010900#{shard:04d}"
        by_partition.setdefault(table.partition_of(key), []).append(key)
    if same:
        return next(keys for keys in by_partition.values() if len(keys) >= count)[:count]
    return [keys[0] for keys in by_partition.values()][:count]


def test_a_partition_at_its_limit_throttles_and_the_next_second_serves_it() -> None:
    table = Table(DynamoLimits())
    hot, other = _keys_on(table, 2, same=False)
    assert all(table.write(10_000 + i, hot, 100) for i in range(10))  # 1,000 WCU in second 10
    assert not table.write(10_999, hot, 1)  # the 1,001st unit of that second
    assert table.throttled == 1
    assert table.write(10_500, other, 100)  # another partition has its own budget
    assert table.write(11_000, hot, 1000)  # a new second, a new budget
    assert table.hottest() == {10: 1000, 11: 1000}


def test_key_values_on_one_partition_share_its_thousand_units() -> None:
    """A new table has 4 partitions: 16 shards' keys of a minute land 4 a partition on average,
    and two keys on one partition have 1,000 WCU a second between them, not 1,000 each."""
    table = Table(DynamoLimits())
    assert table.partitions == 4
    first, second = _keys_on(table, 2, same=True)
    assert table.write(0, first, 600)
    assert not table.write(100, second, 600)  # 1,200 on one partition
    assert table.write(200, second, 400)
    counts = [0] * 4
    for shard in range(16):
        counts[table.partition_of(f"B#202601010900#{shard:04d}")] += 1
    assert sum(counts) == 16
    assert max(counts) > 4  # the hash is uneven: some partition holds more than its share


def test_the_table_takes_what_on_demand_gives_it() -> None:
    """Its capacity and its partitions: the initial 4,000 WCU (4 partitions), twice a previous
    peak, warm throughput; the table quota caps the capacity, not the partitions."""
    assert (Table(DynamoLimits()).capacity, Table(DynamoLimits()).partitions) == (4_000, 4)
    peak = Table(DynamoLimits(), previous_peak_wcu=10_000)
    assert (peak.capacity, peak.partitions) == (20_000, 20)
    warm = Table(DynamoLimits(), warm_wcu=30_000)
    assert (warm.capacity, warm.partitions) == (30_000, 30)
    quota = Table(DynamoLimits(), previous_peak_wcu=50_000)
    assert (quota.capacity, quota.partitions) == (40_000, 100)
    table = Table(DynamoLimits())
    keys = [f"RL#{i}" for i in range(64)]
    spread = list({table.partition_of(k): k for k in keys}.values())
    assert len(spread) == 4
    assert all(table.write(0, key, 1000) for key in spread)
    assert not table.write(500, 0.99, 1)  # 4,001st unit in the second: the table, not the partition


def test_a_partition_that_stays_hot_splits_at_the_median_of_its_writes() -> None:
    """The allowance for adaptive capacity: one hot key at 900 WCU a second, written evenly over
    its sort keys, splits its partition once it has been hot ``split_after_s``; the key's items
    are then on two partitions, 2,000 WCU a second between them."""
    table = Table(DynamoLimits(split_after_s=5.0))
    [key] = _keys_on(table, 1, same=False)
    home = table.partition_of(key)
    for second in range(7):
        for i in range(9):
            assert table.write(second * 1000 + i, key, 100, item=(i + 0.5) / 9)
    assert table.splits == [(5, home)]  # hot from second 0: 5 s later
    assert table.partitions == 5
    low, high = table.partition_of(key, 0.1), table.partition_of(key, 0.9)
    assert low != high
    assert table.write(10_000, key, 1000, item=0.1)
    assert table.write(10_000, key, 1000, item=0.9)
    never = Table(DynamoLimits(split_after_s=0.0))
    for second in range(20):
        never.write(second * 1000, key, 1000, item=0.5)
    assert never.splits == []


def test_a_throttled_write_waits_as_the_sdk_waits() -> None:
    retries = SdkRetries()
    rng = random.Random(3)
    pauses = [[retries.pause_ms(attempt, rng) for _ in range(2000)] for attempt in (1, 2, 3)]
    for attempt, drawn in enumerate(pauses, start=1):
        ceiling = 1000 * 2 ** (attempt - 1)  # rand(0, 1) * min(1 s * 2^i, 20 s)
        assert min(drawn) >= 0
        assert max(drawn) <= ceiling
        assert sum(drawn) / len(drawn) == pytest.approx(ceiling / 2, rel=0.1)
    assert retries.pause_ms(9, random.Random(0)) <= 20_000


# --- Lambda's SQS event source ---------------------------------------------------------------


def test_the_event_source_starts_at_five_and_adds_three_hundred_a_minute_up_to_1250() -> None:
    """Standard mode: 5, then 300 more a minute, up to 1,250 concurrent invokes with no
    MaximumConcurrency (it was 1,000), or the MaximumConcurrency set (2 to 1,000)."""
    scaling = EventSourceScaling.standard()
    assert [scaling.concurrency(m) for m in (0, 1, 2, 3, 4, 5, 10)] == [5, 305, 605, 905, 1205, 1250, 1250]
    assert scaling.concurrency(0.5) == 155
    assert EventSourceScaling.standard(50).concurrency(3) == 50  # MaximumConcurrency
    assert EventSourceScaling.standard(1_000).concurrency(10) == 1_000
    for refused in (1, 1_001, 1_250):
        with pytest.raises(ValueError, match="MaximumConcurrency"):
            EventSourceScaling.standard(refused)


def test_provisioned_mode_adds_a_thousand_a_minute_and_takes_up_to_10000_pollers() -> None:
    """Provisioned mode: MinimumPollers x 10 at once, 1,000 more a minute (it was 900), up to
    MaximumPollers x 10; MaximumPollers accepts 2 to 10,000 for SQS (it was 2,000)."""
    provisioned = EventSourceScaling.provisioned(20, 100)
    assert [provisioned.concurrency(m) for m in (0, 0.5, 1)] == [200, 700, 1000]
    assert EventSourceScaling.provisioned(200, 10_000).concurrency(100) == 100_000
    with pytest.raises(ValueError, match="MaximumPollers"):
        EventSourceScaling.provisioned(2, 10_001)
    with pytest.raises(ValueError, match="MinimumPollers"):
        EventSourceScaling.provisioned(201, 1_000)


def test_the_limits_are_the_ones_botocore_s_lambda_model_accepts() -> None:
    import botocore.session

    model = botocore.session.get_session().get_service_model("lambda")
    pollers = model.shape_for("ProvisionedPollerConfig").members
    assert pollers["MaximumPollers"].metadata["max"] >= MAXIMUM_POLLERS_RANGE[1]
    assert pollers["MinimumPollers"].metadata["max"] == MINIMUM_POLLERS_RANGE[1]
    concurrency = model.shape_for("ScalingConfig").members["MaximumConcurrency"].metadata
    assert (concurrency["min"], concurrency["max"]) == MAXIMUM_CONCURRENCY_RANGE


def test_the_default_stack_caps_its_trigger_lane_as_the_stack_does() -> None:
    """The stack sets each delay queue's MaximumConcurrency in standard mode: 873 at the defaults
    (1,000 less 100 for the other functions, 16 scanners, 10 for the high lane, 1 recovering drain)."""
    assert Deployment().scaling().maximum == 873
    assert Deployment(account_concurrency=5_000, delay_queues=4).scaling().maximum == 1_000
    assert Deployment(mapping_max_concurrency=0).scaling().maximum == STANDARD_MAXIMUM == 1_250


def test_the_event_source_grows_only_while_messages_wait_and_falls_back_when_idle() -> None:
    source = EventSource(EventSourceScaling.standard(1_000))
    source.observe(0, has_messages=False)
    source.observe(60_000, has_messages=False)
    assert source.limit() == 5  # nothing waited: nothing to scale for
    source.observe(60_000, has_messages=True)
    source.observe(180_000, has_messages=True)  # two minutes with a backlog
    assert source.limit() == 605
    source.observe(200_000, has_messages=False)
    source.observe(230_000, has_messages=False)
    assert source.limit() == 705  # the 20 s up to 200,000 had messages; idle 30 s keeps the scale
    source.observe(261_000, has_messages=False)
    assert source.limit() == 5  # idle a minute: back to the start


# --- SQS -------------------------------------------------------------------------------------


def test_a_delay_of_1_4_seconds_is_sent_as_1_whole_second() -> None:
    """DelaySeconds is an integer: SQS refuses 1.4, so Sundial rounds down (a message may be
    early by under a second, and the trigger waits that out; it is never late)."""
    queue = DelayQueue(SqsLimits())
    now, lead = 100_000, 2_000
    due = now + lead + 1_400  # 1.4 s of delay wanted beyond the lead
    delay = delay_seconds(due, now, lead)
    assert delay == 1
    queue.send(now, Message(due, 0, 1), delay)
    assert queue.receive(now + 999, 10) == []
    [message] = queue.receive(now + 1_000, 10)
    assert due - message.visible_ms == lead + 400  # receivable the lead plus the rounding early
    for refused in (1.4, -1, 901):
        with pytest.raises(ValueError, match="DelaySeconds"):
            queue.send(now, Message(due, 0, 1), refused)  # type: ignore[arg-type]
    assert delay_seconds(now + 10_000_000, now, lead) == 900  # never more than SQS takes


def test_the_in_flight_cap_holds_messages_back_until_deletes() -> None:
    queue = DelayQueue(SqsLimits(in_flight_per_queue=25))
    for due in (1, 2, 3):
        queue.send(0, Message(due, 0, weight=10), 0)
    first = queue.receive(0, 10)
    assert [m.due_ms for m in first] == [1, 2]  # a third would make 30 in flight
    assert queue.receive(0, 10) == []
    queue.delete(first[:1])
    assert [m.due_ms for m in queue.receive(0, 10)] == [3]


def test_a_message_handed_back_returns_after_its_visibility_timeout() -> None:
    queue = DelayQueue(SqsLimits())
    queue.send(0, Message(5_000, 0, 1), 0)
    [message] = queue.receive(100, 10)
    queue.back(100, message, 180)
    assert queue.in_flight == 0
    assert queue.receive(180_099, 10) == []
    assert queue.receive(180_100, 10) == [message]
    assert message.receives == 2


# --- Lambda ----------------------------------------------------------------------------------


def test_the_account_limit_and_the_scaling_rate_refuse_new_environments() -> None:
    account = Account(LambdaLimits(account_concurrency=1_500))
    pool = FunctionPool(account, warm=100)
    assert pool.acquire(0, 100) is False  # warm: no cold start
    assert pool.acquire(0, 1_001) is None  # more than 1,000 new environments in 10 s
    assert pool.acquire(0, 1_000) is True  # cold starts, within the rate
    assert pool.acquire(1_000, 200) is None  # 100 tokens back after 1 s
    assert pool.acquire(2_000, 200) is True  # 200 after 2 s
    assert pool.acquire(60_000, 201) is None  # 1,300 running: the account's 1,500 refuses
    pool.release(300)
    assert pool.idle == 300
    assert pool.acquire(60_000, 300) is False  # the released ones are warm
    assert pool.cold_starts == 1_200
    assert account.peak == 1_300
