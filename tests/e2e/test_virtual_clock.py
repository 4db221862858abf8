"""``make run`` on the virtual clock (the runtime's ``clock`` setting "virtual", local/advance.py): thirteen months
advanced in a few dozen seconds of wall time, through the real pipeline (tick, scanners, delay
queues, trigger, retries) and a real HTTP receiver. Every task fires exactly at the times
``POST /v1/schedules:preview`` gives for it (an independent reading of the same rules: the
preview computes them without firing anything), a failed attempt's retry comes its backoff later
across the DST changes, and every callback's signature verifies with Standard Webhooks' own
verifier. A runtime of its own: its clock is not the suite's."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from local.settings import LocalSettings
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
        assert fired == sum(len(found) for found in calls.values())
        assert len(expected["monthly"]) >= MONTHS
        assert {t[11:16] for t in expected["dst"]} == {"05:50", "06:50"}  # New York's summer and winter time
        for found in calls.values():
            for call in found:
                Webhook(secret).verify(call.raw, call.headers)  # raises when one does not verify
