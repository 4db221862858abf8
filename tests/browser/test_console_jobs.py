"""A job in the console: its progress while a shard is still at work, then its result; a running
job cancelled from its page, and a cancel the API refuses (its post has begun) shown as refused."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.console import as_tenant, eventually, nav, sign_in
from tests.support.processor import Answer, running_processor

pytestmark = pytest.mark.browser


def test_a_job_is_shown_with_its_progress_then_its_result(page, shoot, sundial, new_tenant) -> None:
    tenant = new_tenant("jobs")
    call = as_tenant(sundial, tenant.key)
    release = threading.Event()

    def process(body: dict[str, Any]) -> Answer:
        if body["phase"] == "shard":
            if body["level"] == 1:  # the last level's shard waits until the test has looked
                release.wait(timeout=25)
            return 200, {"result": sum(body["items"])}
        if body["phase"] == "post":
            return 200, {"result": {"total": sum(body["results"])}}
        return 200, {}

    with running_processor(process) as (url, _):
        spec = {
            "name": "console-sum",
            "processor": {"http": {"url": url, "timeout_seconds": 30}},
            "data": [[1, 2, 3], [4]],
            "sharding": {"min_items_per_shard": 1, "max_items_per_shard": 1, "max_shards": 10},
        }
        status, job = call("POST", "/v1/jobs", spec)
        assert status == 201
        try:
            eventually(
                lambda: call("GET", f"/v1/jobs/{job['id']}")[1]["progress"]["done_shards"] == 3, what="3 shards done"
            )
            sign_in(page, tenant.key)
            nav(page, "Jobs")
            rows = page.get_by_test_id("jobs").locator("tbody tr")
            expect(rows).to_have_count(1)
            expect(rows.first).to_contain_text("running")
            expect(rows.first.get_by_test_id("progress")).to_have_text("3/4 shards, 75%")
            expect(rows.first.get_by_test_id("progress-items")).to_have_text("3/4 items")
            assert rows.first.get_by_role("progressbar").get_attribute("value") == "75"
            shoot(page, "jobs")
            rows.first.get_by_role("link", name="console-sum").click()
            expect(page.get_by_test_id("job-status")).to_have_text("running")
        finally:
            release.set()
        # the job page refreshes itself until the job is done
        expect(page.get_by_test_id("job-status")).to_have_text("succeeded", timeout=20_000)
        expect(page.get_by_test_id("progress")).to_have_text("4/4 shards, 100%")
        expect(page.get_by_test_id("progress-items")).to_have_text("4/4 items")
        expect(page.get_by_test_id("job-result")).to_contain_text('"total": 10')
        shoot(page, "job")


def _holding(phase: str, release: threading.Event, phases: list[str]) -> Callable[[dict[str, Any]], Answer]:
    """A job processor that records each call's phase and holds every ``phase`` call until
    ``release`` (25 s at most); shards answer 1, post ``"posted"``."""

    def process(body: dict[str, Any]) -> Answer:
        phases.append(body["phase"])
        if body["phase"] == phase:
            release.wait(timeout=25)
        return 200, {"shard": {"result": 1}, "post": {"result": "posted"}}.get(body["phase"], {})

    return process


def _held_job(call: Any, url: str, name: str, items: int) -> dict[str, Any]:
    spec = {
        "name": name,
        "processor": {"http": {"url": url, "timeout_seconds": 30}},
        "data": [list(range(items))],
        "sharding": {"min_items_per_shard": 1, "max_items_per_shard": 1, "max_shards": 10},
    }
    status, job = call("POST", "/v1/jobs", spec)
    assert status == 201, job
    return job


def test_a_running_job_is_cancelled_from_its_page(page, sundial, new_tenant) -> None:
    tenant = new_tenant("jobcancel")
    call = as_tenant(sundial, tenant.key)
    release, phases = threading.Event(), []
    # every shard waits: the job is still running when cancelled
    with running_processor(_holding("shard", release, phases)) as (url, _):
        job = _held_job(call, url, "console-cancel", 4)
        try:
            eventually(lambda: "shard" in phases, what="a shard call")
            sign_in(page, tenant.key)
            page.goto(f"/console/#/jobs/{job['id']}")
            expect(page.get_by_test_id("job-status")).to_have_text("running")
            page.get_by_role("button", name="Cancel job").click()
            page.get_by_role("button", name="Keep it").click()  # thought better of it: nothing sent
            assert call("GET", f"/v1/jobs/{job['id']}")[1]["status"] == "running"
            page.get_by_role("button", name="Cancel job").click()
            page.get_by_role("button", name="Yes, cancel it").click()
            expect(page.get_by_test_id("outcome")).to_contain_text("Cancelled")
            expect(page.get_by_test_id("job-status")).to_have_text("cancelled")
            expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)  # only a running job's
            assert call("GET", f"/v1/jobs/{job['id']}")[1]["status"] == "cancelled"
        finally:
            release.set()
        nav(page, "Jobs")
        row = page.get_by_test_id("jobs").locator("tbody tr").first
        expect(row).to_contain_text("cancelled")
        expect(row.locator(".status-cancelled")).to_have_text("cancelled")
        # the shards under way answer: the job stays cancelled, post is never called. Kept: the
        # behaviour is an absence (no post), watched for a second after the release.
        time.sleep(1)
        assert call("GET", f"/v1/jobs/{job['id']}")[1]["status"] == "cancelled"
        assert "post" not in phases


def test_a_cancel_the_api_refuses_shows_its_error(page, sundial, new_tenant) -> None:
    tenant = new_tenant("jobrefuse")
    call = as_tenant(sundial, tenant.key)
    release, phases = threading.Event(), []
    # post has begun: the job is running but cannot be cancelled
    with running_processor(_holding("post", release, phases)) as (url, _):
        job = _held_job(call, url, "console-posting", 2)
        try:
            eventually(lambda: "post" in phases, what="the post call")
            sign_in(page, tenant.key)
            page.goto(f"/console/#/jobs/{job['id']}")
            expect(page.get_by_test_id("job-status")).to_have_text("running")
            page.get_by_role("button", name="Cancel job").click()
            page.get_by_role("button", name="Yes, cancel it").click()
            expect(page.get_by_test_id("error")).to_contain_text("409 job_finished")
            expect(page.get_by_test_id("error")).to_contain_text("post")
            expect(page.get_by_test_id("outcome")).to_have_count(0)
        finally:
            release.set()
        expect(page.get_by_test_id("job-status")).to_have_text("succeeded", timeout=20_000)
        expect(page.get_by_test_id("job-result")).to_contain_text("posted")


def shown(iso: str) -> str:
    """A time as the console writes it (ui.js, ``when``): ``2026-03-01 08:00:00Z``."""
    return re.sub(r"\.\d+Z$|Z$", "Z", iso.replace("T", " "))


def test_a_failed_jobs_page_says_which_step_failed_on_which_attempt_with_what_answer(
    page, shoot, sundial, new_tenant
) -> None:
    """Shard 1 of level 0 answers 500 on its 3 attempts: the page says so in words and member by
    member, shows each step with its times and shards (level 1 never began, post never ran), and
    the processor with its secret header redacted."""
    tenant = new_tenant("jobfail")
    call = as_tenant(sundial, tenant.key)

    def process(body: dict[str, Any]) -> Answer:
        if body["phase"] == "shard" and (body["level"], body["shard"]) == (0, 1):
            return 500, b"the index is locked"
        return 200, {"result": 1} if body["phase"] == "shard" else {}

    with running_processor(process) as (url, _):
        spec = {
            "name": "reindex",
            "processor": {"http": {"url": url, "headers": {"Authorization": "Bearer s3cret", "X-Team": "search"}}},
            "data": [[1, 2, 3], [4]],
            "sharding": {"min_items_per_shard": 1, "max_items_per_shard": 1, "max_shards": 10},
        }
        status, job = call("POST", "/v1/jobs", spec)
        assert status == 201, job
        failed = eventually(lambda: (j := call("GET", f"/v1/jobs/{job['id']}")[1])["status"] == "failed" and j)
    sign_in(page, tenant.key)
    page.goto(f"/console/#/jobs/{job['id']}")
    expect(page.get_by_test_id("job-status")).to_have_text("failed")
    said = "shard 1 of level 0 failed on attempt 3 of 3: the processor answered HTTP 500: the index is locked"
    assert failed["error"] == said
    expect(page.get_by_test_id("job-error")).to_contain_text(said)
    failure = page.get_by_test_id("job-failure")
    expect(failure.get_by_test_id("failure-step")).to_have_text("shard 1 of level 0")
    expect(failure.get_by_test_id("failure-attempt")).to_have_text("3")
    expect(failure.get_by_test_id("failure-status")).to_have_text("500")
    expect(failure.get_by_test_id("failure-answer")).to_have_text("the index is locked")
    expect(page.get_by_test_id("progress")).to_have_text("2/4 shards, 50%")
    steps = page.get_by_test_id("job-steps")
    pre = steps.get_by_test_id("step-pre").locator("td")
    expect(pre.nth(1)).to_have_text(shown(failed["pre"]["started_at"]))
    expect(pre.nth(2)).to_have_text(shown(failed["pre"]["finished_at"]))
    level_0 = steps.get_by_test_id("step-level-0").locator("td")
    expect(level_0.nth(1)).to_have_text(shown(failed["pre"]["finished_at"]))  # it began when pre ended
    expect(level_0.nth(2)).to_have_text("—")  # it never ended
    expect(steps.get_by_test_id("step-level-0").get_by_test_id("level-shards")).to_have_text("2/3")
    expect(steps.get_by_test_id("step-level-1").get_by_test_id("level-shards")).to_have_text("0/1")
    expect(steps.get_by_test_id("step-level-1").locator("td").nth(1)).to_have_text("—")  # never began
    expect(steps.get_by_test_id("step-post").locator("td").nth(1)).to_have_text("—")
    processor = page.get_by_test_id("job-processor")
    expect(processor).to_contain_text("Authorization: [redacted]")
    expect(processor).to_contain_text("X-Team: search")
    expect(processor).not_to_contain_text("s3cret")
    shoot(page, "job-failed", docs=True)


def test_a_failed_jobs_page_says_what_a_kit_processor_raised(page, sundial, new_tenant) -> None:
    """A processor built with the receiver kit whose shard method raises ``KeyError('user_id')``:
    the kit answers 500 with the exception's type and message, Sundial retries the shard, and the
    job's page (and the list) say ``KeyError: 'user_id'`` rather than only that it failed."""
    from sundial_receiver import JobContext, JobProcessorReceiver, ShardingProcessor

    class Users(ShardingProcessor):
        def sharding_process(self, ctx: JobContext) -> Any:
            return [item["user_id"] for item in ctx.items or []]

    receiver = JobProcessorReceiver(None, Users())

    def process(body: dict[str, Any]) -> Answer:  # what the kit answers once it has verified a call
        answer = receiver.serve(JobContext.from_dict(body))
        return answer.status, answer.content()

    tenant = new_tenant("jobkit")
    call = as_tenant(sundial, tenant.key)
    with running_processor(process) as (url, seen):
        status, job = call(
            "POST", "/v1/jobs", {"name": "users", "processor": {"http": {"url": url}}, "data": [[{"name": "a"}]]}
        )
        assert status == 201, job
        failed = eventually(lambda: (j := call("GET", f"/v1/jobs/{job['id']}")[1])["status"] == "failed" and j)
    assert [body["phase"] for _, body in seen] == ["pre", "shard", "shard", "shard"]  # a 500: retried
    said = "shard 0 of level 0 failed on attempt 3 of 3: KeyError: 'user_id' (the processor answered HTTP 500)"
    assert failed["error"] == said
    assert failed["failure"]["error"] == {"type": "KeyError", "message": "'user_id'"}
    sign_in(page, tenant.key)
    page.goto(f"/console/#/jobs/{job['id']}")
    expect(page.get_by_test_id("job-error")).to_contain_text(said)
    failure = page.get_by_test_id("job-failure")
    expect(failure.get_by_test_id("failure-error")).to_have_text("KeyError: 'user_id'")
    expect(failure.get_by_test_id("failure-status")).to_have_text("500")
    nav(page, "Jobs")
    expect(page.get_by_test_id("jobs").locator("tbody tr").get_by_test_id("job-list-error")).to_contain_text(
        "KeyError: 'user_id'"
    )


