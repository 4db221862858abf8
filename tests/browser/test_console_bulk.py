"""The console's tags and bulk actions: a task made in the editor with tags shows them; the tasks
list filters by a tag; with that one filter, a bulk pause is counted by a dry run first (nothing
changes), then done, and the API shows exactly the selected tasks paused; a bulk cancel by name
does the same; two filters at once offer no bulk action."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.console import as_tenant, eventually, http_target, nav, sign_in

pytestmark = pytest.mark.browser

TARGET = http_target("http://127.0.0.1:9/never")
FAR = {"cron": "0 0 1 1 *"}


def test_a_tag_filter_selects_the_tasks_a_counted_bulk_pause_then_pauses(page, shoot, sundial, new_tenant) -> None:
    tenant = new_tenant("bulk")
    call = as_tenant(sundial, tenant.key)
    specs = [{"name": f"orders-{i}", "schedule": FAR, "target": TARGET, "tags": {"team": "orders"}} for i in range(3)]
    specs += [
        {"name": f"billing-{i}", "schedule": FAR, "target": TARGET, "tags": {"team": "billing"}} for i in range(2)
    ]
    status, batch = call("POST", "/v1/tasks:batch", {"tasks": specs})
    assert status == 200, batch
    ids = {item["task"]["name"]: item["task"]["id"] for item in batch["items"]}
    assert call("POST", f"/v1/tasks/{ids['orders-0']}/pause")[0] == 200  # already paused: left as it is

    sign_in(page, tenant.key)
    rows = page.get_by_test_id("tasks").locator("tbody tr")
    eventually(lambda: len(call("GET", "/v1/tasks?limit=100")[1]["items"]) == 5, what="every task listed")
    page.get_by_label("Tag (key:value)").fill("team:orders")
    expect(rows).to_have_count(3)
    expect(rows.first.get_by_test_id("tag")).to_have_text("team:orders")

    page.get_by_role("button", name="Count (dry run)").click()
    expect(page.get_by_test_id("bulk-count")).to_have_text("2 would be paused, 1 left as they are.")
    statuses = {name: call("GET", f"/v1/tasks/{task_id}")[1]["status"] for name, task_id in ids.items()}
    assert sorted(statuses.values()).count("scheduled") == 4  # a dry run changes nothing
    shoot(page, "bulk-count")
    page.get_by_role("button", name="Pause 2 tasks").click()
    expect(page.get_by_test_id("bulk-done")).to_have_text("2 paused, 1 left as they were.")
    statuses = {name: call("GET", f"/v1/tasks/{task_id}")[1]["status"] for name, task_id in ids.items()}
    assert statuses == {
        "orders-0": "paused",
        "orders-1": "paused",
        "orders-2": "paused",
        "billing-0": "scheduled",
        "billing-1": "scheduled",
    }

    page.get_by_label("Status").select_option("paused")  # two filters: no bulk action
    expect(page.get_by_test_id("bulk-hint")).to_be_visible()
    expect(page.get_by_role("button", name="Count (dry run)")).to_have_count(0)

    page.get_by_label("Tag (key:value)").fill("")
    page.get_by_label("Status").select_option("")
    page.get_by_label("Name starts with").fill("billing-")
    page.get_by_label("Bulk action").select_option("cancel")
    page.get_by_role("button", name="Count (dry run)").click()
    expect(page.get_by_test_id("bulk-count")).to_have_text("2 would be cancelled.")
    page.get_by_role("button", name="Cancel 2 tasks").click()
    expect(page.get_by_test_id("bulk-done")).to_have_text("2 cancelled.")
    assert {call("GET", f"/v1/tasks/{ids[n]}")[1]["status"] for n in ("billing-0", "billing-1")} == {"cancelled"}


def test_a_task_made_with_tags_in_the_editor_shows_them(page, sundial, new_tenant) -> None:
    tenant = new_tenant("tagged")
    call = as_tenant(sundial, tenant.key)
    sign_in(page, tenant.key)
    nav(page, "New task")
    page.get_by_label("Name").fill("tagged-task")
    page.get_by_label("Schedule (JSON)").fill('{"cron": "0 0 1 1 *"}')
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("next-times").locator("tbody tr")).to_have_count(5)
    page.get_by_label("URL").fill("http://127.0.0.1:9/never")
    page.get_by_label("Tags (key:value, one a line, optional)").fill("team:ops\nenv:prod")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_test_id("task-name")).to_have_text("tagged-task")
    expect(page.get_by_test_id("task-tags").get_by_test_id("tag")).to_have_text(["env:prod", "team:ops"])
    task_id = page.url.rsplit("/", 1)[1]
    assert call("GET", f"/v1/tasks/{task_id}")[1]["tags"] == {"env": "prod", "team": "ops"}

    nav(page, "New task")  # a tag off the rules: the API's 400 names it
    page.get_by_label("Schedule (JSON)").fill('{"cron": "0 0 1 1 *"}')
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("next-times").locator("tbody tr")).to_have_count(5)
    page.get_by_label("URL").fill("http://127.0.0.1:9/never")
    page.get_by_label("Tags (key:value, one a line, optional)").fill("team:a#b")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_test_id("error-field")).to_have_text("tags.team")
