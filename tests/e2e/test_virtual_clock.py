"""``make run`` on the virtual clock (the runtime's ``clock`` setting "virtual", local/advance.py): thirteen months
advanced in a few dozen seconds of wall time, through the real pipeline (tick, scanners, delay
queues, trigger, retries) and a real HTTP receiver. Every task fires exactly at the times
``POST /v1/schedules:preview`` gives for it (an independent reading of the same rules: the
preview computes them without firing anything), a failed attempt's retry comes its backoff later
across the DST changes, and every callback's signature verifies with Standard Webhooks' own
verifier. A runtime of its own: its clock is not the suite's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import boto3
import pytest
from standardwebhooks.webhooks import Webhook

from local.settings import LocalSettings
from tests.support.access_keys import issued_access_key
from tests.support.receiver import running_receiver
from tests.support.runtime import ADMIN_KEY, Client, running_runtime

pytestmark = pytest.mark.e2e

MONTHS = 13
ADVANCE_TIMEOUT_S = 180  # a stall detector: the runtime gives up a step whose work neither ends nor sleeps in 120 s
RETRY_S = 900
SCHEDULES: dict[str, dict[str, Any]] = {
    # 09:00 Shanghai on the first of each month
    "monthly": {"cron": "0 0 9 1 * *", "timezone": "Asia/Shanghai"},
    # every 5th working day at 09:00 Shanghai, China's holidays and moved working weekends counted
    "workdays": {
        "repeat": {"level": "workday", "interval": 5, "calendar": "CN", "time": "09:00", "timezone": "Asia/Shanghai"}
    },
    # Sundays 01:50 New York: the first attempt fails, the retry 15 min later lands past 02:00, the
    # hour that does not exist on the spring DST Sunday and comes twice on the autumn one
    "dst": {"cron": "0 50 1 * * 0", "timezone": "America/New_York"},
}


@pytest.fixture(scope="module")
def virtual() -> Iterator[Client]:
    with running_runtime(env={LocalSettings.setting_name("clock"): "virtual"}) as client:
        yield client


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def preview(
    client: Client, auth: dict[str, str], schedule: dict[str, Any], after: datetime, until: datetime
) -> list[str]:
    """The schedule's times in ``[after, until]``, as the preview gives them (100 a page)."""
    times: list[str] = []
    while True:
        body = {"schedule": schedule, "count": 100, "after": iso(after)}
        status, page = client.call("POST", "/v1/schedules:preview", body, auth)
        assert status == 200, page
        found = [t for t in page["times"] if at(t) <= until]
        times += found
        if len(found) < 100:
            return times
        after = at(found[-1]) + timedelta(milliseconds=1)


def test_fired_counts_the_occurrences_called_during_the_advance_once_each_whatever_their_retries(
    virtual: Client,
) -> None:
    """First in the module: no other test's tasks fire in its advance. One advance: A fails twice and
    succeeds on its third attempt, and its success starts a chained child's run; B fails both its
    attempts and is dead-lettered. Six calls, three occurrences: ``fired`` is 3."""
    status, clock = virtual.call("GET", "/v1/test/clock")
    assert status == 200, clock
    start = at(clock["now"])
    retry = {"backoff": "fixed", "interval_seconds": 30}
    with running_receiver() as receiver:
        urls = {
            "a": receiver.script("/a", 500, 500, 200),
            "b": receiver.script("/b", 500, 500),
            "child": receiver.url + "/child",
        }
        far = {"cron": "0 0 0 1 1 *"}  # New Year's Day: the child fires only as a chained run here
        status, child = virtual.call("POST", "/v1/tasks", {"schedule": far, "target": {"http": {"url": urls["child"]}}})
        assert status == 201, child
        specs = {
            "a": {"after_seconds": 60, "retry": {**retry, "max_attempts": 3}, "on_success": [child["id"]]},
            "b": {"after_seconds": 90, "retry": {**retry, "max_attempts": 2}},
        }
        for name, fields in specs.items():
            after = fields.pop("after_seconds")
            task = {"schedule": {"after_seconds": after}, "target": {"http": {"url": urls[name]}}, **fields}
            status, created = virtual.call("POST", "/v1/tasks", task)
            assert status == 201, created
        try:
            body = {"to": iso(start + timedelta(hours=1))}
            status, moved = virtual.call("POST", "/v1/test/clock:advance", body, timeout=ADVANCE_TIMEOUT_S)
            assert status == 200, moved
            calls = {name: len(receiver.calls_to(f"/{name}")) for name in urls}
            assert calls == {"a": 3, "b": 2, "child": 1}
            assert moved["fired"] == 3  # A, B and the child's run: not their six calls
            # an advance in which nothing is due fires nothing
            body = {"to": iso(start + timedelta(hours=2))}
            status, moved = virtual.call("POST", "/v1/test/clock:advance", body, timeout=ADVANCE_TIMEOUT_S)
            assert status == 200, moved
            assert moved["fired"] == 0
        finally:
            virtual.call("DELETE", f"/v1/tasks/{child['id']}")  # its New Year's Day stays out of the other tests


