"""The console's home answers "is anything wrong?" at a glance, exactly: a tenant with nothing
wrong is told so; one with a task Sundial paused after failures, a failed task, their dead
letters, a failed job and a failed workflow run, each older than 1,000 other tasks, sees each
counted exactly (GET /v1/overview) in red and listed, linked to its page; a check's long error
stays inside its card."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from local.receiver import Receiver, running_receiver
from tests.browser.console import as_tenant, eventually, http_target, sign_in
from tests.support.processor import running_processor

pytestmark = pytest.mark.browser

CHECKS = ("failed-tasks", "self-paused", "dead-letters-waiting", "failed-jobs", "failed-workflow-runs")
NEWER = 1000
"""Tasks registered after the ones the home counts: five times what a filtered page of the
listing index reads in a request (docs/status-index.md)."""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running


def test_a_tenant_with_nothing_wrong_is_told_so(page, sundial, new_tenant) -> None:
    tenant = new_tenant("calm")
    call = as_tenant(sundial, tenant.key)
    spec = {"name": "quiet", "schedule": {"cron": "0 3 * * *"}, "target": http_target("http://127.0.0.1:9/")}
    assert call("POST", "/v1/tasks", spec)[0] == 201
    sign_in(page, tenant.key, "")  # no hash: the console lands on its home
    expect(page.get_by_role("heading", name="Home", exact=True)).to_be_visible()
    expect(page.get_by_test_id("verdict")).to_have_text(
        "Nothing is wrong: no failed task, no task paused after failures, no dead letter waiting, no failed job, "
        "no failed workflow run."
    )
    expect(page.locator(".verdict-good")).to_have_count(1)
    for check in CHECKS:
        expect(page.get_by_test_id(check).get_by_test_id("count")).to_have_text("0")
    expect(page.locator(".check-good")).to_have_count(len(CHECKS))


def register_newer(call: Any, count: int = NEWER) -> None:
    """``count`` tasks that never fire in the test, through the batch route (100 a request)."""
    spec = {"schedule": {"after_seconds": 86400}, "target": http_target("http://127.0.0.1:9/never")}
    for start in range(0, count, 100):
        batch = {"tasks": [{**spec, "name": f"newer-{n}"} for n in range(start, min(start + 100, count))]}
        status, answer = call("POST", "/v1/tasks:batch", batch)
        assert status == 200, answer
        assert all("task" in item for item in answer["items"]), answer


def test_the_home_counts_and_lists_what_is_wrong_exactly(page, shoot, sundial, new_tenant, receiver) -> None:
    tenant = new_tenant("trouble")
    call = as_tenant(sundial, tenant.key)
    down = receiver.url + "/down"
    receiver.script("/down", *([500] * 20))
    once = {"max_attempts": 1}
    specs = [
        # fails its first occurrence for good: Sundial pauses it (paused_reason) and keeps a dead letter
        {"name": "sync-crm", "schedule": {"every_seconds": 2}, "retry": once, "pause_after_failures": 1,
         "target": http_target(down)},
        # a one-shot whose only run fails: a failed task (and a dead letter)
        {"name": "send-invoice", "schedule": {"after_seconds": 1}, "retry": once, "target": http_target(down)},
        # nothing wrong with this one
        {"name": "fine", "schedule": {"cron": "0 3 * * *"}, "target": http_target(receiver.url + "/ok")},
    ]  # fmt: skip
    tasks = [call("POST", "/v1/tasks", spec)[1] for spec in specs]
    # a workflow whose one node fails: a failed workflow run
    workflow_spec = {"name": "nightly-etl", "nodes": [{"id": "load", "target": http_target(down), "retry": once}],
                     "edges": []}  # fmt: skip
    status, workflow = call("POST", "/v1/workflows", workflow_spec)
    assert status == 201, workflow
    status, started = call("POST", f"/v1/workflows/{workflow['id']}/run")
    assert status == 202, started
    register_newer(call)  # every one of them newer than what the home counts
    with running_processor(lambda body: (400, {"error": "no such bucket"})) as (url, _):
        status, job = call("POST", "/v1/jobs", {"name": "nightly-import", "processor": {"http": {"url": url}}})
        assert status == 201, job
        eventually(lambda: call("GET", f"/v1/jobs/{job['id']}")[1]["status"] == "failed", what="the job failed")
    paused = eventually(
        lambda: (t := call("GET", f"/v1/tasks/{tasks[0]['id']}")[1])["status"] == "paused" and t, what="self-paused"
    )
    eventually(lambda: call("GET", f"/v1/tasks/{tasks[1]['id']}")[1]["status"] == "failed", what="the task failed")
    run = f"/v1/workflows/{workflow['id']}/runs/{started['run_id']}"
    eventually(lambda: call("GET", run)[1]["status"] == "failed", what="the workflow run failed")
    # the two tasks' dead letters and the workflow node's, which its trigger records after the node
    # ended the run (docs/workflows.md, section 3): the run reads failed a moment before it exists
    letters = 3
    eventually(
        lambda: len(call("GET", "/v1/dead-letters?status=dead_lettered&limit=100")[1]["items"]) == letters,
        what="the three dead letters",
    )
    # the index the home counts is eventually consistent: wait until it counts it all
    counted = {"tasks": {"failed": 1, "paused_after_failures": 1}, "dead_letters": {"waiting": letters},
               "jobs": {"failed": 1}, "workflow_runs": {"failed": 1}}  # fmt: skip

    def overview_counts_it_all() -> bool:
        overview = call("GET", "/v1/overview")[1]
        return all(overview[part][name] == n for part, counts in counted.items() for name, n in counts.items())

    eventually(overview_counts_it_all, what="the overview counting it all")

    sign_in(page, tenant.key, "")
    expect(page.get_by_test_id("verdict")).to_have_text("5 of 5 checks need attention (below).")
    expect(page.locator(".verdict-bad")).to_have_count(1)
    self_paused = page.get_by_test_id("self-paused")
    expect(self_paused.get_by_test_id("count")).to_have_text("1")
    expect(self_paused).to_contain_text("sync-crm")
    expect(self_paused).to_contain_text(paused["paused_reason"])
    failed_tasks = page.get_by_test_id("failed-tasks")
    expect(failed_tasks.get_by_test_id("count")).to_have_text("1")
    expect(failed_tasks).to_contain_text("send-invoice")
    expect(failed_tasks.locator(".status-failed")).to_have_text("failed")
    expect(page.get_by_test_id("dead-letters-waiting").get_by_test_id("count")).to_have_text(str(letters))
    failed_jobs = page.get_by_test_id("failed-jobs")
    expect(failed_jobs.get_by_test_id("count")).to_have_text("1")
    expect(failed_jobs).to_contain_text("the pre step failed on attempt 1: the processor answered HTTP 400")
    failed_runs = page.get_by_test_id("failed-workflow-runs")
    expect(failed_runs.get_by_test_id("count")).to_have_text("1")
    run_link = failed_runs.get_by_role("link", name=started["run_id"])
    expect(run_link).to_have_attribute("href", f"#/workflows/{workflow['id']}/runs/{started['run_id']}")
    expect(failed_runs).to_contain_text("1 failed, ended")
    expect(page.locator(".check-bad")).to_have_count(len(CHECKS))
    for check in CHECKS:
        expect(page.get_by_test_id(check).get_by_test_id("more")).to_have_text("All of them")
    expect(page.get_by_text("fine", exact=True)).to_have_count(0)
    shoot(page, "home", docs=True)

    run_link.click()
    expect(page.get_by_test_id("run-status")).to_have_text("failed")
    page.go_back()
    failed_jobs.get_by_role("link", name="nightly-import").click()
    expect(page.get_by_test_id("job-failure").get_by_test_id("failure-step")).to_have_text("the pre step")
    page.go_back()
    failed_tasks.get_by_role("link", name="All of them").click()  # the tasks list, filtered
    expect(page.get_by_label("Status")).to_have_value("failed")
    expect(page.get_by_test_id("tasks").locator("tbody tr")).to_have_count(1)
    page.go_back()
    self_paused.get_by_role("link", name="sync-crm").click()
    expect(page.get_by_test_id("task-status")).to_contain_text(paused["paused_reason"])


LONG = "the processor answered HTTP 500: " + "the index is locked " * 99
"""A failed job's error of about 2,000 characters, and one with no space to break at."""
UNBROKEN = "x" * 2000
WHEN = "2030-03-01T08:00:00.000Z"


