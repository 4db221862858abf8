"""The whole bill's arithmetic (bench/bill.py), against figures worked out by hand from AWS's
published prices and rules."""

from __future__ import annotations

import pytest

from bench import bill, prices

pytestmark = pytest.mark.unit

EMPTY_SCAN = bill.Counted(wru=2.0, rru=0.5, sqs=2.0, invocations=1.0, seconds=0.02, memory_gb=0.25)
TICK = bill.Counted(wru=0.0, rru=0.0, sqs=1.0, invocations=1.0, seconds=0.01, memory_gb=0.25)


def template(*resources: tuple[str, dict]) -> dict:
    return {"Resources": {f"R{i}": {"Type": kind, "Properties": props} for i, (kind, props) in enumerate(resources)}}


def line(section: bill.Section, item: str) -> bill.Line:
    (found,) = [candidate for candidate in section.lines if candidate.item == item]
    return found


def test_a_month_of_a_rule_every_minute_is_43800_ticks_and_every_five_minutes_a_fifth():
    every_minute = template(("AWS::Events::Rule", {"ScheduleExpression": "rate(1 minute)"}))
    every_five = template(("AWS::Events::Rule", {"ScheduleExpression": "rate(5 minutes)"}))
    assert bill._scheduled_per_month(every_minute["Resources"]) == 730 * 60
    assert bill._scheduled_per_month(every_five["Resources"]) == 730 * 12


def test_x_ray_records_every_invocation_up_to_one_a_second_and_five_percent_beyond():
    month_s = 730 * 3600
    assert bill._traces(43_800, 1) == pytest.approx(43_800)  # one a minute: each is the second's first
    ten_a_second = 10 * month_s
    assert bill._traces(ten_a_second, 1) == pytest.approx((1 + 0.05 * 9) * month_s)


def test_the_idle_bill_prices_what_the_template_declares_and_what_an_empty_scan_costs():
    stack = template(
        ("AWS::Events::Rule", {"ScheduleExpression": "rate(1 minute)"}),
        ("AWS::CloudWatch::Alarm", {}),
        ("AWS::CloudWatch::Alarm", {}),
        ("AWS::CloudWatch::Dashboard", {}),
        ("AWS::KMS::Key", {}),
        ("AWS::SecretsManager::Secret", {}),
        ("AWS::Lambda::EventSourceMapping", {}),
        ("AWS::Lambda::Function", {"Description": "Sundial tick: fans out", "TracingConfig": {"Mode": "Active"}}),
        ("AWS::Lambda::Function", {"Description": "Sundial scanner: stages", "TracingConfig": {"Mode": "PassThrough"}}),
    )
    month = bill.idle(stack, bill.IdleCounted(tick=TICK, scan=EMPTY_SCAN, metrics=1), shards=16)
    ticks, scans = 43_800, 43_800 * 16
    assert line(month, "CloudWatch alarms").cost() == pytest.approx(0.20)
    assert line(month, "CloudWatch dashboards").cost() == pytest.approx(3.00)
    assert line(month, "KMS keys").cost() == pytest.approx(1.00)
    assert line(month, "Secrets Manager").cost() == pytest.approx(0.40)
    assert line(month, "CloudWatch metrics").cost() == pytest.approx(0.30)
    # 2 WRU a scan on demand at $0.625 a million
    assert line(month, "DynamoDB writes").cost() == pytest.approx(scans * 2 * 0.625e-6)
    assert line(month, "SQS (tick and scans)").amount == ticks + scans * 2
    assert line(month, "SQS (idle pollers)").amount == 15 * 43_800
    # only the tick is on active tracing; a passthrough scanner records nothing unasked
    assert line(month, "X-Ray traces").amount == pytest.approx(ticks)
    assert line(month, "Lambda requests").amount == ticks + scans


def test_a_stack_with_nothing_standing_and_no_tick_costs_only_its_idle_pollers():
    quiet = template(("AWS::Lambda::EventSourceMapping", {}))
    month = bill.idle(quiet, bill.IdleCounted(tick=TICK, scan=EMPTY_SCAN), shards=16)
    assert month.total() == pytest.approx(15 * 43_800 * prices.SQS_PER_MILLION / 1e6)


def test_keeping_a_run_prices_its_bytes_and_each_items_overhead_for_the_retention():
    kept = bill.keeping(kept_bytes=900, items=2, retention_days=30)
    # (900 + 2 x 100) bytes x a million tasks = 1.1 GB for a month at $0.25
    assert kept.total() * 1e6 == pytest.approx(1.1 * 0.25)
    assert bill.keeping(900, 2, 60).total() == pytest.approx(2 * kept.total())


def test_provisioned_capacity_prices_only_dynamodb_lower():
    one = bill.registration(
        bill.Counted(wru=2, rru=0, sqs=0, invocations=1, seconds=0.01, memory_gb=0.25, api_requests=1), "one"
    )
    assert line(one, "DynamoDB writes").cost(provisioned=True) < line(one, "DynamoDB writes").cost()
    assert line(one, "API Gateway (REST)").cost(provisioned=True) == line(one, "API Gateway (REST)").cost() == 3.5e-6


def test_the_ticks_reads_and_time_grow_with_the_shards_it_looks_at_and_its_write_does_not():
    tick = bill.Counted(wru=1.0, rru=2.0, sqs=0.0, invocations=1.0, seconds=0.04, memory_gb=0.25)
    idle_scan = bill.Counted(wru=0.0, rru=0.0, sqs=0.0, invocations=0.0, seconds=0.0, memory_gb=0.25)
    stack = template(("AWS::Events::Rule", {"ScheduleExpression": "rate(1 minute)"}))
    counted_on_two = bill.IdleCounted(tick=tick, scan=idle_scan, shards=2)
    month = bill.idle(stack, counted_on_two, shards=16)
    assert line(month, "DynamoDB reads").amount == pytest.approx(43_800 * 2.0 * 8)
    assert line(month, "DynamoDB writes").amount == pytest.approx(43_800 * 1.0)
    assert line(month, "Lambda time").amount == pytest.approx(43_800 * 0.04 * 0.25 * 8)


def test_the_status_index_costs_a_failing_task_two_writes_and_its_entry_s_storage() -> None:
    """docs/status-index.md, section 4: a task that fails has its entry written and later deleted
    (keys only: a write unit each) and stored meanwhile; a task that never fails costs nothing."""
    from bench import bill

    entry = bill.status_entry_bytes(4)
    # pk B#<minute>#<shard> and sk <task id> as the table keys them, spk S#<tenant>#task#failed#<k>, ssk <ms>#<id>
    assert 100 < entry < 200
    every = bill.status_index(entry, 30, share=1.0)
    writes, storage = every.lines
    assert writes.amount == 2
    assert storage.amount == (entry + 100) / 1e9
    assert bill.status_index(entry, 30, share=0.0).total() == 0