def test_a_job_whose_pre_failed_says_so_rather_than_an_empty_count(page, sundial, new_tenant) -> None:
    tenant = new_tenant("jobpre")
    call = as_tenant(sundial, tenant.key)
    with running_processor(lambda body: (400, {"error": "no such bucket"})) as (url, _):
        status, job = call("POST", "/v1/jobs", {"name": "import", "processor": {"http": {"url": url}}, "data": [[1]]})
        assert status == 201, job
        eventually(lambda: call("GET", f"/v1/jobs/{job['id']}")[1]["status"] == "failed", what="the job failed")
    sign_in(page, tenant.key)
    page.goto(f"/console/#/jobs/{job['id']}")
    expect(page.get_by_test_id("job-error")).to_contain_text(
        'the pre step failed on attempt 1: the processor answered HTTP 400: {"error": "no such bucket"}'
    )
    expect(page.get_by_test_id("progress")).to_have_text("pre planned no shards")
    expect(page.get_by_text("0/ shards")).to_have_count(0)
    expect(page.get_by_test_id("job-failure").get_by_test_id("failure-step")).to_have_text("the pre step")
    nav(page, "Jobs")
    page.get_by_label("Status").select_option("failed")
    row = page.get_by_test_id("jobs").locator("tbody tr")
    expect(row).to_have_count(1)
    expect(row.get_by_test_id("job-list-error")).to_contain_text("the pre step failed on attempt 1")


