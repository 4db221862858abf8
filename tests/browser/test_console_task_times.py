"""The times a task's page shows: a zoned schedule's next times in UTC and in its zone side by
side; a paused task's, which are those it would have once resumed (never a time gone by); and the
lateness chart's axis, written in ISO order on a 24-hour clock in UTC like the rest of the page,
with no empty legend box."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import expect

from local.receiver import Receiver, running_receiver
from tests.browser.console import as_tenant, eventually, http_target, sign_in

pytestmark = pytest.mark.browser

RECORD_CANVAS_TEXT = """
window.drawnText = [];
const fillText = CanvasRenderingContext2D.prototype.fillText;
CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
  window.drawnText.push(String(text));
  return fillText.call(this, text, ...rest);
};
"""
"""Runs before the console's scripts (Playwright's init script, outside the page's policy): every
text a canvas draws is kept, so a test reads the chart's axis labels."""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


def _utc(cell: str) -> datetime:
    """A time as the console writes it, ``2026-03-02 08:00:00Z``."""
    return datetime.strptime(cell, "%Y-%m-%d %H:%M:%SZ").replace(tzinfo=UTC)


def test_a_zoned_schedules_next_times_are_shown_in_utc_and_in_its_zone(page, shoot, sundial, new_tenant) -> None:
    tenant = new_tenant("zoned")
    call = as_tenant(sundial, tenant.key)
    schedule = {"cron": "0 9 * * 1-5", "timezone": "Europe/Paris"}
    status, task = call(
        "POST",
        "/v1/tasks",
        {"name": "paris-morning", "schedule": schedule, "target": http_target("http://127.0.0.1:9/")},
    )
    assert status == 201, task
    sign_in(page, tenant.key, f"#/tasks/{task['id']}")
    times = page.get_by_test_id("next-times")
    expect(times.locator("thead th")).to_have_text(["UTC", "Europe/Paris"])
    rows = times.locator("tbody tr")
    expect(rows).to_have_count(5)
    paris = ZoneInfo("Europe/Paris")
    for utc_cell, zoned_cell in (row.locator("td").all_inner_texts() for row in rows.all()):
        instant = _utc(utc_cell)
        local = instant.astimezone(paris)
        offset = local.strftime("%z")
        assert zoned_cell == f"{local:%Y-%m-%d %H:%M:%S} (UTC{offset[:3]}:{offset[3:]})"
        assert zoned_cell[11:19] == "09:00:00"  # the schedule's 9 o'clock, in its zone
        assert local.weekday() < 5
    expect(page.get_by_test_id("next-fire")).to_contain_text("in Europe/Paris")
    shoot(page, "task-zoned", docs=True)


def test_a_paused_task_shows_no_time_gone_by_but_the_times_it_would_have_once_resumed(
    page, sundial, new_tenant
) -> None:
    """Paused, its armed occurrence goes by: what the page lists is what resuming now would arm
    (misfire skip: the schedule's times from now on), under a heading that says it is paused."""
    tenant = new_tenant("paused")
    call = as_tenant(sundial, tenant.key)
    spec = {
        "name": "every-2s",
        "schedule": {"every_seconds": 2},
        "misfire": "skip",
        "target": http_target("http://127.0.0.1:9/"),
    }
    status, task = call("POST", "/v1/tasks", spec)
    assert status == 201, task
    status, paused = call("POST", f"/v1/tasks/{task['id']}/pause")
    assert status == 200, paused
    armed = datetime.fromisoformat(paused["next_fire_at"])
    eventually(lambda: datetime.now(UTC) > armed, what="the armed occurrence to go by")

    sign_in(page, tenant.key, f"#/tasks/{task['id']}")
    expect(page.get_by_test_id("next-times-heading")).to_have_text("Paused — next times once resumed:")
    expect(page.get_by_test_id("next-fire")).to_contain_text("none while paused")
    rows = page.get_by_test_id("next-times").locator("tbody tr")
    expect(rows).to_have_count(5)
    shown = [_utc(cell) for cell in rows.locator("td").all_inner_texts()]
    looked = datetime.now(UTC).replace(microsecond=0)
    assert all(when > armed for when in shown), (armed, shown)
    assert shown[0] >= looked - timedelta(seconds=3), (looked, shown)  # from now on, not from when it paused
    assert [(b - a).total_seconds() for a, b in pairwise(shown)] == [2.0] * 4
    # the API answers the same (a paused task's next_fire_at: when a resume now fires it)
    answered = datetime.fromisoformat(call("GET", f"/v1/tasks/{task['id']}")[1]["next_fire_at"])
    assert answered >= looked - timedelta(seconds=3), (looked, answered)
    expect(page.get_by_test_id("next-fire")).to_contain_text("a resume now fires it at")