def test_a_long_error_stays_inside_its_card_and_a_count_not_zero_is_red(page, new_tenant) -> None:
    """The home's routes answered by the test: 3 failed jobs, each error 2,000 characters long,
    the first two of them listed (more after them); every other check 0 but the failed tasks,
    whose list could not be read."""
    assert len(LONG) >= 2000
    overview = {"tasks": {"failed": 7, "paused": 0, "paused_after_failures": 0}, "dead_letters": {"waiting": 0},
                "jobs": {"running": 0, "failed": 3}, "workflow_runs": {"failed": 0}}  # fmt: skip
    jobs = [{"id": f"01J000000000000000000000J{n}", "name": f"import-{n}", "status": "failed", "error": error,
             "progress": {"total_shards": None}, "created_at": WHEN}
            for n, error in enumerate((LONG, UNBROKEN))]  # fmt: skip

    def answer(route: Any) -> None:
        url = urlsplit(route.request.url)
        status = parse_qs(url.query).get("status", [""])[0]
        if url.path == "/v1/overview":
            body: Any = overview
        elif url.path == "/v1/jobs" and status == "failed":  # two, then empty pages with a cursor
            cursor = parse_qs(url.query).get("cursor")
            body = {"items": [] if cursor else jobs, "next_cursor": "more"}
        elif url.path == "/v1/tasks" and status == "failed":
            route.fulfill(status=500, content_type="application/json",
                          body=json.dumps({"error": {"code": "internal_error", "message": "x" * 2000}}))  # fmt: skip
            return
        else:
            body = {"items": [], "next_cursor": None}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route(lambda url: urlsplit(url).path.startswith("/v1/"), answer)
    sign_in(page, new_tenant("long").key, "")
    expect(page.get_by_test_id("verdict")).to_have_text("2 of 5 checks need attention (below).")
    failed_jobs = page.get_by_test_id("failed-jobs")
    expect(failed_jobs).to_have_class("check check-bad")
    expect(failed_jobs.get_by_test_id("count")).to_have_text("3")
    expect(failed_jobs.locator("li")).to_have_count(2)
    expect(failed_jobs.get_by_test_id("more")).to_have_text("2 shown, more…")
    expect(failed_jobs.get_by_role("link", name="more…")).to_have_attribute("href", "#/jobs?status=failed")
    failed_tasks = page.get_by_test_id("failed-tasks")  # its count is known, its list is not: still red
    expect(failed_tasks).to_have_class("check check-bad")
    expect(failed_tasks.get_by_test_id("count")).to_have_text("7")
    expect(failed_tasks).to_contain_text("The list could not be read: 500 internal_error")
    expect(failed_tasks.get_by_test_id("more")).to_have_text("0 shown, more…")
    expect(page.get_by_test_id("self-paused")).to_have_class("check check-good")

    for check in CHECKS:  # no card grows past its column, nor the page past the window
        card = page.get_by_test_id(check)
        box, grid = card.bounding_box(), page.locator(".checks").bounding_box()
        assert box is not None
        assert grid is not None
        assert box["x"] >= grid["x"], check
        assert box["x"] + box["width"] <= grid["x"] + grid["width"] + 0.5, check
        assert card.evaluate("card => card.scrollWidth <= card.clientWidth"), check
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    for item in failed_jobs.locator("li").all():  # the error: two lines at most, the whole in its title
        detail = item.locator(".hint")
        lines = detail.evaluate("h => h.clientHeight / parseFloat(getComputedStyle(h).lineHeight)")
        assert 1.5 < lines < 2.5, lines
        assert detail.evaluate("h => h.scrollHeight > h.clientHeight")  # cut
    expect(failed_jobs.locator("li .hint").first).to_have_attribute("title", jobs[0]["error"])
