"""A job in the console: its progress while a shard is still at work, then its result; a running
job cancelled from its page, and a cancel the API refuses (its post has begun) shown as refused."""

from __future__ import annotations

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
            assert rows.first.get_by_role("progressbar").get_attribute("value") == "75"
            shoot(page, "jobs")
            rows.first.get_by_role("link", name="console-sum").click()
            expect(page.get_by_test_id("job-status")).to_have_text("running")
        finally:
            release.set()
        # the job page refreshes itself until the job is done
        expect(page.get_by_test_id("job-status")).to_have_text("succeeded", timeout=20_000)
        expect(page.get_by_test_id("progress")).to_have_text("4/4 shards, 100%")
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
        time.sleep(1)  # the shards under way answer: the job stays cancelled, post is never called
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
