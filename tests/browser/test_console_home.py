"""The console's home answers "is anything wrong?" at a glance: a tenant with nothing wrong is told
so; one with a task Sundial paused after failures, its dead letter, a failed task and a failed
job sees each counted and listed, linked to its page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from local.receiver import Receiver, running_receiver
from tests.browser.console import as_tenant, eventually, http_target, sign_in
from tests.support.processor import running_processor

pytestmark = pytest.mark.browser


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
        "Nothing is wrong: no failed task, no task paused after failures, no dead letter waiting, no failed job."
    )
    expect(page.locator(".verdict-good")).to_have_count(1)
    for check in ("failed-tasks", "self-paused", "dead-letters-waiting", "failed-jobs"):
        expect(page.get_by_test_id(check).get_by_test_id("count")).to_have_text("0")
    expect(page.locator(".check-good")).to_have_count(4)


def test_the_home_counts_and_lists_what_is_wrong(page, shoot, sundial, new_tenant, receiver) -> None:
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
    with running_processor(lambda body: (400, {"error": "no such bucket"})) as (url, _):
        status, job = call("POST", "/v1/jobs", {"name": "nightly-import", "processor": {"http": {"url": url}}})
        assert status == 201, job
        eventually(lambda: call("GET", f"/v1/jobs/{job['id']}")[1]["status"] == "failed", what="the job failed")
    paused = eventually(
        lambda: (t := call("GET", f"/v1/tasks/{tasks[0]['id']}")[1])["status"] == "paused" and t, what="self-paused"
    )
    eventually(lambda: call("GET", f"/v1/tasks/{tasks[1]['id']}")[1]["status"] == "failed", what="the task failed")
    # the lists the home reads are eventually consistent: wait until they show it all
    eventually(lambda: len(call("GET", "/v1/dead-letters?status=dead_lettered")[1]["items"]) == 2, what="2 letters")
    eventually(lambda: call("GET", "/v1/jobs?status=failed")[1]["items"], what="the failed job listed")
    eventually(lambda: call("GET", "/v1/tasks?status=paused")[1]["items"], what="the paused task listed")
    eventually(lambda: call("GET", "/v1/tasks?status=failed")[1]["items"], what="the failed task listed")

    sign_in(page, tenant.key, "")
    expect(page.get_by_test_id("verdict")).to_have_text("4 of 4 checks need attention (below).")
    expect(page.locator(".verdict-bad")).to_have_count(1)
    self_paused = page.get_by_test_id("self-paused")
    expect(self_paused.get_by_test_id("count")).to_have_text("1")
    expect(self_paused).to_contain_text("sync-crm")
    expect(self_paused).to_contain_text(paused["paused_reason"])
    failed_tasks = page.get_by_test_id("failed-tasks")
    expect(failed_tasks.get_by_test_id("count")).to_have_text("1")
    expect(failed_tasks).to_contain_text("send-invoice")
    expect(failed_tasks.locator(".status-failed")).to_have_text("failed")
    expect(page.get_by_test_id("dead-letters-waiting").get_by_test_id("count")).to_have_text("2")
    failed_jobs = page.get_by_test_id("failed-jobs")
    expect(failed_jobs.get_by_test_id("count")).to_have_text("1")
    expect(failed_jobs).to_contain_text("the pre step failed on attempt 1: the processor answered HTTP 400")
    expect(page.locator(".check-bad")).to_have_count(4)
    expect(page.get_by_text("fine", exact=True)).to_have_count(0)
    shoot(page, "home", docs=True)

    failed_jobs.get_by_role("link", name="nightly-import").click()
    expect(page.get_by_test_id("job-failure").get_by_test_id("failure-step")).to_have_text("the pre step")
    page.go_back()
    self_paused.get_by_role("link", name="sync-crm").click()
    expect(page.get_by_test_id("task-status")).to_contain_text(paused["paused_reason"])
