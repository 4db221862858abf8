"""The console's tasks: a task registered from the editor (its schedule previewed first, a bad
one showing the field the API named), seen firing with its lateness charted, paused, resumed and
cancelled from its page; the list's filters and paging."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from local.receiver import Receiver, running_receiver
from tests.browser.console import as_tenant, eventually, http_target, nav, sign_in

pytestmark = pytest.mark.browser

PAGE_SIZE = 20
"""The tasks page's size (pages/tasks.js)."""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


def test_a_task_from_the_editor_fires_and_is_paused_resumed_and_cancelled(
    page, shoot, sundial, new_tenant, receiver
) -> None:
    tenant = new_tenant("editor")
    call = as_tenant(sundial, tenant.key)
    sign_in(page, tenant.key)
    nav(page, "New task")

    page.get_by_label("Name").fill("console-heartbeat")
    schedule = page.get_by_label("Schedule (JSON)")
    create = page.get_by_role("button", name="Create")
    schedule.fill('{"cron": "61 * * * *"}')
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("error-field")).to_have_text("schedule.cron")
    expect(create).to_be_disabled()
    shoot(page, "editor-error")

    page.get_by_role("button", name="every_seconds").click()  # a preset, then changed by hand
    schedule.fill('{"every_seconds": 2}')
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("next-times").locator("tbody tr")).to_have_count(5)
    expect(page.get_by_test_id("error")).to_have_count(0)
    page.get_by_label("URL").fill(receiver.url + "/beat")
    page.get_by_label("Payload (JSON, optional)").fill('{"from": "console"}')
    expect(create).to_be_enabled()
    shoot(page, "editor")
    create.click()

    expect(page.get_by_test_id("task-name")).to_have_text("console-heartbeat")
    task_id = page.url.rsplit("/", 1)[1]
    status, task = call("GET", f"/v1/tasks/{task_id}")
    assert status == 200
    assert task["schedule"]["every_seconds"] == 2
    assert task["payload"] == {"from": "console"}

    # it fires: the receiver is called, the page shows the succeeded run and charts its lateness
    assert receiver.wait_for("/beat", 1, timeout=20), "the task never fired"
    runs = page.get_by_test_id("runs")
    expect(runs.get_by_text("succeeded").first).to_be_visible(timeout=20_000)
    expect(runs.get_by_test_id("lateness").first).to_contain_text(" ms")
    chart = page.get_by_test_id("lateness-chart")
    expect(chart.locator("canvas")).to_have_count(1)
    drawn = chart.locator("canvas").evaluate(
        "c => c.getContext('2d').getImageData(0, 0, c.width, c.height).data"
        ".filter((v, i) => i % 4 === 3 && v > 0).length"
    )
    assert drawn > 100, "the lateness chart's canvas is blank"
    expect(page.get_by_test_id("targets")).to_contain_text(receiver.url + "/beat")
    expect(page.get_by_test_id("next-times").locator("tbody tr")).to_have_count(5)
    shoot(page, "task")

    page.get_by_role("button", name="Pause").click()
    expect(page.get_by_test_id("task-status")).to_contain_text("paused")
    assert call("GET", f"/v1/tasks/{task_id}")[1]["status"] == "paused"
    page.get_by_role("button", name="Resume").click()
    expect(page.get_by_test_id("task-status")).to_contain_text("scheduled")
    assert call("GET", f"/v1/tasks/{task_id}")[1]["status"] == "scheduled"

    page.get_by_role("button", name="Cancel task").click()
    page.get_by_role("button", name="Yes, cancel it").click()
    expect(page.get_by_test_id("task-status")).to_contain_text("cancelled")
    assert call("GET", f"/v1/tasks/{task_id}")[1]["status"] == "cancelled"
    expect(page.get_by_role("button", name="Run now")).to_have_count(0)