def test_a_paused_task_whose_occurrence_went_by_with_misfire_fire_now_says_a_resume_fires_it_at_once(
    page, sundial, new_tenant
) -> None:
    tenant = new_tenant("paused-now")
    call = as_tenant(sundial, tenant.key)
    spec = {
        "name": "every-2s",
        "schedule": {"cron": "*/2 * * * * *"},
        "misfire": "fire_now",
        "target": http_target("http://127.0.0.1:9/"),
    }
    status, task = call("POST", "/v1/tasks", spec)
    assert status == 201, task
    status, paused = call("POST", f"/v1/tasks/{task['id']}/pause")
    assert status == 200, paused
    armed = datetime.fromisoformat(paused["next_fire_at"])
    eventually(lambda: datetime.now(UTC) > armed + timedelta(seconds=2), what="the armed occurrence to go by")

    sign_in(page, tenant.key, f"#/tasks/{task['id']}")
    expect(page.get_by_test_id("next-fire")).to_contain_text("none while paused (a resume now fires it at once)")
    expect(page.locator(".note").first).to_have_text(
        "At once (an occurrence went by while paused and its misfire is fire_now), then:"
    )
    rows = page.get_by_test_id("next-times").locator("tbody tr")
    expect(rows).to_have_count(5)
    shown = [_utc(cell) for cell in rows.locator("td").all_inner_texts()]
    assert all(when > armed for when in shown), (armed, shown)


def test_the_lateness_chart_writes_times_in_utc_on_a_24_hour_clock_and_has_no_legend_box(
    page, shoot, sundial, new_tenant, receiver
) -> None:
    tenant = new_tenant("chart")
    call = as_tenant(sundial, tenant.key)
    spec = {"name": "beat", "schedule": {"every_seconds": 2}, "target": http_target(receiver.url + "/beat")}
    status, task = call("POST", "/v1/tasks", spec)
    assert status == 201, task
    assert receiver.wait_for("/beat", 2, timeout=20), "the task did not fire twice"

    def measured() -> list[dict]:
        runs = call("GET", f"/v1/tasks/{task['id']}/runs")[1]["items"]
        return [run for run in runs if run["lateness_ms"] is not None]

    eventually(lambda: len(measured()) >= 2, what="two runs with their lateness")
    page.add_init_script(RECORD_CANVAS_TEXT)
    sign_in(page, tenant.key, f"#/tasks/{task['id']}")
    chart = page.get_by_test_id("lateness-chart")
    expect(chart.locator("canvas")).to_have_count(1)
    call("POST", f"/v1/tasks/{task['id']}/pause")  # no more runs: the chart stays as drawn
    drawn: list[str] = eventually(lambda: page.evaluate("window.drawnText"), what="the chart's labels")
    times = [text for text in drawn if re.fullmatch(r"\d{2}:\d{2}(:\d{2})?|\d{4}-\d{2}-\d{2}", text)]
    assert times, drawn
    assert not [text for text in drawn if re.search(r"\d\s*(am|pm)\b", text, re.IGNORECASE)], drawn
    clock = [text for text in times if ":" in text]
    assert len(set(clock)) == len(clock), clock  # each tick its own time: none written twice
    # the hours are the runs' own in UTC (the axis spans a minute either side of them at most)
    scheduled = [datetime.fromisoformat(run["scheduled_for"]) for run in measured()]
    span = range(
        int((min(scheduled) - timedelta(minutes=2)).timestamp()),
        int((max(scheduled) + timedelta(minutes=2)).timestamp()),
        60,
    )
    utc_hours = {datetime.fromtimestamp(second, UTC).hour for second in span}
    hours = {int(text[:2]) for text in times if ":" in text}
    assert hours, drawn
    assert hours <= utc_hours, (hours, utc_hours)
    expect(chart.locator(".u-legend")).to_have_count(0)
    shoot(page, "task-chart")
