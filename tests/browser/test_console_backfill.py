"""The console's backfill: a recurring task's past window backfilled from its page (a window that
ends in the future first: the field the API names), its runs calling a real receiver with their
own scheduled_for, the backfill listed with its progress until every run succeeded; a second, slow
backfill cancelled from the page."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from playwright.sync_api import expect

from local.receiver import running_receiver
from shared.domain.times import iso
from tests.browser.console import as_tenant, http_target, sign_in

pytestmark = pytest.mark.browser


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_task_is_backfilled_from_its_page_and_a_backfill_cancelled(page, shoot, sundial, new_tenant) -> None:
    tenant = new_tenant("backfill")
    call = as_tenant(sundial, tenant.key)
    with running_receiver() as receiver:
        status, task = call(
            "POST",
            "/v1/tasks",
            {
                "name": "every-second",
                "schedule": {"cron": "* * * * * *"},
                "target": http_target(receiver.url + "/tick"),
            },
        )
        assert status == 201, task
        created = at(task["created_at"]).replace(microsecond=0)
        sign_in(page, tenant.key, f"#/tasks/{task['id']}")
        expect(page.get_by_test_id("task-name")).to_have_text("every-second")
        page.get_by_text("Backfill past occurrences").click()
        page.get_by_label("From").fill(iso(created - timedelta(seconds=4)))
        page.get_by_label("To").fill(iso(created + timedelta(hours=1)))
        page.get_by_role("button", name="Backfill", exact=True).click()
        expect(page.get_by_test_id("error-field")).to_have_text("to")

        page.get_by_label("To").fill(iso(created))
        page.get_by_label("Per second").fill("4")
        page.get_by_role("button", name="Backfill", exact=True).click()
        expect(page.get_by_test_id("backfill-started")).to_contain_text("4 occurrences to fire")
        wanted = {iso(created - timedelta(seconds=s)) for s in (4, 3, 2, 1)}

        def backfilled() -> set[str]:
            return {
                c.body["scheduled_for"] for c in receiver.calls_to("/tick") if at(c.body["scheduled_for"]) < created
            }

        with receiver.arrived:
            receiver.arrived.wait_for(lambda: len(backfilled()) >= 4, 30)
        assert backfilled() == wanted
        rows = page.get_by_test_id("backfill")
        expect(rows.first.get_by_test_id("backfill-progress")).to_have_text("4 succeeded", timeout=20_000)
        expect(rows.first).to_contain_text("done")
        shoot(page, "task-backfill")

        page.get_by_label("From").fill(iso(created - timedelta(seconds=60)))
        page.get_by_label("To").fill(iso(created - timedelta(seconds=30)))
        page.get_by_label("Per second").fill("0.05")  # one every 20 s: none but the first can fire before the cancel
        page.get_by_role("button", name="Backfill", exact=True).click()
        expect(page.get_by_test_id("backfill-started")).to_contain_text("30 occurrences to fire")
        expect(rows).to_have_count(2)
        rows.first.get_by_role("button", name="Cancel backfill").click()
        # a cancel is a transaction per chunk of its occurrences: seconds on a loaded machine
        expect(rows.first).to_contain_text("cancelled", timeout=20_000)
        # the first run is due a few seconds after the request (past the writers' window, docs/backfill.md
        # section 1), the second 20 s after it: a cancel slowed by a loaded machine can come after the first
        # fired, never after the second
        progress = re.compile(r"^(30 cancelled|1 succeeded, 29 cancelled)$")
        expect(rows.first.get_by_test_id("backfill-progress")).to_have_text(progress, timeout=20_000)
        (slow,) = [b for b in call("GET", f"/v1/tasks/{task['id']}/backfills")[1]["items"] if b["occurrences"] == 30]
        assert slow["status"] == "cancelled"
        assert call("DELETE", f"/v1/tasks/{task['id']}")[0] == 204


def test_a_tasks_backfills_page_ten_at_a_time(page, sundial, new_tenant) -> None:
    tenant = new_tenant("backfill-pages")
    call = as_tenant(sundial, tenant.key)
    status, task = call(
        "POST",
        "/v1/tasks",
        {"name": "pages", "schedule": {"cron": "0 * * * * *"}, "target": http_target("http://127.0.0.1:9/none")},
    )
    assert status == 201, task
    hour = at(task["created_at"]).replace(minute=0, second=0, microsecond=0)
    for n in range(11):  # eleven one-minute windows, hours back: one occurrence each, due minutes from now
        start = hour - timedelta(hours=n + 2)
        status, body = call(
            "POST",
            f"/v1/tasks/{task['id']}/backfill",
            {"from": iso(start), "to": iso(start + timedelta(minutes=1)), "per_second": 0.01},
        )
        assert status == 202, body
    sign_in(page, tenant.key, f"#/tasks/{task['id']}")
    rows = page.get_by_test_id("backfill")
    expect(rows).to_have_count(10)
    backfills = page.locator("section.backfills")
    # a page is read behind its rows' own progress reads (ten running backfills, one each 3 s):
    # on a loaded machine the runtime takes seconds to come to it
    backfills.get_by_role("button", name="Next").click()
    expect(rows).to_have_count(1, timeout=20_000)
    backfills.get_by_role("button", name="Previous").click()
    expect(rows).to_have_count(10, timeout=20_000)
    assert call("DELETE", f"/v1/tasks/{task['id']}")[0] == 204