def test_a_task_is_run_now_and_its_schedule_changed_after_a_preview(page, sundial, new_tenant, receiver) -> None:
    tenant = new_tenant("reschedule")
    call = as_tenant(sundial, tenant.key)
    status, task = call(
        "POST",
        "/v1/tasks",
        {"name": "later", "schedule": {"after_seconds": 3600}, "target": http_target(receiver.url + "/")},
    )
    assert status == 201
    sign_in(page, tenant.key)
    page.get_by_role("link", name="later").click()
    expect(page.get_by_test_id("next-times").locator("tbody tr")).to_have_count(1)  # a one-shot: its next_fire_at
    page.get_by_role("button", name="Run now").click()
    expect(page.get_by_test_id("outcome")).to_contain_text("Run started")
    expect(page.get_by_test_id("runs").get_by_text("succeeded")).to_be_visible(timeout=20_000)
    assert receiver.wait_for("/", 1, timeout=5), "the run now did not call the target"

    page.get_by_text("Change the schedule").click()
    page.get_by_label("Schedule (JSON)").fill('{"cron": "0 9 * * 1-5", "timezone": "Europe/Paris"}')
    save = page.get_by_role("button", name="Save schedule")
    expect(save).to_be_disabled()
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("next-times").last.locator("tbody tr")).to_have_count(5)
    save.click()
    expect(page.get_by_test_id("task-schedule")).to_have_text("cron 0 9 * * 1-5 (Europe/Paris)")
    stored = eventually(lambda: (t := call("GET", f"/v1/tasks/{task['id']}")[1])["version"] > task["version"] and t)
    assert stored["schedule"]["cron"] == "0 9 * * 1-5"


def test_the_tasks_list_filters_by_status_and_name_and_pages(page, shoot, sundial, new_tenant) -> None:
    tenant = new_tenant("paging")
    call = as_tenant(sundial, tenant.key)
    target = http_target("http://127.0.0.1:9/never")
    specs = [
        {"name": f"alpha-{i:02}", "schedule": {"after_seconds": 3600}, "target": target} for i in range(PAGE_SIZE + 2)
    ]
    specs += [{"name": f"beta-{i}", "schedule": {"cron": "0 3 * * *"}, "target": target} for i in range(3)]
    status, batch = call("POST", "/v1/tasks:batch", {"tasks": specs})
    assert status == 200
    assert all("task" in item for item in batch["items"])
    paused = batch["items"][-1]["task"]["id"]
    assert call("POST", f"/v1/tasks/{paused}/pause")[0] == 200
    # the list comes from an eventually consistent index: the console shows it once it has them
    eventually(lambda: len(call("GET", "/v1/tasks?limit=100")[1]["items"]) == len(specs), what="every task listed")
    eventually(lambda: call("GET", "/v1/tasks?status=paused")[1]["items"], what="the paused task listed")

    sign_in(page, tenant.key)
    rows = page.get_by_test_id("tasks").locator("tbody tr")
    names = rows.locator("td:first-child")
    expect(rows).to_have_count(PAGE_SIZE)
    first = names.all_inner_texts()
    page.get_by_role("button", name="Next").click()
    expect(page.get_by_test_id("page")).to_have_text("page 2")
    expect(rows).to_have_count(len(specs) - PAGE_SIZE)
    expect(page.get_by_role("button", name="Next")).to_be_disabled()
    second = names.all_inner_texts()
    assert sorted(first + second) == sorted(spec["name"] for spec in specs)  # every task once
    page.get_by_role("button", name="Previous").click()
    expect(page.get_by_test_id("page")).to_have_text("page 1")
    expect(rows).to_have_count(PAGE_SIZE)
    assert names.all_inner_texts() == first

    page.get_by_label("Name starts with").fill("beta-")
    expect(rows).to_have_count(3)
    page.get_by_label("Status").select_option("paused")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("beta-2")
    page.get_by_label("Name starts with").fill("")
    expect(rows).to_have_count(1)
    page.get_by_label("Status").select_option("")
    expect(rows).to_have_count(PAGE_SIZE)
    shoot(page, "tasks")


@pytest.mark.parametrize(
    ("preset", "times"), [("at", 1), ("after_seconds", 1), ("cron", 5), ("every_seconds", 5), ("repeat", 5)]
)
def test_every_schedule_preset_previews(page, new_tenant, preset, times) -> None:
    sign_in(page, new_tenant("presets").key)
    nav(page, "New task")
    page.get_by_role("button", name=preset, exact=True).click()
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("next-times").locator("tbody tr")).to_have_count(times)
    expect(page.get_by_test_id("error")).to_have_count(0)