def test_thirteen_months_fire_at_the_previews_times_with_retries_across_dst_and_signatures_that_verify(
    virtual: Client,
) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    status, tenant = virtual.call("POST", "/v1/tenants", {"id": "clockwork"}, admin)
    assert status == 201, tenant
    auth, secret = {"Authorization": f"Bearer {tenant['key']['secret']}"}, tenant["signing_secret"]["secret"]
    status, clock = virtual.call("GET", "/v1/test/clock")
    assert status == 200, clock
    start = at(clock["now"])
    until = start + timedelta(days=MONTHS * 31)

    with running_receiver() as receiver:
        expected = {name: preview(virtual, auth, schedule, start, until) for name, schedule in SCHEDULES.items()}
        urls = {
            "monthly": receiver.url + "/monthly",
            "workdays": receiver.url + "/workdays",
            "dst": receiver.script("/dst", *([500, 200] * len(expected["dst"]))),
        }
        for name, schedule in SCHEDULES.items():
            task = {"name": name, "schedule": schedule, "target": {"http": {"url": urls[name]}}}
            if name == "dst":
                task["retry"] = {"max_attempts": 2, "backoff": "fixed", "interval_seconds": RETRY_S}
            status, created = virtual.call("POST", "/v1/tasks", task, auth)
            assert status == 201, created
            assert created["next_fire_at"] == expected[name][0]

        fired = 0
        now = start
        while now < until:  # a month an advance: about 1.5 s on an idle machine, many times that beside the suites
            step = min(until, now + timedelta(days=31))
            status, moved = virtual.call("POST", "/v1/test/clock:advance", {"to": iso(step)}, timeout=ADVANCE_TIMEOUT_S)
            assert status == 200, moved
            assert at(moved["now"]) == step
            fired += moved["fired"]
            now = step

        calls = {name: receiver.calls_to(f"/{name}") for name in SCHEDULES}
        first = {
            name: [c.body["scheduled_for"] for c in found if c.body["attempt"] == 1] for name, found in calls.items()
        }
        assert first == expected
        assert all(
            c.body["fired_at"] == c.body["scheduled_for"]
            for found in calls.values()
            for c in found
            if c.body["attempt"] == 1
        )
        retries = [c for c in calls["dst"] if c.body["attempt"] == 2]
        assert [c.body["scheduled_for"] for c in retries] == expected["dst"]
        assert [at(c.body["fired_at"]) - at(c.body["scheduled_for"]) for c in retries] == [
            timedelta(seconds=RETRY_S)
        ] * len(retries)
        assert fired == sum(len(found) for found in first.values())  # occurrences: a retry is not counted again
        assert len(expected["monthly"]) >= MONTHS
        assert {t[11:16] for t in expected["dst"]} == {"05:50", "06:50"}  # New York's summer and winter time
        for found in calls.values():
            for call in found:
                Webhook(secret).verify(call.raw, call.headers)  # raises when one does not verify


def _spring_forward(after: datetime, zone: ZoneInfo) -> datetime:
    """The first day after ``after`` on which ``zone``'s clocks go forward (its midnight, UTC)."""
    day = after.astimezone(zone).date()
    while True:
        day += timedelta(days=1)
        before = datetime.combine(day - timedelta(days=1), time(12), zone).utcoffset()
        if (datetime.combine(day, time(12), zone).utcoffset() or timedelta()) > (before or timedelta()):
            return datetime.combine(day, time(0), zone).astimezone(UTC)