def test_a_command_sent_from_a_running_jobs_page_reaches_its_processors_next_report(page, sundial, new_tenant) -> None:
    """The job page's form sends a command; the shard's next progress report is answered with it
    (once), and a body the API refuses is shown with the field it names."""
    tenant = new_tenant("jobcommand")
    call = as_tenant(sundial, tenant.key)
    reported, go = threading.Event(), threading.Event()
    answers: list[Any] = []

    def process(body: dict[str, Any]) -> Answer:
        if body["phase"] != "shard":
            return 200, {}
        progress = body["progress"]
        path = progress["url"].split("://", 1)[1].split("/", 1)[1]
        reported.set()
        go.wait(timeout=25)
        token = {"Authorization": f"Bearer {progress['token']}"}
        answers.append(sundial.call("POST", f"/{path}", {"done_items": 1}, token))
        return 200, {"result": 1}

    with running_processor(process) as (url, _):
        job = _held_job(call, url, "console-command", 1)
        try:
            eventually(reported.is_set, what="the shard call")
            sign_in(page, tenant.key)
            page.goto(f"/console/#/jobs/{job['id']}")
            expect(page.get_by_test_id("job-status")).to_have_text("running")
            form = page.get_by_role("form", name="Send a command")
            form.get_by_label("Command").fill("rate")
            form.get_by_label("Args (JSON object)").fill("[1]")
            form.get_by_role("button", name="Send").click()
            expect(form.get_by_role("alert")).to_contain_text("args")  # not an object: the API's 400
            form.get_by_label("Args (JSON object)").fill('{"per_second": 5}')
            form.get_by_role("button", name="Send").click()
            expect(page.get_by_test_id("command-sent")).to_contain_text("Sent rate")
        finally:
            go.set()
        eventually(lambda: len(answers) == 1, what="the report")
    ((status, answer),) = answers
    assert status == 202
    assert [(c["command"], c["args"]) for c in answer["commands"]] == [("rate", {"per_second": 5})]