def test_a_chained_run_links_to_its_parent_and_the_task_shows_its_chains(
    page, shoot, sundial, new_tenant, receiver
) -> None:
    tenant = new_tenant("chains")
    call = as_tenant(sundial, tenant.key)
    status, child = call(
        "POST", "/v1/tasks", {"schedule": {"cron": "0 0 1 1 *"}, "target": http_target(receiver.url + "/child")}
    )
    assert status == 201, child
    status, parent = call(
        "POST",
        "/v1/tasks",
        {
            "schedule": {"after_seconds": 1},
            "target": http_target(receiver.url + "/parent"),
            "on_success": [child["id"]],
        },
    )
    assert status == 201, parent
    assert receiver.wait_for("/child", 1, timeout=20), "the chained task never ran"
    (parent_call,) = receiver.calls_to("/parent")

    sign_in(page, tenant.key)
    page.goto(f"{sundial.base}/console/#/tasks/{parent['id']}")
    expect(page.get_by_test_id("chains")).to_contain_text(child["id"])
    page.get_by_test_id("chains").get_by_role("link", name=child["id"]).click()
    runs = page.get_by_test_id("runs")
    expect(runs.get_by_test_id("parent").first).to_have_text(parent_call.body["run_id"], timeout=20_000)
    shoot(page, "chained-run")
    runs.get_by_test_id("parent").first.get_by_role("link").click()
    expect(page.get_by_test_id("chains")).to_be_visible()
    assert page.url.endswith(f"#/tasks/{parent['id']}")


def test_the_tasks_list_shows_how_each_last_run_went_and_a_failed_task_never_looks_green(
    page, shoot, sundial, new_tenant, receiver
) -> None:
    tenant = new_tenant("outcomes")
    call = as_tenant(sundial, tenant.key)
    receiver.script("/down", *([500] * 50))
    once = {"max_attempts": 1}
    specs = [
        {"name": "ok-once", "schedule": {"after_seconds": 1}, "target": http_target(receiver.url + "/ok")},
        {"name": "fails-once", "schedule": {"after_seconds": 1}, "retry": once,
         "target": http_target(receiver.url + "/down")},
        {"name": "fails-every-2s", "schedule": {"every_seconds": 2}, "retry": once,
         "target": http_target(receiver.url + "/down")},
        {"name": "not-yet", "schedule": {"cron": "0 3 * * *"}, "target": http_target(receiver.url + "/ok")},
    ]  # fmt: skip
    ids = {spec["name"]: call("POST", "/v1/tasks", spec)[1]["id"] for spec in specs}

    def last(name: str) -> dict:
        return call("GET", f"/v1/tasks/{ids[name]}")[1]

    eventually(lambda: last("ok-once")["status"] == "completed", what="ok-once completed")
    eventually(lambda: last("fails-once")["status"] == "failed", what="fails-once failed")

    def last_failed(name: str) -> bool:
        return (last(name)["last_run"] or {}).get("status") in ("failed", "dead_lettered")

    eventually(lambda: last_failed("fails-every-2s"), what="fails-every-2s failed a run")
    # paused, it stops firing: its last run (one under way when paused ends too) stays failed
    assert call("POST", f"/v1/tasks/{ids['fails-every-2s']}/pause")[0] == 200
    eventually(lambda: last_failed("fails-every-2s"), what="its last run failed")
    eventually(lambda: len(call("GET", "/v1/tasks")[1]["items"]) == len(specs), what="every task listed")

    sign_in(page, tenant.key)
    rows = page.get_by_test_id("tasks").locator("tbody tr")
    expect(rows).to_have_count(len(specs))
    green = ".status-succeeded, .status-completed"

    def row(name: str):
        return rows.filter(has=page.get_by_role("link", name=name, exact=True))

    expect(row("ok-once").get_by_test_id("last-run").locator(".status-succeeded")).to_have_text("succeeded")
    failed = row("fails-once")
    expect(failed.locator(".status-failed").first).to_have_text("failed")  # the task's own status
    expect(failed.get_by_test_id("last-run").locator(".status")).to_have_class(
        re.compile(r"status-(failed|dead_lettered)")
    )
    expect(failed.locator(green)).to_have_count(0)
    recurring = row("fails-every-2s")
    expect(recurring.locator(".status-paused")).to_have_text("paused")
    expect(recurring.locator("td").nth(4)).to_have_text("none while paused")  # no next fire while paused
    expect(recurring.get_by_test_id("last-run").locator(".status")).to_have_class(
        re.compile(r"status-(failed|dead_lettered)")
    )
    expect(recurring.locator(green)).to_have_count(0)
    expect(row("not-yet").get_by_test_id("last-run")).to_have_text("not run yet")
    shoot(page, "tasks-outcomes", docs=True)

    page.get_by_label("Status").select_option("failed")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("fails-once")