def test_eventbridge_schedules_fire_into_sqs_by_the_service_s_rules_across_a_dst_change(virtual: Client) -> None:
    """Through boto3's ``scheduler`` client: a weekly cron in New York whose 02:30 does not exist on
    the spring-forward Sunday (the service's rule: that one does not fire), and a two-day rate, each
    sending its ``Input`` to a moto SQS queue; expected from the zone's own wall times."""
    moto = next(line for line in virtual.opening if line.strip().startswith("moto ")).split()[1]
    key = issued_access_key(virtual)  # the default tenant's, as the admin API issues one
    scheduler = boto3.client(
        "scheduler",
        endpoint_url=virtual.base + "/scheduler",
        region_name="us-east-1",
        aws_access_key_id=key.access_key_id,
        aws_secret_access_key=key.secret_access_key,
    )
    keys = {"region_name": "us-east-1", "aws_access_key_id": "local", "aws_secret_access_key": "local"}
    sqs = boto3.client("sqs", endpoint_url=moto, **keys)  # moto takes any key
    url = sqs.create_queue(QueueName="eb-virtual")["QueueUrl"]
    status, clock = virtual.call("GET", "/v1/test/clock")
    assert status == 200, clock
    start = at(clock["now"])
    new_york = ZoneInfo("America/New_York")
    spring = _spring_forward(start, new_york)
    until = spring + timedelta(days=8)
    target = {
        "Arn": "arn:aws:sqs:us-east-1:123456789012:eb-virtual",
        "RoleArn": "arn:aws:iam::123456789012:role/scheduler",
    }
    scheduler.create_schedule(
        Name="sunday-0230",
        ScheduleExpression="cron(30 2 ? * SUN *)",
        ScheduleExpressionTimezone="America/New_York",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={**target, "Input": '{"cron": "<aws.scheduler.scheduled-time>"}'},
    )
    # A first advance, with the cron's first Sunday unstaged ahead: a task registered after it and
    # due before that Sunday must still fire (an advance once marked the shards clean up to it).
    later = start + timedelta(minutes=1)
    status, moved = virtual.call("POST", "/v1/test/clock:advance", {"to": iso(later)}, timeout=ADVANCE_TIMEOUT_S)
    assert status == 200, moved
    first_day = (later + timedelta(hours=1)).replace(microsecond=0)
    scheduler.create_schedule(
        Name="daily",
        ScheduleExpression="rate(2 days)",
        StartDate=first_day,
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={**target, "Input": '{"rate": "<aws.scheduler.scheduled-time>"}'},
    )
    now = later
    while now < until:
        step = min(until, now + timedelta(days=31))
        status, moved = virtual.call("POST", "/v1/test/clock:advance", {"to": iso(step)}, timeout=ADVANCE_TIMEOUT_S)
        assert status == 200, moved
        now = step

    received: dict[str, list[str]] = {"cron": [], "rate": []}
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", []):
        for message in batch:
            ((kind, when),) = json.loads(message["Body"]).items()
            received[kind].append(when)
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    def utc(moment: datetime) -> str:
        return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    sundays = []
    day = start.astimezone(new_york).date()
    while (wall := datetime.combine(day, time(2, 30), new_york)) <= until:
        exists = wall.astimezone(UTC).astimezone(new_york).replace(tzinfo=None) == wall.replace(tzinfo=None)
        if day.weekday() == 6 and wall >= start and exists:
            sundays.append(utc(wall))
        day += timedelta(days=1)
    assert sorted(received["cron"]) == sundays
    spring_day = spring.astimezone(new_york).date()
    assert all(at(t).astimezone(new_york).date() != spring_day for t in received["cron"])  # not at 03:00 either
    fires = int((until - first_day) / timedelta(days=2)) + 1  # 48 hours apart, whatever the clocks do
    assert sorted(received["rate"]) == [utc(first_day + timedelta(days=2 * i)) for i in range(fires)]
